"""Order statistics and searches in sorted sequences, from ``stablehlo.sort`` and compares.

``kthvalue``, ``median``, ``nanmedian``: the input sorted along the dim (:func:`.sort.sort_with_indices`),
then the value and its index at one position per row -- ``k - 1``, ``(n - 1) // 2`` of the dim's
(symbolic) size, or of each row's count of non-NaN values -- gathered. Which of tied values' indices
they name torch leaves unspecified (its sort is not stable); ours names the first in input order.

``searchsorted``, ``bucketize``: a value's insertion point in a sorted sequence is how many of the
sequence's elements lie below it (``<``; ``<=`` for ``right``), so one broadcast compare and a sum
over the sequence's dim: O(n m) where torch's binary search is O(m log n), but no loop, and the
dynamic padder serves it (bounded: one compile)."""

from __future__ import annotations

import functools
import operator

import torch

from .. import types as T
from ..registry import lowers
from ..symbolic import as_dim
from .index import _gather
from .sort import sort_with_indices

aten = torch.ops.aten


def _row_shape(x, dim):
    return tuple(1 if i == dim else d for i, d in enumerate(x.sym_shape))


def _pick(ctx, node, vals, inds, dim, pos):
    """``vals`` and ``inds`` at ``pos`` (i64, ``vals``'s shape with ``dim`` of size 1) along ``dim``."""
    return _gather(ctx, node, vals, dim, pos), _gather(ctx, node, inds, dim, pos)


def _half(ctx, n):
    """``(n - 1) // 2`` of a non-negative i64 count (0 for an empty row)."""
    one = ctx.constant(1, "i64", n.sym_shape)
    m = ctx.binary("stablehlo.maximum", ctx.binary("stablehlo.subtract", n, one), ctx.constant(0, "i64", n.sym_shape))
    return ctx.binary("stablehlo.divide", m, ctx.constant(2, "i64", n.sym_shape))


def _sorted(ctx, x, dim):
    if x.rank == 0:
        x = ctx.reshape(x, (1,))
    return x, dim % x.rank, *sort_with_indices(ctx, x, dim % x.rank, False)


@lowers(aten.kthvalue.default)
def _kthvalue(ctx, node, x, k, dim=-1, keepdim=False):
    x, dim, vals, inds = _sorted(ctx, x, dim)
    v, i = _pick(ctx, node, vals, inds, dim, ctx.constant(k - 1, "i64", _row_shape(x, dim)))
    return [ctx.reshape(v, ctx.out_shape(node, 0)), ctx.reshape(i, ctx.out_shape(node, 1))]


def median_along(ctx, node, x, dim, ignore_nan):
    """(value, index) of the median along ``dim``, that dim kept at size 1: the lower of the two
    middle values, as torch's; ``ignore_nan`` of the row's non-NaN values (NaNs sort last)."""
    if x.rank == 0:
        x = ctx.reshape(x, (1,))
    dim = dim % x.rank
    row = _row_shape(x, dim)
    number = ctx.compare(x, x, "EQ")  # (not NaN)
    # NaNs sorted as +inf, so after every number (a float compare leaves their place unspecified)
    key = ctx.select(number, x, ctx.constant(float("inf"), x.dtype, x.sym_shape)) if T.is_float(x.dtype) else x
    vals, inds = sort_with_indices(ctx, key, dim, False)
    if ignore_nan:
        count = ctx.reduce(ctx.convert(number, "i64"), [dim], "add", keepdim=True)
    else:
        count = ctx.broadcast_to(ctx.convert(ctx.dim(x.sym_shape[dim]), "i64"), row, [])
    v, i = _pick(ctx, node, vals, inds, dim, _half(ctx, count))
    if T.is_float(x.dtype):
        # a row with a NaN: its median is NaN (torch's median); nanmedian's only where all are NaN
        nan = ctx.constant(float("nan"), x.dtype, row)
        if ignore_nan:
            v = ctx.select(ctx.compare(count, ctx.constant(0, "i64", row), "EQ"), nan, v)
        else:
            v = ctx.select(ctx.reduce(ctx.unary("stablehlo.not", number), [dim], "or", keepdim=True), nan, v)
    return v, i


def _median_dim(ignore_nan):
    def lower(ctx, node, x, dim=-1, keepdim=False):
        v, i = median_along(ctx, node, x, dim, ignore_nan)
        return [ctx.reshape(v, ctx.out_shape(node, 0)), ctx.reshape(i, ctx.out_shape(node, 1))]

    return lower


