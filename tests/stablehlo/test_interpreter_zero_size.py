"""Zero-size dims on the reference interpreter, generated over op families
(dot_general, a batched contraction, reductions, convolution): each runs equal to
torch at size 0, or -- a contraction over a zero-size dim, on which jaxlib's
interpreter aborts the process -- is refused before running with an
InterpreterLimitation naming the op, the worker process never dying."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx.experimental._config as fx_config
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import InterpreterExecutor, InterpreterLimitation, lower

W = torch.randn(4, 3, 3, 3)

#: name -> (program of x, sample shape; dim 0 is dynamic and runs at 0, whether it is contracted)
PROGRAMS = {
    "dot_contract": (lambda x: x.T @ x, (5, 3), True),
    "dot_rows": (lambda x: x @ x.T, (5, 3), False),
    "bmm_contract": (lambda x: torch.bmm(x.permute(1, 2, 0), x.permute(1, 0, 2)), (5, 2, 3), True),
    "sum": (lambda x: x.sum(0), (5, 3), False),
    "prod": (lambda x: x.prod(0), (5, 3), False),
    "mean_rows": (lambda x: x.mean(1), (5, 3), False),
    "conv_batch": (lambda x: torch.nn.functional.conv2d(x, W), (2, 3, 6, 6), False),
}


@pytest.fixture(scope="module")
def interp():
    ex = InterpreterExecutor(isolated=True)
    yield ex
    ex.close()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_zero_size_runs_or_is_refused_before_running(name, interp):
    fn, shape, contracts = PROGRAMS[name]
    with fx_config.patch(backed_size_oblivious=True):
        ep = torch.export.export(
            Fn(lambda _, x: fn(x)), (torch.randn(*shape),), dynamic_shapes={"xs": ({0: Dim("n", min=0, max=64)},)}
        )
    text = lower(ep, bounded=False)
    x = np.ones((0,) + shape[1:], np.float32)
    interp.run(text, [np.ones(shape, np.float32)])  # the worker is up
    starts = interp.worker.starts
    if contracts:
        with pytest.raises(InterpreterLimitation, match=r"dot_general contracts a zero-size dim.*\(argument shapes \(0, "):
            interp.run(text, [x])
    else:
        want = fn(torch.from_numpy(x)).numpy()
        got = interp.run(text, [x])[0]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert interp.worker.starts == starts, "the interpreter worker died (an abort, not an up-front refusal)"
    # and the same module still runs at a nonzero size on the same worker
    y = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(interp.run(text, [y])[0], fn(torch.from_numpy(y)).numpy(), rtol=1e-5, atol=1e-5)
    assert interp.worker.starts == starts


#: programs whose result size is data-dependent (a boolean mask's count, set on the
#: device): name -> (program of x, sample shape)
MASKS = {
    "mask_rows": (lambda x: x[x[:, 0] > 0], (6, 3)),
    "mask_elements": (lambda x: x[x > 0], (6, 3)),
    "masked_columns": (lambda x: x[:, x[0] > 0], (3, 6)),
}


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "unbounded"])
@pytest.mark.parametrize("name", sorted(MASKS))
def test_a_size_set_on_the_device_is_refused_before_running(name, bounded, interp):
    """eval_module aborts the process on a dynamic result type ("dynamic result types
    are not supported"): the interpreter refuses the module first, naming the op."""
    fn, shape = MASKS[name]
    x = torch.randn(*shape)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (x,), dynamic_shapes={"xs": ({0: Dim("n", min=2, max=64)},)})
    text = lower(ep, bounded=bounded)
    assert "stablehlo.set_dimension_size" in text
    interp.run(*_any_runnable())  # the worker is up
    starts = interp.worker.starts
    with pytest.raises(
        InterpreterLimitation, match=r"stablehlo\.set_dimension_size has a dynamic result .*refused before running"
    ):
        interp.run(text, [x.numpy()])
    assert interp.worker.starts == starts, "the interpreter worker died (an abort, not an up-front refusal)"


def _any_runnable():
    fn, shape, _ = PROGRAMS["sum"]
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(*shape),), dynamic_shapes={"xs": ({0: Dim("n", max=64)},)})
    return lower(ep, bounded=False), [np.ones(shape, np.float32)]
