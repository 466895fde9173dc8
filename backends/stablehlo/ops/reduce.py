"""Reductions: sum, mean, var, amax/amin, any/all, softmax/log_softmax, cumsum.

Means and variances over a dynamic dim divide by the element count computed
from ``get_dimension_size`` (converted to the float type).  ``cumsum`` along a
static dim is a ``reduce_window``; along a dynamic dim (the window would be
dynamic) it is a Hillis-Steele scan in a ``while`` loop (ceil(log2 n) steps of O(n)).
"""
from __future__ import annotations

import torch

from .. import types as T
from ..registry import lowers
from ..symbolic import as_dim

aten = torch.ops.aten


def _dims(x, dims):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % x.rank for d in dims}) if x.rank else []


def _count(ctx, x, dims, dtype):
    return ctx.numel([x.sym_shape[d] for d in dims], dtype)


@lowers(aten.sum.dim_IntList, aten.sum.default)
def _sum(ctx, node, x, dims=None, keepdim=False, dtype=None):
    out_dt = ctx.out_dtype(node)
    r = ctx.reduce(x, _dims(x, dims), "add", keepdim=keepdim, dtype=out_dt)
    return ctx.reshape(r, ctx.out_shape(node))


@lowers(aten.mean.dim, aten.mean.default)
def _mean(ctx, node, x, dims=None, keepdim=False, dtype=None):
    out_dt = ctx.out_dtype(node)
    d = _dims(x, dims)
    s = ctx.reduce(x, d, "add", keepdim=keepdim, dtype=out_dt)
    n = ctx.broadcast_to(_count(ctx, x, d, out_dt), s.sym_shape)
    return ctx.reshape(ctx.binary("stablehlo.divide", s, n), ctx.out_shape(node))


def variance(ctx, x, dims, correction, keepdim, dtype):
    x = ctx.convert(x, dtype)
    m = ctx.reduce(x, dims, "add", keepdim=True)
    n = _count(ctx, x, dims, dtype)
    m = ctx.binary("stablehlo.divide", m, ctx.broadcast_to(n, m.sym_shape))
    diff = ctx.binary("stablehlo.subtract", x, ctx.broadcast_to(m, x.sym_shape, dims=list(range(x.rank))))
    sq = ctx.reduce(ctx.binary("stablehlo.multiply", diff, diff), dims, "add", keepdim=keepdim)
    if correction:
        n = ctx.binary("stablehlo.subtract", n, ctx.constant(correction, dtype))
        n = ctx.binary("stablehlo.maximum", n, ctx.constant(0, dtype))  # torch: max(0, N - correction)
    return ctx.binary("stablehlo.divide", sq, ctx.broadcast_to(n, sq.sym_shape)), m


@lowers(aten.var.correction, aten.var.dim)
def _var(ctx, node, x, dims=None, *args, correction=None, keepdim=False, unbiased=None):
    if node.target is aten.var.dim:  # var.dim(x, dims, unbiased=True, keepdim=False)
        unbiased = args[0] if len(args) > 0 else (True if unbiased is None else unbiased)
        keepdim = args[1] if len(args) > 1 else keepdim
        correction = 1 if unbiased else 0
    correction = 1 if correction is None else correction
    v, _ = variance(ctx, x, _dims(x, dims), correction, keepdim, ctx.out_dtype(node))
    return ctx.reshape(v, ctx.out_shape(node))


def _minmax(kind):
    def fn(ctx, node, x, dims=None, keepdim=False):
        r = ctx.reduce(x, _dims(x, dims), kind, keepdim=keepdim, dtype=ctx.out_dtype(node))
        return ctx.reshape(r, ctx.out_shape(node))

    return fn


lowers(aten.amax.default, aten.max.default)(_minmax("max"))
lowers(aten.amin.default, aten.min.default)(_minmax("min"))


def _anyall(kind):
    def fn(ctx, node, x, dims=None, keepdim=False):
        r = ctx.reduce(ctx.convert(x, "i1"), _dims(x, dims), kind, keepdim=keepdim)
        return ctx.reshape(r, ctx.out_shape(node))

    return fn


