"""The rewrite of our StableHLO for IREE's ``stablehlo`` input
(``engines/stablehlo/iree_compat.py``): each refused op form becomes the
``tensor``/``linalg`` form, the module then compiles once under ``iree-compile``
and matches NumPy at several sizes. Skips where IREE's wheels are missing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("iree.compiler", reason="IREE's compiler wheel (the peers extra: make setup)")
pytest.importorskip("iree.runtime", reason="IREE's runtime wheel (the peers extra: make setup)")

from engines.stablehlo.iree_compat import IreeCompatError, rewrite

#: the seed program (gnn_edge_divide: d / c[:, None]) as our lowering writes it, unbounded
SEED = """module @dynshape {
  func.func public @main(%arg0: tensor<?x8xf32>, %arg1: tensor<?xf32>) -> tensor<?x8xf32> {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x8xf32>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.reshape %c : (tensor<i32>) -> tensor<1xi32>
    %3 = stablehlo.concatenate %1, %2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %4 = stablehlo.dynamic_reshape %arg1, %3 : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %5 = stablehlo.reshape %c_0 : (tensor<i32>) -> tensor<1xi32>
    %6 = stablehlo.concatenate %1, %5, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %7 = stablehlo.dynamic_broadcast_in_dim %4, %6, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x8xf32>
    %8 = stablehlo.divide %arg0, %7 : tensor<?x8xf32>
    return %8 : tensor<?x8xf32>
  }
}"""

#: the same, bounded (as ``lower(ep, bounded=True)`` writes it)
SEED_BOUNDED = (
    SEED.replace("tensor<?x8xf32>", "tensor<?x8xf32, #stablehlo.bounds<2048, ?>>")
    .replace("tensor<?xf32>", "tensor<?xf32, #stablehlo.bounds<2048>>")
    .replace("tensor<?x1xf32>", "tensor<?x1xf32, #stablehlo.bounds<2048, ?>>")
)

#: a broadcast that permutes (dims = [1, 0]) and expands a static 1, then a transposed reshape
PERMUTED = """module @dynshape {
  func.func public @main(%arg0: tensor<3x?xf32>, %arg1: tensor<?x3x2xf32>) -> tensor<?x3x2xf32> {
    %n = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<3x?xf32>) -> tensor<i32>
    %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
    %one = stablehlo.constant dense<[1]> : tensor<1xi32>
    %three = stablehlo.constant dense<[3]> : tensor<1xi32>
    %two = stablehlo.constant dense<[2]> : tensor<1xi32>
    %s = stablehlo.concatenate %one, %three, %n1, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %r = stablehlo.dynamic_reshape %arg0, %s : (tensor<3x?xf32>, tensor<3xi32>) -> tensor<1x3x?xf32>
    %o = stablehlo.concatenate %n1, %three, %two, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %b = stablehlo.dynamic_broadcast_in_dim %r, %o, dims = [2, 1, 0] : (tensor<1x3x?xf32>, tensor<3xi32>) -> tensor<?x3x2xf32>
    %y = stablehlo.add %b, %arg1 : tensor<?x3x2xf32>
    return %y : tensor<?x3x2xf32>
  }
}"""

#: F.pad by a width that is a dynamic size: dynamic_pad with operand widths
PAD = """module @dynshape {
  func.func public @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %n = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
    %z1 = stablehlo.constant dense<[0]> : tensor<1xi32>
    %two = stablehlo.constant dense<[2]> : tensor<1xi32>
    %lo = stablehlo.concatenate %two, %z1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %hi = stablehlo.concatenate %n1, %z1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %in = stablehlo.constant dense<0> : tensor<2xi32>
    %v = stablehlo.constant dense<-1.0> : tensor<f32>
    %p = stablehlo.dynamic_pad %arg0, %v, %lo, %hi, %in : (tensor<?x4xf32>, tensor<f32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x4xf32>
    return %p : tensor<?x4xf32>
  }
}"""


def _run(text: str, *calls):
    """Compile ``text`` once (our rewrite first) and run it on each argument list of ``calls``."""
    import iree.runtime as rt

    from engines.stablehlo.execution.iree_executor import compile_module

    vmfb = compile_module(text, hints="#stablehlo.bounds" in text)
    ctx = rt.SystemContext(config=rt.Config("local-task"))
    vm = rt.VmModule.copy_buffer(ctx.instance, vmfb)
    ctx.add_vm_module(vm)
    main = ctx.modules[vm.name]["main"]
    return [np.asarray(main(*args).to_host()) for args in calls]


def _seed_calls():
    rng = np.random.default_rng(0)
    return [(rng.random((e, 8), dtype=np.float32), rng.uniform(0.5, 1.5, e).astype(np.float32)) for e in (7, 1000, 1013, 1049)]


def test_the_refused_forms_become_tensor_and_linalg_ops():
    out = rewrite(SEED)
    assert "stablehlo.dynamic_reshape" not in out and "stablehlo.dynamic_broadcast_in_dim" not in out
    assert "tensor.reshape %arg1" in out
    # the expanding static 1 is collapsed away, then broadcast over the result's `?` size
    assert "tensor.collapse_shape" in out and "tensor.empty(" in out
    assert "linalg.broadcast" in out and "dimensions = [1]" in out
    assert "stablehlo.divide" in out  # everything IREE takes stays StableHLO


def test_the_seed_compiles_once_and_matches_numpy_at_every_size():
    """The refusal this rewrite removes (tests/test_peers.py pins it on the raw module)."""
    calls = _seed_calls()
    for (d, c), got in zip(calls, _run(SEED, *calls), strict=True):
        np.testing.assert_allclose(got, d / c[:, None], rtol=1e-6)


def test_a_permuting_expanding_broadcast_matches_numpy():
    out = rewrite(PERMUTED)
    assert "stablehlo.transpose" in out and "linalg.broadcast" in out
    rng = np.random.default_rng(1)
    calls = []
    for n in (1, 5, 17):
        calls.append((rng.random((3, n), dtype=np.float32), rng.random((n, 3, 2), dtype=np.float32)))
    for (a, b), got in zip(calls, _run(PERMUTED, *calls), strict=True):
        want = np.broadcast_to(a.reshape(1, 3, n := a.shape[1]).transpose(2, 1, 0), (n, 3, 2)) + b
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_dynamic_pad_becomes_tensor_pad_and_matches_numpy():
    out = rewrite(PAD)
    assert "stablehlo.dynamic_pad" not in out and "tensor.pad" in out
    calls = [(np.arange(4 * n, dtype=np.float32).reshape(n, 4),) for n in (1, 3, 9)]
    for (a,), got in zip(calls, _run(PAD, *calls), strict=True):
        np.testing.assert_array_equal(got, np.pad(a, ((2, a.shape[0]), (0, 0)), constant_values=-1.0))


def test_interior_padding_is_refused_naming_the_op():
    text = PAD.replace("%in = stablehlo.constant dense<0>", "%in = stablehlo.constant dense<1>")
    with pytest.raises(IreeCompatError, match=r"stablehlo\.dynamic_pad with interior padding"):
        rewrite(text)


def test_bounds_are_dropped_or_given_as_range_hints():
    plain = rewrite(SEED_BOUNDED)
    assert "#stablehlo.bounds" not in plain and "util.assume.int" not in plain
    hinted = rewrite(SEED_BOUNDED, hints=True)
    assert "#stablehlo.bounds" not in hinted
    assert hinted.count("umax = 2048") == 2  # one per argument's `?` dim
    assert "flow.tensor.tie_shape %arg0" in hinted and "flow.tensor.tie_shape %arg1" in hinted
    calls = _seed_calls()
    for (d, c), got in zip(calls, _run(SEED_BOUNDED, *calls), strict=True):
        np.testing.assert_allclose(got, d / c[:, None], rtol=1e-6)


def test_scatters_into_equal_dynamic_splats_get_a_splat_each():
    """IREE 3.13 merges equal `?` splats and scatters into the merged buffer in place
    (tests/test_iree_causes.py pins the wrong result): each scatter gets its own splat,
    its sizes behind barriers, and the two scatter-adds then match NumPy."""
    from pathlib import Path

    from iree.compiler import ir

    from engines.stablehlo.iree_compat import shared_scatter_inits

    text = (Path(__file__).parent / "fixtures_two_scatters.mlir").read_text()
    out = rewrite(text)
    assert out.count("util.optimization_barrier") == 2  # one size (n) per scatter
    with ir.Context():
        assert shared_scatter_inits(ir.Module.parse(out), ir) is None
    rng = np.random.default_rng(0)
    calls = []
    for n, e in ((24, 60), (40, 150)):
        calls.append(
            (rng.standard_normal((e, 4)).astype(np.float32), rng.integers(0, n, e).astype(np.int64), np.zeros((n, 4), np.float32))
        )
    for (x, idx, y), got in zip(calls, _run(text, *calls), strict=True):
        a = np.zeros(y.shape)
        np.add.at(a, idx, x)
        np.testing.assert_allclose(got, 3 * a, rtol=1e-5, atol=1e-5)  # a + 2a, not 2a + 4a


def test_a_convolution_over_dynamic_spatial_dims_becomes_a_named_linalg_conv():
    """Upstream's linalg patterns refuse `?` spatial result dims: our rewrite pads with
    stablehlo.pad, sizes the result at run time and runs linalg.conv_{1d,2d}_*; one
    compile serves every batch and length, equal to torch."""
    import torch

    from backends.torch_export import export
    from engines.stablehlo import lower

    torch.manual_seed(0)
    c1, c2 = torch.nn.Conv1d(3, 8, 5, stride=2, padding=1), torch.nn.Conv2d(3, 4, 3, padding=1, dilation=2)

    def program(x, y):
        return c1(x).sum(dim=1), c2(y)

    b, t, h = torch.export.Dim("b", min=2), torch.export.Dim("t", min=8), torch.export.Dim("h", min=6)
    ep = export(program, [torch.randn(2, 3, 20), torch.randn(2, 3, 9, 9)], ({0: b, 2: t}, {0: b, 2: h, 3: h}), "conv")
    text = lower(ep)
    out = rewrite(text)
    assert "stablehlo.convolution" not in out
    assert "linalg.conv_1d_ncw_fcw" in out and "linalg.conv_2d_nchw_fchw" in out
    import iree.runtime as rt

    from engines.stablehlo.execution.iree_executor import compile_module

    ctx = rt.SystemContext(config=rt.Config("local-task"))
    vm = rt.VmModule.copy_buffer(ctx.instance, compile_module(text))
    ctx.add_vm_module(vm)
    main = ctx.modules[vm.name]["main"]
    for n, length, side in ((2, 20, 9), (3, 33, 14), (5, 9, 6)):
        x, y = torch.randn(n, 3, length), torch.randn(n, 3, side, side)
        got = main(x.numpy(), y.numpy())
        with torch.no_grad():
            want = program(x, y)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g.to_host()), w.numpy(), rtol=1e-4, atol=1e-5)


def test_a_grouped_convolution_becomes_conv_2d_ngchw_gfchw():
    """Grouped and depthwise convolutions (MobileNet, ConvNeXt, wav2vec2's positional conv)
    with `?` dims: reshaped to (N, G, C, ...) and run by linalg.conv_2d_ngchw_gfchw (a 1-d
    one with a unit height), equal to torch at every size from one compile."""
    import iree.runtime as rt
    import torch

    from backends.torch_export import export
    from engines.stablehlo import lower
    from engines.stablehlo.execution.iree_executor import compile_module

    torch.manual_seed(0)
    c1, c2 = torch.nn.Conv1d(8, 8, 5, padding=2, groups=4), torch.nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6)

    def program(x, y):
        return c1(x), c2(y)

    b, t, h = torch.export.Dim("b", min=2), torch.export.Dim("t", min=8), torch.export.Dim("h", min=4)
    text = lower(export(program, [torch.randn(2, 8, 20), torch.randn(2, 6, 9, 9)], ({0: b, 2: t}, {0: b, 2: h, 3: h}), "g"))
    assert rewrite(text).count("linalg.conv_2d_ngchw_gfchw") == 2
    ctx = rt.SystemContext(config=rt.Config("local-task"))
    vm = rt.VmModule.copy_buffer(ctx.instance, compile_module(text))
    ctx.add_vm_module(vm)
    main = ctx.modules[vm.name]["main"]
    for n, length, side in ((2, 20, 9), (3, 33, 12), (5, 9, 5)):
        x, y = torch.randn(n, 8, length), torch.randn(n, 6, side, side)
        with torch.no_grad():
            want = program(x, y)
        for g, w in zip(main(x.numpy(), y.numpy()), want, strict=True):
            np.testing.assert_allclose(np.asarray(g.to_host()), w.numpy(), rtol=1e-4, atol=1e-5)


def test_two_sorts_of_equal_dynamic_iotas_get_an_iota_each():
    """Two topks of the same `?` shape (Llama-4's routers in consecutive layers): each sort
    takes an iota as its indices operand; IREE 3.13 merges the equal iotas and sorts the one
    buffer in place, so the second topk's indices came out permuted by the first sort. Each
    sort now gets an iota of its own, its shape behind a barrier; the indices match NumPy."""
    import torch
    from torch.export import Dim, export

    from engines.stablehlo import lower

    class TwoTopk(torch.nn.Module):
        def forward(self, x, y):
            return torch.topk(y, 2, 1)[1] * 10 + torch.topk(x, 2, 1)[1]

    n = Dim("n", min=2)
    ep = export(TwoTopk(), (torch.randn(10, 4), torch.randn(10, 4)), dynamic_shapes=({0: n}, {0: n}))
    text = lower(ep, bounded=False)
    assert text.count("stablehlo.dynamic_iota") == 2
    rng = np.random.default_rng(0)
    calls = [(rng.standard_normal((r, 4)).astype(np.float32), rng.standard_normal((r, 4)).astype(np.float32)) for r in (10, 37)]
    for (x, y), got in zip(calls, _run(text, *calls), strict=True):
        top = lambda a: np.argsort(-a, axis=1, kind="stable")[:, :2]  # noqa: E731
        np.testing.assert_array_equal(got, top(y) * 10 + top(x))
    assert rewrite(text).count("util.optimization_barrier") == 2  # one per sort