def _median_all(ignore_nan):
    def lower(ctx, node, x):
        """The median of every element: the flattened input's, its value only."""
        flat = ctx.reshape(x, (functools.reduce(operator.mul, x.sym_shape, as_dim(1)),)) if x.rank != 1 else x
        v, _ = median_along(ctx, node, flat, 0, ignore_nan)
        return ctx.reshape(v, ctx.out_shape(node))

    return lower


lowers(aten.median.dim)(_median_dim(False))
lowers(aten.nanmedian.dim)(_median_dim(True))
lowers(aten.median.default)(_median_all(False))
lowers(aten.nanmedian.default)(_median_all(True))


def insertion_points(ctx, seq, values, right: bool, dtype: str):
    """For each of ``values``, how many elements of ``seq`` (sorted along its last dim) lie below
    it: ``seq`` 1-d, or with ``values``'s leading dims (one sequence per row)."""
    vshape = values.sym_shape
    n = seq.sym_shape[-1]
    if seq.rank == 1:
        big = vshape + (n,)
        s = ctx.broadcast_to(seq, big, [len(vshape)])
    else:
        big = vshape + (n,)
        s = ctx.broadcast_to(seq, big, [*range(len(vshape) - 1), len(vshape)])
    v = ctx.broadcast_to(values, big, list(range(len(vshape))))
    below = ctx.compare(s, v, "LE" if right else "LT")
    return ctx.reduce(ctx.convert(below, dtype), [len(vshape)], "add")


@lowers(aten.searchsorted.Tensor)
def _searchsorted(ctx, node, seq, values, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        seq = _gather(ctx, node, seq, seq.rank - 1, sorter)
    dt = ctx.out_dtype(node)
    values = ctx.tensor(values, seq.dtype) if values.dtype != seq.dtype else values
    return insertion_points(ctx, seq, values, right or side == "right", dt)


@lowers(aten.bucketize.Tensor)
def _bucketize(ctx, node, values, boundaries, *, out_int32=False, right=False):
    dt = ctx.out_dtype(node)
    values = ctx.convert(values, boundaries.dtype) if values.dtype != boundaries.dtype else values
    return insertion_points(ctx, boundaries, values, right, dt)


@lowers(aten.mode.default)
def _mode(ctx, node, x, dim=-1, keepdim=False):
    """torch's ``mode``: the most frequent value along ``dim`` (of tied counts the least value)
    and the last index holding it. Counts from one broadcast compare of the row with itself:
    O(n²) per row, no sort, so the dynamic padder serves it."""
    if x.rank == 0:
        return x, ctx.constant(0, "i64")
    dim %= x.rank
    perm = [i for i in range(x.rank) if i != dim] + [dim]
    y = ctx.transpose(x, perm)  # (..., n)
    *rest, n = y.sym_shape
    pair = tuple(rest) + (n, n)
    r = len(rest)
    a = ctx.broadcast_to(y, pair, dims=list(range(r)) + [r])  # a[..., i, j] = y[..., i]
    b = ctx.broadcast_to(y, pair, dims=list(range(r)) + [r + 1])  # b[..., i, j] = y[..., j]
    eq = ctx.compare(a, b, "EQ")
    count = ctx.reduce(ctx.convert(eq, "i64"), [r + 1], "add")  # (..., n): how often y[i] occurs
    top = ctx.broadcast_to(ctx.reduce(count, [r], "max"), count.sym_shape, dims=list(range(r)))
    inf = float("inf") if T.is_float(y.dtype) else None
    worst = (
        ctx.constant(inf, y.dtype, y.sym_shape)
        if inf is not None
        else ctx.broadcast_to(ctx.reduce(y, [r], "max"), y.sym_shape, dims=list(range(r)))
    )
    value = ctx.reduce(ctx.select(ctx.compare(count, top, "EQ"), y, worst), [r], "min")  # (...)
    hit = ctx.compare(y, ctx.broadcast_to(value, y.sym_shape, dims=list(range(r))), "EQ")
    index = ctx.reduce(ctx.select(hit, ctx.iota(y.sym_shape, r, "i64"), ctx.constant(-1, "i64", y.sym_shape)), [r], "max")
    if keepdim:
        shape = ctx.out_shape(node, 0)
        value, index = ctx.reshape(value, shape), ctx.reshape(index, shape)
    return value, index
