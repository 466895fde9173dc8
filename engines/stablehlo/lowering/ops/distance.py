"""Pairwise distances: ``_cdist_forward`` (every row of one set against every row of
another) and ``_pdist_forward`` (the pairs i < j of one set, in row-major order).

Both broadcast the difference of the rows, (..., n, m, d), and take its p-norm over
the last dim: p = 0 counts the nonzeros, p = inf takes the largest magnitude. No
matmul form (torch's for p = 2 on large sets): exact differences, and no loop."""

from __future__ import annotations

import math

import torch

from engines import sizes

from ..registry import lowers
from ..symbolic import as_dim
from .gather import gather_along

aten = torch.ops.aten


def _norm_last(ctx, d, p: float):
    """The p-norm of ``d`` over its last dim."""
    last = [d.rank - 1]
    a = ctx.unary("stablehlo.abs", d)
    if p == 0:
        nz = ctx.convert(ctx.compare(a, ctx.constant(0, d.dtype, d.sym_shape), "NE"), d.dtype)
        return ctx.reduce(nz, last, "add")
    if math.isinf(p):
        return ctx.reduce(a, last, "max")
    if p == 1:
        return ctx.reduce(a, last, "add")
    if p == 2:
        return ctx.unary("stablehlo.sqrt", ctx.reduce(ctx.binary("stablehlo.multiply", a, a), last, "add"))
    s = ctx.reduce(ctx.binary("stablehlo.power", a, ctx.constant(float(p), d.dtype, d.sym_shape)), last, "add")
    return ctx.binary("stablehlo.power", s, ctx.constant(1.0 / p, d.dtype, s.sym_shape))


def _differences(ctx, x1, x2):
    """(..., n, d) and (..., m, d) -> (..., n, m, d): x1[..., i, :] - x2[..., j, :]."""
    *b1, n, d = x1.sym_shape
    *b2, m, _ = x2.sym_shape
    batch = tuple(b1) if len(b1) >= len(b2) else tuple(b2)
    r = len(batch)
    shape = batch + (n, m, d)
    a = ctx.broadcast_to(x1, shape, dims=list(range(r - len(b1), r)) + [r, r + 2])
    b = ctx.broadcast_to(x2, shape, dims=list(range(r - len(b2), r)) + [r + 1, r + 2])
    return ctx.binary("stablehlo.subtract", a, b)


@lowers(aten._cdist_forward.default)
def _cdist(ctx, node, x1, x2, p, compute_mode=None):
    dt = ctx.out_dtype(node)
    out = _norm_last(ctx, _differences(ctx, ctx.convert(x1, dt), ctx.convert(x2, dt)), float(p))
    return ctx.reshape(out, ctx.out_shape(node))


def _first_pair(ctx, r, n, shape):
    """``r n - r (r + 1) / 2`` (i64, of ``shape``): the index of row ``r``'s first pair of ``n`` rows."""
    nn = ctx.convert(ctx.broadcast_to(ctx.dim(n), shape), "i64")
    r_plus_1 = ctx.binary("stablehlo.add", r, ctx.constant(1, "i64", shape))
    half = ctx.binary("stablehlo.divide", ctx.binary("stablehlo.multiply", r, r_plus_1), ctx.constant(2, "i64", shape))
    return ctx.binary("stablehlo.subtract", ctx.binary("stablehlo.multiply", r, nn), half)


@lowers(aten._pdist_forward.default)
def _pdist(ctx, node, x, p=2.0):
    """Row pair k of n rows is (i, j): i the rows r in 1..n-1 whose first pair, ``r n -
    r (r + 1) / 2``, is <= k; j = k - first(i) + i + 1. The n x n distances gathered there."""
    dt = ctx.out_dtype(node)
    x = ctx.convert(x, dt)
    n = x.sym_shape[0]
    full = _norm_last(ctx, _differences(ctx, x, x), float(p))  # (n, n)
    k = as_dim(ctx.out_shape(node)[0])
    rows = ctx.iota((k, n), 1, "i64")
    first = _first_pair(ctx, rows, n, (k, n))
    kk = ctx.iota((k, n), 0, "i64")
    counted = ctx.binary("stablehlo.and", ctx.compare(first, kk, "LE"), ctx.compare(rows, ctx.constant(1, "i64", (k, n)), "GE"))
    i = ctx.reduce(ctx.convert(counted, "i64"), [1], "add")  # (k,)
    ni = ctx.convert(ctx.broadcast_to(ctx.dim(n), (k,)), "i64")
    one_k = ctx.constant(1, "i64", (k,))
    first_i = _first_pair(ctx, i, n, (k,))
    j = ctx.binary(
        "stablehlo.add",
        ctx.binary("stablehlo.subtract", ctx.iota((k,), 0, "i64"), first_i),
        ctx.binary("stablehlo.add", i, one_k),
    )
    flat = ctx.reshape(full, (as_dim(sizes.const(1) * n * n),))
    return gather_along(ctx, flat, 0, ctx.binary("stablehlo.add", ctx.binary("stablehlo.multiply", i, ni), j), (k,))
