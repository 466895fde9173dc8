"""``aten::as_strided`` with symbolic sizes and strides: a view of the input's
storage lowers as a reshape (contiguous strides: ConvNeXt's layer norm over
channels) or a gather (windows, steps, transposed storage), bounded and
unbounded, torch's values at every size; an input whose storage is no dense
permutation of it (an expanded one) is refused naming the op."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import LoweringError, XlaExecutor, lower

SIZES = (3, 7, 16)

#: name -> fn of x (shape (n, 4)); each calls as_strided with sizes/strides from x's sizes
PROGRAMS = {
    # ConvNeXt's LayerNorm2d: (B, C, 1, 1) with channels-last strides after a mean
    "convnext_mean": lambda x: torch.as_strided(
        x.mean(1, keepdim=True)[:, :, None, None].expand(-1, 4, 1, 1) * 1.0, (x.shape[0], 4, 1, 1), (4, 1, 4, 4)
    ),
    "same_view": lambda x: torch.as_strided(x * 2, (x.shape[0] * 2, 2), (2, 1)),
    "windows": lambda x: torch.as_strided(x * 2, (x.shape[0] - 1, 8), (4, 1)),
    "steps": lambda x: torch.as_strided(x + 1, (x.shape[0], 2), (4, 2), 1),
    "transposed": lambda x: torch.as_strided((x + 1).t(), (4, x.shape[0]), (1, 4)),
}


#: a program whose size is n - 1 exports only from n = 3: torch.export specialises a size of 1
MIN_N = {"windows": 3}


def _export(fn, lo=2):
    n = Dim("n", min=lo, max=32)
    return torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(5, 4),), dynamic_shapes={"xs": ({0: n},)})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_as_strided_lowers_as_torchs_view(name):
    fn = PROGRAMS[name]
    ep = _export(fn, MIN_N.get(name, 2))
    ops = {str(n.target) for n in ep.run_decompositions().graph.nodes}
    assert "aten.as_strided.default" in ops, ops  # the op under test survives decomposition
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for n in (n for n in SIZES if n >= MIN_N.get(name, 2)):
            x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
            want = fn(torch.from_numpy(x)).numpy()
            (got,) = ex.run(text, [x])
            assert got.shape == want.shape, (name, bounded, n)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name} bounded={bounded} n={n}")
        if bounded:
            assert ex.compile_count() == 1


def test_as_strided_of_an_expanded_input_is_refused_by_name():
    def fn(x):
        return torch.as_strided(x[:1].expand(x.shape[0], 4), (x.shape[0], 4), (4, 1))

    with pytest.raises(LoweringError, match=r"aten::as_strided of an input with sizes .* strides .*dense permutation"):
        lower(_export(fn))


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "unbounded"])
def test_as_strided_copy_reads_the_requested_strides_not_its_results(bounded):
    """``as_strided_copy``'s result is a fresh contiguous tensor: the view is the one its
    stride and offset arguments ask for (transposed here), not its result's strides."""

    def fn(x):
        return torch.ops.aten.as_strided_copy(x + 1, (x.shape[0] - 1, 2), (1, x.shape[0]), 1)

    n = Dim("n", min=3, max=32)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(5, 5),), dynamic_shapes={"xs": ({0: n, 1: n},)})
    assert "aten.as_strided_copy.default" in {str(n.target) for n in ep.run_decompositions().graph.nodes}
    text = lower(ep, bounded=bounded)
    ex = XlaExecutor()
    for k in (3, 5, 9):
        x = np.random.default_rng(k).standard_normal((k, k)).astype(np.float32)
        (got,) = ex.run(text, [x])
        np.testing.assert_allclose(got, fn(torch.from_numpy(x)).numpy(), rtol=1e-6, err_msg=f"n={k}")