lowers(aten.any.dim, aten.any.dims, aten.any.default)(_anyall("or"))
lowers(aten.all.dim, aten.all.dims, aten.all.default)(_anyall("and"))


def softmax(ctx, x, dim, log=False):
    dim = dim % x.rank
    full = list(range(x.rank))
    m = ctx.reduce(x, [dim], "max", keepdim=True)
    z = ctx.binary("stablehlo.subtract", x, ctx.broadcast_to(m, x.sym_shape, dims=full))
    e = ctx.unary("stablehlo.exponential", z)
    s = ctx.reduce(e, [dim], "add", keepdim=True)
    if log:
        return ctx.binary("stablehlo.subtract", z, ctx.broadcast_to(ctx.unary("stablehlo.log", s), x.sym_shape, dims=full))
    return ctx.binary("stablehlo.divide", e, ctx.broadcast_to(s, x.sym_shape, dims=full))


@lowers(aten._softmax.default, aten.softmax.int)
def _softmax(ctx, node, x, dim, half_to_float=False, *a, **kw):
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    return ctx.convert(softmax(ctx, ctx.convert(x, cdt), dim), dt)


@lowers(aten._log_softmax.default, aten.log_softmax.int)
def _log_softmax(ctx, node, x, dim, half_to_float=False, *a, **kw):
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    return ctx.convert(softmax(ctx, ctx.convert(x, cdt), dim, log=True), dt)


@lowers(aten.cumsum.default)
def _cumsum(ctx, node, x, dim, dtype=None):
    out_dt = ctx.out_dtype(node)
    x = ctx.convert(x, out_dt)
    if x.rank == 0:
        return x
    dim = dim % x.rank
    n = x.sym_shape[dim]
    if isinstance(n, int):
        win = ["1"] * x.rank
        win[dim] = str(n)
        pad = ", ".join(f"[{n - 1}, 0]" if i == dim else "[0, 0]" for i in range(x.rank))
        init = ctx.constant(0, out_dt)
        return ctx.op("stablehlo.reduce_window", [x, init], (x.sym_shape, out_dt), attrs={
            "window_dimensions": "array<i64: " + ", ".join(win) + ">",
            "padding": f"dense<[{pad}]> : tensor<{x.rank}x2xi64>"},
            regions=[ctx.scalar_region(out_dt, "stablehlo.add")])
    return scan_add(ctx, x, dim)


def scan_add(ctx, x, dim):
    """Inclusive prefix sum along a dynamic ``dim`` in ceil(log2 n) steps of
    O(n) (Hillis-Steele): ``y += shift(y, s)`` for s = 1, 2, 4, ... < n, in a
    ``while``. The shift gathers row ``max(i - s + 1, 0)`` of ``y`` with a zero
    row prepended (so the gather's operand is never empty, even for n = 0)."""
    from .index import gather_along

    n = x.sym_shape[dim]
    i32 = T.SHAPE_DTYPE
    pos = ctx.iota((n,), 0, i32)
    zero_row = ctx.constant(0, x.dtype, tuple(1 if i == dim else d for i, d in enumerate(x.sym_shape)))
    padded = tuple(as_dim(d + 1) if i == dim else d for i, d in enumerate(x.sym_shape))
    size = ctx.dim(n)

    def cond(c, s, y):
        return c.compare(s, size, "LT")

    def body(c, s, y):
        ypad = c.op("stablehlo.concatenate", [zero_row, y], (padded, x.dtype), attrs={"dimension": f"{dim} : i64"})
        start = c.binary("stablehlo.subtract", c.constant(1, i32), s)
        idx = c.binary("stablehlo.maximum", c.binary("stablehlo.add", pos, c.broadcast_to(start, (n,))),
                       c.constant(0, i32, (n,)))
        y = c.binary("stablehlo.add", y, gather_along(c, ypad, dim, idx, x.sym_shape))
        return [c.binary("stablehlo.multiply", s, c.constant(2, i32)), y]

    return ctx.while_loop([ctx.constant(1, i32), x], cond, body)[1]
