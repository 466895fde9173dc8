"""The ``linalg.generic`` rewrites for IREE (``engines/stablehlo/iree_generic.py``):
``stablehlo.dynamic_gather`` and the ``stablehlo.dot_general`` forms IREE reshapes
to a `?` type, each compiled once by ``iree-compile`` and checked against NumPy at
several sizes, 1 included. Skips where IREE's wheels are missing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("iree.compiler", reason="IREE's compiler wheel (the peers extra: make setup)")
pytest.importorskip("iree.runtime", reason="IREE's runtime wheel (the peers extra: make setup)")

from engines.stablehlo.iree_compat import IreeCompatError, rewrite

from .test_iree_compat import _run

#: index_select along dim 1 with the whole `?` dim 0 as slice (zoo_hf_mpnet's form)
TAKE_COLUMNS = """module @dynshape {
  func.func public @main(%arg0: tensor<?x?xi64>, %arg1: tensor<?xi32>) -> tensor<?x?xi64> {
    %n = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x?xi64>) -> tensor<i32>
    %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
    %one = stablehlo.constant dense<[1]> : tensor<1xi32>
    %s = stablehlo.concatenate %n1, %one, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %g = "stablehlo.dynamic_gather"(%arg0, %arg1, %s) <{dimension_numbers = #stablehlo.gather<offset_dims = [0],
      collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false}>
      : (tensor<?x?xi64>, tensor<?xi32>, tensor<2xi32>) -> tensor<?x?xi64>
    return %g : tensor<?x?xi64>
  }
}"""

#: rows of a table by an index vector of its own dim, slices of half the columns (a size
#: computed at run time) along the gathered dim 1
ROWS = """module @dynshape {
  func.func public @main(%arg0: tensor<?x?xf32>, %arg1: tensor<?x2xi64>) -> tensor<?x?xf32> {
    %c = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<?x?xf32>) -> tensor<i32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %half = stablehlo.divide %c, %two : tensor<i32>
    %h1 = stablehlo.reshape %half : (tensor<i32>) -> tensor<1xi32>
    %one = stablehlo.constant dense<[1]> : tensor<1xi32>
    %s = stablehlo.concatenate %one, %h1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %g = "stablehlo.dynamic_gather"(%arg0, %arg1, %s) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false}>
      : (tensor<?x?xf32>, tensor<?x2xi64>, tensor<2xi32>) -> tensor<?x?xf32>
    return %g : tensor<?x?xf32>
  }
}"""


def _gather(x, starts, sizes, start_map, collapsed):
    """NumPy's reading of a gather without batching dims: one slice per start vector, each
    start clamped to [0, dim - size] (the StableHLO spec), collapsed dims dropped."""
    out = []
    for vec in starts:
        begin = [0] * x.ndim
        for k, d in enumerate(start_map):
            begin[d] = min(max(int(vec[k]), 0), x.shape[d] - sizes[d])
        piece = x[tuple(slice(b, b + s) for b, s in zip(begin, sizes, strict=True))]
        out.append(piece.reshape([s for d, s in enumerate(piece.shape) if d not in collapsed]))
    return np.stack(out)


def test_a_take_along_a_dim_becomes_a_generic_and_clamps_like_the_gather():
    """The rewrite computes what the op computes: indices past either end read the
    nearest column (the gather clamps its start indices), at every size, 1 included."""
    assert "stablehlo.dynamic_gather" not in rewrite(TAKE_COLUMNS)
    rng = np.random.default_rng(0)
    calls = []
    for rows, cols, k in ((1, 1, 1), (3, 5, 4), (7, 9, 12)):
        idx = rng.integers(-3, cols + 3, k).astype(np.int32)  # out of range on both sides, too
        calls.append((rng.integers(0, 100, (rows, cols)).astype(np.int64), idx))
    for (x, idx), got in zip(calls, _run(TAKE_COLUMNS, *calls), strict=True):
        want = _gather(x, idx[:, None], [x.shape[0], 1], [1], [1]).T  # offset dim 0 comes first
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, x[:, np.clip(idx, 0, x.shape[1] - 1)])


def test_an_index_vector_dim_and_an_uncollapsed_gathered_dim():
    """Start vectors along the indices' dim 1, a slice of half the columns along a gathered
    dim: its start clamps to dim - half, not dim - 1."""
    rng = np.random.default_rng(1)
    calls = []
    for n, cols, k in ((1, 2, 1), (4, 6, 6), (9, 9, 3)):
        starts = np.stack([rng.integers(-2, n + 2, k), rng.integers(-2, cols + 2, k)], axis=1).astype(np.int64)
        calls.append((rng.standard_normal((n, cols)).astype(np.float32), starts))
    for (x, starts), got in zip(calls, _run(ROWS, *calls), strict=True):
        np.testing.assert_array_equal(got, _gather(x, starts, [1, x.shape[1] // 2], [0, 1], [0]))


#: a gather with batching dims (row b's element at index b): not a take along axes
BATCHED = """module @dynshape {
  func.func public @main(%arg0: tensor<?x?xi64>, %arg1: tensor<?xi32>) -> tensor<?xi64> {
    %s = stablehlo.constant dense<[1, 1]> : tensor<2xi32>
    %g = "stablehlo.dynamic_gather"(%arg0, %arg1, %s) <{dimension_numbers = #stablehlo.gather<
      collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0],
      start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false}>
      : (tensor<?x?xi64>, tensor<?xi32>, tensor<2xi32>) -> tensor<?xi64>
    return %g : tensor<?xi64>
  }
}"""


def test_a_gather_with_batching_dims_is_refused_naming_the_op():
    with pytest.raises(IreeCompatError, match=r"stablehlo\.dynamic_gather with operand_batching_dims \[0\]"):
        rewrite(BATCHED)


def _dot(lhs: str, rhs: str, out: str, dims: str) -> str:
    return f"""module @dynshape {{
  func.func public @main(%a: tensor<{lhs}>, %b: tensor<{rhs}>) -> tensor<{out}> {{
    %0 = stablehlo.dot_general %a, %b, {dims} : (tensor<{lhs}>, tensor<{rhs}>) -> tensor<{out}>
    return %0 : tensor<{out}>
  }}
}}"""


#: (module, operand shapes at a size n, NumPy's result): the forms IREE reshapes to a `?` type
DOTS = {
    "a unit rhs column (zoo_pyg_faconv_node)": (
        _dot("?x32xf32", "32x1xf32", "?x1xf32", "contracting_dims = [1] x [0]"),
        lambda n: [(n, 32), (32, 1)],
        lambda a, b: a @ b,
    ),
    "a unit lhs row, a transposed rhs": (
        _dot("1x32xf32", "?x32xf32", "1x?xf32", "contracting_dims = [1] x [1]"),
        lambda n: [(1, 32), (n, 32)],
        lambda a, b: a @ b.T,
    ),
    "a unit contracting dim": (
        _dot("?x1xf32", "1x5xf32", "?x5xf32", "contracting_dims = [1] x [0]"),
        lambda n: [(n, 1), (1, 5)],
        lambda a, b: a @ b,
    ),
    "a rank-3 lhs": (
        _dot("?x?x32xf32", "32x1xf32", "?x?x1xf32", "contracting_dims = [2] x [0]"),
        lambda n: [(n, n + 1, 32), (32, 1)],
        lambda a, b: a @ b,
    ),
    "a matrix-vector product": (
        _dot("?x32xf32", "32xf32", "?xf32", "contracting_dims = [1] x [0]"),
        lambda n: [(n, 32), (32,)],
        lambda a, b: a @ b,
    ),
    "a dot of two vectors": (
        _dot("?xf32", "?xf32", "f32", "contracting_dims = [0] x [0]"),
        lambda n: [(n,), (n,)],
        lambda a, b: a @ b,
    ),
    "a static result of `?` operands": (
        _dot("4x?xf32", "?x1xf32", "4x1xf32", "contracting_dims = [1] x [0]"),
        lambda n: [(4, n), (n, 1)],
        lambda a, b: a @ b,
    ),
}


@pytest.mark.parametrize("form", list(DOTS))
def test_a_dot_general_iree_reshapes_to_a_dynamic_type_becomes_a_generic(form):
    text, shapes, want = DOTS[form]
    assert "stablehlo.dot_general" not in rewrite(text)
    rng = np.random.default_rng(2)
    calls = [tuple(rng.standard_normal(s).astype(np.float32) for s in shapes(n)) for n in (1, 3, 17)]
    for (a, b), got in zip(calls, _run(text, *calls), strict=True):
        np.testing.assert_allclose(got, want(a, b), rtol=1e-5, atol=1e-5)


def test_the_dot_forms_iree_takes_are_left_as_they_are():
    plain = _dot("?x32xf32", "4x32xf32", "?x4xf32", "contracting_dims = [1] x [1]")
    batched = _dot("?x1x32xf32", "?x32x5xf32", "?x1x5xf32", "batching_dims = [0] x [0], contracting_dims = [2] x [1]")
    for text in (plain, batched):
        assert "stablehlo.dot_general" in rewrite(text)


def test_a_complex_dot_general_becomes_a_generic_of_complex_ops():
    """FNet's Fourier transform as products over complex<f32>: IREE collapses the rank-3
    lhs with a dynamic_reshape it then refuses; the rewrite multiplies with complex.mul."""
    text = _dot("?x?x32xcomplex<f32>", "?x?xcomplex<f32>", "?x32x?xcomplex<f32>", "contracting_dims = [1] x [0]")
    out = rewrite(text)
    assert "stablehlo.dot_general" not in out and "complex.mul" in out
    rng = np.random.default_rng(3)

    def draw(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    calls = [(draw(n, m, 32), draw(m, n + 2)) for n, m in ((1, 1), (2, 5), (3, 4))]
    for (a, b), got in zip(calls, _run(text, *calls), strict=True):
        np.testing.assert_allclose(got, np.einsum("nmk,mj->nkj", a, b), rtol=1e-4, atol=1e-4)


#: a converted mask joined after a column along dim 1 (zoo_hf_mpnet's position ids, cut down)
CONCAT = """module @dynshape {
  func.func public @main(%a: tensor<?x?xi32>, %z: tensor<?x1xi64>, %w: tensor<?x2xi64>) -> tensor<?x?xi64> {
    %c = stablehlo.convert %a : (tensor<?x?xi32>) -> tensor<?x?xi64>
    %r = stablehlo.concatenate %z, %c, %w, dim = 1 : (tensor<?x1xi64>, tensor<?x?xi64>, tensor<?x2xi64>) -> tensor<?x?xi64>
    return %r : tensor<?x?xi64>
  }
}"""


def test_a_concatenate_along_an_inner_dim_becomes_insert_slices():
    """IREE fuses the convert into its concatenate loop and cannot size its stack buffer
    ("stack allocation size overflows 64 bits"); insert_slices at running offsets compile."""
    out = rewrite(CONCAT)
    assert "stablehlo.concatenate" not in out and out.count("tensor.insert_slice") == 3
    rng = np.random.default_rng(4)
    calls = []
    for n, m in ((1, 1), (3, 4), (6, 11)):
        calls.append((rng.integers(-9, 9, (n, m)).astype(np.int32), rng.integers(0, 9, (n, 1)), rng.integers(0, 9, (n, 2))))
    for (a, z, w), got in zip(calls, _run(CONCAT, *calls), strict=True):
        np.testing.assert_array_equal(got, np.concatenate([z, a.astype(np.int64), w], axis=1))


def test_a_concatenate_along_dim_0_is_left_to_iree():
    text = (
        CONCAT.replace("dim = 1", "dim = 0")
        .replace("tensor<?x1xi64>", "tensor<?x?xi64>")
        .replace("tensor<?x2xi64>", "tensor<?x?xi64>")
    )
    assert "stablehlo.concatenate" in rewrite(text)


def test_atan2_keeps_ieee_zeros_where_iree_gives_nan():
    """IREE 3.13's atan2(0, 0) is NaN (zoo_pyg_ppfconv_node's self-loop angles); the
    rewrite gives the spec's signed 0 or pi there, and atan2 elsewhere."""
    text = """module @dynshape {
  func.func public @main(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
    %r = stablehlo.atan2 %a, %b : tensor<?x?xf32>
    return %r : tensor<?x?xf32>
  }
}"""
    assert "math.atan2" in rewrite(text)
    signed = np.array([[0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0], [0.0, -0.0, 0.0, -0.0, 2.0, -3.0, 0.0, 0.5]], np.float32)
    over = np.array([[0.0, 0.0, -0.0, -0.0, 0.0, 0.0, 3.0, -1.0], [-0.0, 0.0, 0.0, -2.0, 0.0, -3.0, -1.0, 0.0]], np.float32)
    rng = np.random.default_rng(5)
    calls = [(signed, over), (signed[:1, :1], over[:1, :1])]
    calls.append(tuple(rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2)))
    for (y, x), got in zip(calls, _run(text, *calls), strict=True):
        np.testing.assert_allclose(got, np.arctan2(y, x), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.arctan2(y, x)))
