"""torch-mlir's StableHLO, rewritten by ``engines.stablehlo.shape_dialect``, on our XLA executor.

The programs are the op-sample table's (``conformance/op_samples``): each
is exported once, lowered by torch-mlir, rewritten, and run as one XLA
program at every size of its sweep against torch eager. What torch-mlir gets
wrong is pinned here as a finding: a rewrite of ours that broke a module would
show as a new failure, a torch-mlir release that fixes one as a pass.
"""

import re
import warnings

import numpy as np
import pytest

pytest.importorskip("torch_mlir", reason="torch-mlir is not installed (the `peers` extra: make setup)")

from backends.torch_mlir_stablehlo import lower_with_torch_mlir
from benchmarks.scripts import lowerings
from conformance.op_samples import BY_NAME

#: torch-mlir 20261001's wrong results, each a finding (docs/findings/2026-12-02-peers.md)
WRONG = {
    # x[:-1] of a size-1 dim: its end-index normalisation turns an end of 0 into the whole dim
    "slice": "wrong shape at n=1: (1, 2) != (0, 2)",
    # max_pool2d(x, 2, return_indices=True) with a dynamic side runs at stride 1
    "pools": "wrong shape at n=1: (2, 3, 3, 5) != (2, 3, 2, 3)",
}
#: programs across the constructs our rewrite handles: tensor.dim/from_elements, shape.broadcast
#: and assuming, num_elements, cmpi/select (slice bounds), index constants, dense_resource weights
PROGRAMS_USED = ("add_sub_mul_div", "broadcast_binary", "view_arith", "select", "slice", "cat", "conv1d", "embedding", "pools")


def _program(name):
    return BY_NAME[name]


@pytest.mark.parametrize("name", PROGRAMS_USED)
def test_torch_mlir_module_runs_on_xla_as_eager_does(name):
    p = _program(name)
    warnings.filterwarnings("ignore", category=FutureWarning)
    target = lowerings.test_target(p)
    text = lower_with_torch_mlir(target.export(False))
    # pure StableHLO with `?` dims: no shape/tensor/arith op and no resource blob left
    assert not re.search(r"\b(shape|tensor|arith)\.[a-z_]+", text), text
    assert "dense_resource" not in text and lowerings._signature(text)[0]
    assert lowerings._run((text, [], False), target) == WRONG.get(name, "match")


def test_one_xla_compile_per_shape_of_the_seed_program():
    import torch
    from torch.export import Dim

    from engines.stablehlo import Module, XlaProgram
    from engines.stablehlo.execution.executors import to_host
    from engines.stablehlo.execution.xla import XlaStats

    class Seed(torch.nn.Module):
        def forward(self, d, c):
            return (d / c[:, None]).repeat(2, 1)

    e = Dim("e", min=2, max=4096)
    ep = torch.export.export(Seed(), (torch.randn(7, 8), torch.rand(7) + 1), dynamic_shapes=({0: e}, {0: e}))
    text = lower_with_torch_mlir(ep)
    assert "tensor<?x8xf32>" in text
    stats = XlaStats()
    prog = XlaProgram(Module(text, "seed", ["d", "c"]), stats=stats)
    rng = np.random.default_rng(0)
    for i, n in enumerate((7, 1000, 1001, 7)):
        d, c = rng.standard_normal((n, 8)).astype(np.float32), (rng.random(n) + 1).astype(np.float32)
        got = np.asarray(to_host(prog(*prog.convert([d, c]))[0]))
        np.testing.assert_allclose(got, np.tile(d / c[:, None], (2, 1)), rtol=1e-6)
        assert stats.compiles == min(i + 1, 3)  # a compile per new concrete shape, none for a seen one


def test_an_op_it_cannot_rewrite_is_named():
    from torch_mlir import ir

    from engines.stablehlo.shape_dialect import ShapeDialectError, legalize

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(
            'func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> { %0 = "foo.mystery"(%a) : (tensor<?xf32>) -> index\n'
            "  return %a : tensor<?xf32> }"
        )
        with pytest.raises(ShapeDialectError, match=r"no StableHLO form for foo\.mystery"):
            legalize(module, ir)


def test_its_compiler_error_is_caught_by_type_and_named(monkeypatch):
    """torch-mlir's own compiler error is a refusal of its lowering (caught by its class, not
    by its name): the line naming the failed pass first, the message whole, stage lowering."""
    from torch_mlir.compiler_utils import TorchMlirCompilerError

    from backends import torch_mlir_stablehlo as tm
    from backends.base import Unsupported, failed_stage

    def fails(ep):
        raise TorchMlirCompilerError("Lowering failed\n<stdin>:3:5: error: failed to legalize operation 'torch.aten.x'\nmore")

    monkeypatch.setattr(tm, "lower_with_torch_mlir", fails)
    program = object.__new__(tm.TorchMlirProgram)
    with pytest.raises(Unsupported) as e:
        program.stablehlo(None)
    text = str(e.value)
    assert text.startswith("torch-mlir lowering: <stdin>:3:5: error: failed to legalize") and text.endswith("more")
    assert failed_stage(e.value) == "lowering"

    class Other(Exception):  # any other exception is not torch-mlir's refusal: it propagates
        pass

    monkeypatch.setattr(tm, "lower_with_torch_mlir", lambda ep: (_ for _ in ()).throw(Other("x")))
    with pytest.raises(Other):
        program.stablehlo(None)
