"""The compile-once executors: bounded modules through XLA's dynamic padder, `?`
modules per power-of-two bucket, and what happens where the padder cannot help."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.op_samples import BY_NAME, SAMPLES
from engines.sizes import buckets
from engines.stablehlo import (
    BoundedXlaProgram,
    BucketedXlaProgram,
    ExecutionError,
    Module,
    PadderUnsupported,
    XlaExecutor,
    execute,
)
from engines.stablehlo.execution.padder_rewrite import bound_entry
from tests.op_samples.runs import check as _check
from tests.op_samples.runs import lowered

#: the op samples the table marks ``bounded_once``: every bounded one, and the unbounded ones
#: whose rewrites differ (conformance/op_samples/lowering.py's BOUNDED_ONCE); every sample
#: runs on both executors in tests/op_samples/test_lowered.py
CHECKED = [s for s in SAMPLES if s.lowered is not None and s.lowered.bounded_once]


@pytest.mark.parametrize("case", CHECKED, ids=[c.name for c in CHECKED])
def test_per_op_cases_compile_once_padding_masked(case):
    """Every size of a per-op case from one executable per bucket of its
    unbounded dims (one in all where every dim is bounded), padding filled with
    NaN: any value the padder fails to mask shows up in the result."""
    text, _ = lowered(case)
    module = Module(text, case.name)
    kinds = {
        "bounded" if b is not None and b[d] is not None else "unbounded"
        for shape, _, b in module.inputs
        for d, s in enumerate(shape)
        if s is None
    }
    cls = BoundedXlaProgram if kinds == {"bounded"} else BucketedXlaProgram
    compiles = []
    prog = cls(module, on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    for n in case.sizes:
        args = case.inputs(n)
        _check(prog(*prog.convert(args)), case.expected(args), case, f"{case.name} {cls.__name__} n={n}")
    assert prog.how == ("bounded" if cls is BoundedXlaProgram else "bucketed")
    if cls is BoundedXlaProgram:
        assert len(compiles) == 1 and compiles[0].startswith("bounded entry of"), compiles
    else:
        assert 1 <= len(compiles) < len(case.sizes) and all(c.startswith("new bucket") for c in compiles), compiles


SOFTMAX = BY_NAME["softmax"]


def test_bound_error_and_sizes_at_the_bound():
    text, _ = lowered(SOFTMAX)
    ex = XlaExecutor()
    bound = Module(text).inputs[0][2][0]
    for n in (bound, 1, bound - 1):
        args = SOFTMAX.inputs(n)
        _check(ex.run(text, args), SOFTMAX.expected(args), SOFTMAX, f"n={n}")
    assert ex.compile_count() == 1 and ex.stats.cache_hits == 2
    with pytest.raises(ExecutionError, match=f"dim 0 is {bound + 1}, above its bound {bound}"):
        ex.run(text, SOFTMAX.make(bound + 1, np.random.default_rng(0)))
    assert ex.compile_count() == 1


def test_bucketed_unbounded_module_once_per_bucket():
    """A `?` module: sizes 1..16 share bucket 16, 17..32 bucket 32 -- with NaN padding."""
    text, _ = lowered(SOFTMAX)
    from engines.stablehlo.lowering.types import strip_bounds

    text = strip_bounds(text)
    compiles = []
    prog = BucketedXlaProgram(Module(text, "softmax"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    sizes = (1, 16, 17, 5, 32, 30)
    for n in sizes:
        args = SOFTMAX.make(n, np.random.default_rng(n))
        _check(prog(*prog.convert(args)), SOFTMAX.expected(args), SOFTMAX, f"n={n}")
    assert len(compiles) == 2 == len({buckets.bucket(n) for n in sizes}), compiles
    assert "new bucket (16," in compiles[0] and "new bucket (32," in compiles[1]
    before = execute.__globals__["_XLA"].stats.compiles
    execute(text, SOFTMAX.make(3, np.random.default_rng(3)), bucketed=True)
    execute(text, SOFTMAX.make(9, np.random.default_rng(9)), bucketed=True)
    assert execute.__globals__["_XLA"].stats.compiles - before == 1


# A bounded module whose broadcast size comes from data (a tensor argument):
# no bound is derivable for it.
DATA_DEPENDENT = """
func.func public @main(%x: tensor<?xf32, #stablehlo.bounds<8>>, %n: tensor<1xi32>) -> tensor<?xf32, #stablehlo.bounds<8>> {
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %b = stablehlo.dynamic_broadcast_in_dim %c, %n, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32, #stablehlo.bounds<8>>
  %y = stablehlo.add %x, %b : tensor<?xf32, #stablehlo.bounds<8>>
  return %y : tensor<?xf32, #stablehlo.bounds<8>>
}
"""

# A convolution with a bounded kernel size: no static form at the bound (the rewrite refuses it).
CONV = """
func.func public @main(%x: tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 16>>, %w: tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 4>>) -> tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 16>> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 16>>, tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 4>>) -> tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 16>>
  return %y : tensor<1x1x?xf32, #stablehlo.bounds<?, ?, 16>>
}
"""

# An opaque custom call on a bounded operand: XLA's padder refuses it at compile time.
CUSTOM = """
func.func public @main(%x: tensor<?xf32, #stablehlo.bounds<16>>) -> tensor<?xf32, #stablehlo.bounds<16>> {
  %y = stablehlo.custom_call @dynshape_opaque(%x) : (tensor<?xf32, #stablehlo.bounds<16>>) -> tensor<?xf32, #stablehlo.bounds<16>>
  return %y : tensor<?xf32, #stablehlo.bounds<16>>
}
"""


def test_data_dependent_size_fails_naming_op():
    with pytest.raises(PadderUnsupported, match="dynamic_broadcast_in_dim derives from a function argument") as ei:
        bound_entry(DATA_DEPENDENT, "dd")
    assert ei.value.op == "stablehlo.dynamic_broadcast_in_dim"
    with pytest.raises(PadderUnsupported, match="dynamic_broadcast_in_dim"):
        XlaExecutor().run(DATA_DEPENDENT, [np.ones(3, np.float32), np.array([3], np.int32)])


def test_padder_refusal_fails_at_compile_or_falls_back_per_shape_when_asked():
    def args(k):
        return [np.arange(k, dtype=np.float32).reshape(1, 1, k), np.array([1, 2, 3], np.float32).reshape(1, 1, 3)]

    ex = XlaExecutor()
    with pytest.raises(PadderUnsupported, match=r"custom-call dynshape_opaque.*not supported to have a dynamic dimension") as ei:
        ex.run(CUSTOM, [np.ones(5, np.float32)])
    assert ei.value.op == "custom-call dynshape_opaque" and ex.compile_count() == 0
    with pytest.raises(PadderUnsupported, match=r"convolution with a dynamic kernel shape") as ei:
        ex.run(CONV, args(5))
    assert ei.value.op == "stablehlo.convolution" and ex.compile_count() == 0
    reasons = []
    prog = BoundedXlaProgram(Module(CONV, "conv"), on_compile=lambda s, why: reasons.append(why), on_unsupported="per_shape")
    for k in (5, 9, 5):
        x, w = args(k)
        np.testing.assert_array_equal(prog(*prog.convert([x, w]))[0][0, 0], np.convolve(x[0, 0], [3, 2, 1], "valid"))
    assert prog.how.startswith("per_shape: ") and "convolution" in prog.how
    assert len(reasons) == 2 and all(r.startswith("per-shape fallback (") for r in reasons), reasons
    out = execute(CONV, args(7), on_unsupported="per_shape")[0]
    assert out.shape == (1, 1, 5)
    with pytest.raises(ValueError, match="on_unsupported"):
        BoundedXlaProgram(Module(CONV), on_unsupported="silently")


def test_bucket_policy():
    assert [buckets.bucket(n) for n in (0, 1, 16, 17, 1000, 1024, 1025, 2048)] == [16, 16, 16, 32, 1024, 1024, 2048, 2048]
    assert buckets.bucket(3, minimum=1) == 4
    flags = buckets.new_buckets({"e": e} for e in range(1000, 1050))
    assert sum(flags) == 2 and flags[0] == 1 and flags[25] == 1  # E=1025 opens bucket 2048
    with pytest.raises(ValueError):
        buckets.bucket(-1)


# x (n <= 8) padded with 7.0: one before, n after (a size-derived high), then summed
DYNAMIC_PAD = """
func.func public @main(%x: tensor<?xf32, #stablehlo.bounds<8>>) -> (tensor<?xf32, #stablehlo.bounds<17>>, tensor<f32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32, #stablehlo.bounds<8>>) -> tensor<i32>
  %h = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %l = stablehlo.constant dense<1> : tensor<1xi32>
  %i = stablehlo.constant dense<0> : tensor<1xi32>
  %v = stablehlo.constant dense<7.0> : tensor<f32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %y = stablehlo.dynamic_pad %x, %v, %l, %h, %i : (tensor<?xf32, #stablehlo.bounds<8>>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32, #stablehlo.bounds<17>>
  %s = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?xf32, #stablehlo.bounds<17>>, tensor<f32>) -> tensor<f32>
  return %y, %s : tensor<?xf32, #stablehlo.bounds<17>>, tensor<f32>
}
"""


def test_dynamic_pad_with_size_derived_high():
    compiles = []
    prog = BoundedXlaProgram(Module(DYNAMIC_PAD, "pad"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    for n in (1, 8, 3):
        x = np.arange(n, dtype=np.float32) + 1
        y, s = prog(*prog.convert([x]))
        want = np.concatenate([[7.0], x, [7.0] * n])
        np.testing.assert_array_equal(y, want)
        assert float(s) == want.sum()
    assert len(compiles) == 1 and "dynamic_pad x1" in compiles[0]


def test_reduce_with_a_non_identity_init_is_refused():
    """XLA's padder counts the padding as the init value: right for an identity
    init (a sum from 0), wrong for a sum from 7, which is refused by name."""
    from_7 = DYNAMIC_PAD.replace("%s = stablehlo.reduce(%y init: %z)", "%s = stablehlo.reduce(%y init: %v)")
    with pytest.raises(
        PadderUnsupported,
        match=r"stablehlo.reduce over a dynamic dim \(stablehlo.add with init "
        r"dense<7.0+e\+00> : tensor<f32>\)",
    ):
        bound_entry(from_7, "from_7")


# x[:, : x.shape[1] // 2] as jax.export writes it: a dynamic_gather whose slice size is t // 2
SLICE_HALF = """
func.func public @main(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %t = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x?xf32>) -> tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %h = stablehlo.divide %t, %two : tensor<i32>
  %h1 = stablehlo.reshape %h : (tensor<i32>) -> tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %sizes = stablehlo.concatenate %c2, %h1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %i = stablehlo.constant dense<0> : tensor<1xi32>
  %y = "stablehlo.dynamic_gather"(%x, %i, %sizes) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], start_index_map = [1]>, indices_are_sorted = true}> : (tensor<2x?xf32>, tensor<1xi32>, tensor<2xi32>) -> tensor<2x?xf32>
  return %y : tensor<2x?xf32>
}
"""


def test_dynamic_gather_with_size_derived_slice_gathers_the_result_bound():
    """Bucketed, t in bucket 16 bounds the result at 8: the static gather's slice
    size is 8 (the result's bound), not the operand's 16."""
    compiles = []
    prog = BucketedXlaProgram(Module(SLICE_HALF, "slice_half"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    for t in (5, 13, 2, 17):
        x = np.arange(2 * t, dtype=np.float32).reshape(2, t)
        np.testing.assert_array_equal(prog(*prog.convert([x]))[0], x[:, : t // 2])
    assert len(compiles) == 2 and all(c.startswith("new bucket") for c in compiles), compiles


def test_dynamic_pad_whose_low_and_interior_are_concatenated_constants():
    """jax.export writes a pad's low and interior as concatenates of reshaped
    scalar constants: still constant, so the padder serves it."""
    text = DYNAMIC_PAD.replace(
        "  %l = stablehlo.constant dense<1> : tensor<1xi32>\n  %i = stablehlo.constant dense<0> : tensor<1xi32>\n",
        "  %l0 = stablehlo.constant dense<1> : tensor<i32>\n"
        "  %l = stablehlo.reshape %l0 : (tensor<i32>) -> tensor<1xi32>\n"
        "  %i0 = stablehlo.constant dense<0> : tensor<1xi32>\n"
        "  %i = stablehlo.concatenate %i0, dim = 0 : (tensor<1xi32>) -> tensor<1xi32>\n",
    )
    assert "stablehlo.reshape %l0" in text
    prog = BoundedXlaProgram(Module(text, "pad_concat"), pad_value=np.nan)
    for n in (1, 8, 3):
        x = np.arange(n, dtype=np.float32) + 1
        y, _ = prog(*prog.convert([x]))
        np.testing.assert_array_equal(y, np.concatenate([[7.0], x, [7.0] * n]))


def _split_halves(x):
    import torch

    t = x.shape[1]
    first, second = torch.split(x, [t // 2, t - t // 2], dim=1)
    return first.sum(1) - second.sum(1)


def _split_export(retry: bool):
    import torch
    from torch.export import Dim

    from backends.torch_export import export

    return export(_split_halves, [torch.zeros(2, 16, 3)], ({1: Dim("t", min=2, max=64)},), "split_halves", oblivious_retry=retry)


def test_unprovable_split_guards_become_runtime_asserts_the_bounded_executor_checks():
    """split_with_sizes([t // 2, t - t // 2]) over a Dim range: torch.export cannot prove
    its guards (a refusal without the retry); the retry defers them to asserts, which
    the bounded rewrite strips and the executor checks per new shape (one compile)."""
    from backends.base import Unsupported
    from engines.stablehlo import lower

    with pytest.raises(Unsupported, match="Constraints violated"):
        _split_export(retry=False)
    ep = _split_export(retry=True)
    text = lower(ep, bounded=True)
    assert "@shape_assertion" in text
    compiles = []
    prog = BoundedXlaProgram(Module(text), on_compile=lambda s, why: compiles.append(why))
    for t in (2, 3, 17, 64):
        x = np.random.default_rng(t).standard_normal((2, t, 3)).astype(np.float32)
        (got,) = prog(*prog.convert([x]))
        np.testing.assert_allclose(got, x[:, : t // 2].sum(1) - x[:, t // 2 :].sum(1), rtol=1e-5, atol=1e-5)
    assert len(compiles) == 1, compiles


def test_the_bounded_executor_checks_the_modules_shape_assertions():
    """A failing torch.export runtime assert (k % 2 == 0) fails the bounded run with its
    message, as the per-shape executor does, instead of being dropped by the rewrite."""
    import torch
    from torch.export import Dim

    from engines.stablehlo import lower

    class Asserted(torch.nn.Module):
        def forward(self, x):
            k = x.shape[0]
            torch._check(k % 2 == 0)
            return x * 2.0

    ep = torch.export.export(
        Asserted(),
        (torch.zeros(6, 3),),
        dynamic_shapes=({0: Dim("n", min=2, max=32)},),
        prefer_deferred_runtime_asserts_over_guards=True,
    )
    text = lower(ep, bounded=True)
    prog = BoundedXlaProgram(Module(text))
    (out,) = prog(*prog.convert([np.ones((4, 3), np.float32)]))
    np.testing.assert_array_equal(out, np.full((4, 3), 2.0, np.float32))
    with pytest.raises(ExecutionError, match=r"Runtime assertion failed for expression Eq\(Mod\(s\d+, 2\), 0\)"):
        prog(*prog.convert([np.ones((5, 3), np.float32)]))


# torch_xla's embedding of (B, ?) ids: flatten, gather rows, unflatten to (B, ?, F)
EMBEDDING = """
func.func public @main(%ids: tensor<2x?xi32>, %table: tensor<50x4xf32>) -> tensor<2x?x4xf32> {
  %c4 = stablehlo.constant dense<4> : tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %0 = stablehlo.get_dimension_size %ids, dim = 1 : (tensor<2x?xi32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.multiply %1, %c2 : tensor<1xi32>
  %3 = stablehlo.dynamic_reshape %ids, %2 : (tensor<2x?xi32>, tensor<1xi32>) -> tensor<?xi32>
  %5 = "stablehlo.gather"(%table, %3) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<50x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  %6 = stablehlo.concatenate %c2, %1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
  %7 = stablehlo.dynamic_reshape %5, %6 : (tensor<?x4xf32>, tensor<3xi32>) -> tensor<2x?x4xf32>
  return %7 : tensor<2x?x4xf32>
}
"""


@pytest.mark.parametrize("bounded", [False, True], ids=["bucketed", "bounded"])
def test_a_reshape_splitting_a_dynamic_dim_keeps_each_rows_data(bounded):
    """(2 * t) -> (2, t): a static reshape of the padded buffer would read row 1 from
    the bound's offset (the padding); the rewrite gathers each element from its live
    row-major position (engines/stablehlo/execution/padder_reshape.py)."""
    text = EMBEDDING.replace("2x?xi32>", "2x?xi32, #stablehlo.bounds<?, 40>>") if bounded else EMBEDDING
    if bounded:
        text = (
            text.replace("tensor<?xi32>", "tensor<?xi32, #stablehlo.bounds<80>>")
            .replace("tensor<?x4xf32>", "tensor<?x4xf32, #stablehlo.bounds<80, ?>>")
            .replace("tensor<2x?x4xf32>", "tensor<2x?x4xf32, #stablehlo.bounds<?, 40, ?>>")
        )
    entry = bound_entry(text, "embedding", None if bounded else [(2, 32), (50, 4)])
    assert entry.rewritten["stablehlo.dynamic_reshape"] == 2
    prog = (BoundedXlaProgram if bounded else BucketedXlaProgram)(Module(text, "embedding"))
    table = np.arange(200, dtype=np.float32).reshape(50, 4)
    for t in (17, 3, 32):
        ids = np.random.default_rng(t).integers(0, 50, (2, t)).astype(np.int32)
        (out,) = prog(*prog.convert([ids, table]))
        np.testing.assert_array_equal(out, table[ids], err_msg=f"t={t}")


def test_a_0d_argument_stays_0d_through_the_bounded_staging():
    """A 0-d argument beside a bounded one (``x + y`` with ``y`` a 0-d tensor): the
    staging keeps it 0-d (``np.ascontiguousarray`` made it 1-d, which @main refused)."""
    text = """
func.func @main(%x: tensor<?xf32, #stablehlo.bounds<8>>, %y: tensor<f32>) -> tensor<?xf32, #stablehlo.bounds<8>> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32, #stablehlo.bounds<8>>) -> tensor<i32>
  %s = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %y, %s, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32, #stablehlo.bounds<8>>
  %r = stablehlo.add %x, %b : tensor<?xf32, #stablehlo.bounds<8>>
  return %r : tensor<?xf32, #stablehlo.bounds<8>>
}"""
    ex = XlaExecutor()
    for n in (3, 7):
        x = np.arange(n, dtype=np.float32)
        (out,) = ex.run(text, [x, np.array(2.5, np.float32)])
        np.testing.assert_array_equal(out, x + 2.5)
    assert ex.compile_count() == 1


def test_argmax_and_max_dim_over_a_bounded_dim_compile_once_with_torchs_nan_and_ties():
    """``max(dim)`` / ``argmin`` over a bounded dim: two single-operand reductions (a
    two-operand reduce over a dynamic dim is what the padder refused), ties at the
    first index, a row with a NaN at its first NaN, as torch's."""
    import torch
    from torch.export import Dim

    from conformance.op_samples import Fn
    from engines.stablehlo import lower

    def fn(x):
        v, i = x.max(1)
        return v, i, x.argmin(0)

    n = Dim("n", min=2, max=32)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(3, 5),), dynamic_shapes={"xs": ({1: n},)})
    text = lower(ep)
    ex = XlaExecutor()
    for k in (5, 12):
        x = np.round(np.random.default_rng(k).standard_normal((3, k)), 0).astype(np.float32)  # ties
        x[1, k // 2] = x[1, k - 1] = np.nan
        got = ex.run(text, [x])
        for g, w in zip(got, fn(torch.from_numpy(x)), strict=True):
            np.testing.assert_array_equal(g, w.numpy(), err_msg=f"n={k}")
    assert ex.compile_count() == 1


def test_an_op_on_a_0_element_tensor_with_bounded_dims_lowers_as_its_empty_result():
    """Circular padding of a ``(0, n, n)`` tensor: XLA's dynamic padder failed an internal
    check on the update-slices over 0 elements (a crash); a result with a static 0 dim
    holds nothing and lowers as an empty broadcast, compiled once."""
    import torch
    from torch.export import Dim

    from conformance.op_samples import Fn
    from engines.stablehlo import lower

    def fn(x):
        return torch.nn.functional.pad(x, (1, 2), mode="circular")

    n = Dim("n", min=3, max=12)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(0, 3, 3),), dynamic_shapes={"xs": ({1: n, 2: n},)})
    text = lower(ep)
    ex = XlaExecutor()
    for k in (3, 6):
        (got,) = ex.run(text, [np.zeros((0, k, k), np.float32)])
        assert got.shape == (0, k, k + 3)
    assert ex.compile_count() == 1
