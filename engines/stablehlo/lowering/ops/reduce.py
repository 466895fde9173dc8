"""Reductions: sum, mean, var, var_mean, prod, amax/amin, argmax/argmin and
max/min with indices, vector norms, any/all, softmax/log_softmax, cumsum.

Means and variances over a dynamic dim divide by the element count computed
from ``get_dimension_size`` (converted to the float type).  ``cumsum`` along a
static dim is a ``reduce_window``; along a dynamic dim (the window would be
dynamic) it is a Hillis-Steele scan unrolled to ceil(log2 bound) steps of O(n)
(31 without a bound), which XLA's dynamic padder serves (a ``while`` it cannot).
"""

from __future__ import annotations

import math

import torch

from engines import sizes

from .. import types as T
from ..builder import Value
from ..registry import lowers
from ..symbolic import as_dim
from .scan import cumsum_along

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
    x = ctx.convert(x, ctx.out_dtype(node))
    if x.rank == 0:
        return x
    return cumsum_along(ctx, x, dim % x.rank)


def arg_reduce(ctx, x, dim, kind, keepdim):
    """(values, int64 indices) of the max/min along ``dim``: the max/min (NaN where
    the row has one, as torch's), then the least index holding it (ties pick the
    first index, a NaN row its first NaN, as torch does). Two single-operand
    reductions with identity inits: a two-operand ``reduce`` over a dynamic dim is
    what XLA's dynamic padder cannot serve."""
    dt = x.dtype
    dim = dim % x.rank
    vals = ctx.reduce(x, [dim], kind, keepdim=True)
    if T.is_float(dt):  # (XLA's CPU max/min may drop NaNs: the NaN rows are found apart)
        nan = ctx.compare(x, x, "NE")
        row_nan = ctx.reduce(nan, [dim], "or", keepdim=True)
        vals = ctx.select(row_nan, ctx.constant(math.nan, dt, vals.sym_shape), vals)
    full = ctx.broadcast_to(vals, x.sym_shape)
    hit = ctx.compare(x, full, "EQ")
    if T.is_float(dt):
        hit = ctx.binary("stablehlo.or", hit, ctx.binary("stablehlo.and", nan, ctx.compare(full, full, "NE")))
    idx = ctx.select(hit, ctx.iota(x.sym_shape, dim, "i64"), ctx.constant(2**63 - 1, "i64", x.sym_shape))
    inds = ctx.reduce(idx, [dim], "min", keepdim=keepdim)
    if not keepdim:
        vals = ctx.reshape(vals, tuple(d for i, d in enumerate(x.sym_shape) if i != dim))
    return vals, inds


def _arg(kind):
    def fn(ctx, node, x, dim=None, keepdim=False):
        if dim is None:
            x = ctx.reshape(x, (_flat_size(x),))
            dim = 0
        _, inds = arg_reduce(ctx, x, dim, kind, keepdim)
        return ctx.reshape(inds, ctx.out_shape(node))

    return fn


def _flat_size(x):
    return as_dim(math.prod(x.sym_shape, start=sizes.const(1)))


lowers(aten.argmax.default)(_arg("max"))
lowers(aten.argmin.default)(_arg("min"))


@lowers(aten.max.dim)
def _max_dim(ctx, node, x, dim, keepdim=False):
    return list(arg_reduce(ctx, x, dim, "max", keepdim))


@lowers(aten.min.dim)
def _min_dim(ctx, node, x, dim, keepdim=False):
    return list(arg_reduce(ctx, x, dim, "min", keepdim))


@lowers(aten.prod.dim_int, aten.prod.default)
def _prod(ctx, node, x, dim=None, keepdim=False, dtype=None):
    r = ctx.reduce(x, _dims(x, dim), "mul", keepdim=keepdim, dtype=ctx.out_dtype(node))
    return ctx.reshape(r, ctx.out_shape(node))


@lowers(aten.var_mean.correction)
def _var_mean(ctx, node, x, dims=None, *, correction=None, keepdim=False):
    correction = 1 if correction is None else correction
    v, m = variance(ctx, x, _dims(x, dims), correction, keepdim, ctx.out_dtype(node, 0))
    return [ctx.reshape(v, ctx.out_shape(node, 0)), ctx.reshape(m, ctx.out_shape(node, 1))]


@lowers(aten.linalg_vector_norm.default)
def _vector_norm(ctx, node, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    dt = ctx.out_dtype(node)
    a = ctx.unary("stablehlo.abs", ctx.convert(x, dt))
    d = _dims(x, dim)
    if isinstance(ord, Value):  # a symbolic ord (a size, so >= 2 here): the p-norm at run time
        p = ctx.broadcast_to(ctx.convert(ord, dt), a.sym_shape)
        s = ctx.reduce(ctx.binary("stablehlo.power", a, p), d, "add", keepdim=keepdim)
        inv = ctx.binary("stablehlo.divide", ctx.constant(1.0, dt), ctx.convert(ord, dt))
        r = ctx.binary("stablehlo.power", s, ctx.broadcast_to(inv, s.sym_shape))
    elif ord == math.inf or ord == -math.inf:
        r = ctx.reduce(a, d, "max" if ord > 0 else "min", keepdim=keepdim)
    elif ord == 0:
        r = ctx.reduce(ctx.convert(ctx.compare(a, ctx.constant(0, dt, a.sym_shape), "NE"), dt), d, "add", keepdim=keepdim)
    elif ord == 1:
        r = ctx.reduce(a, d, "add", keepdim=keepdim)
    elif ord == 2:
        r = ctx.unary("stablehlo.sqrt", ctx.reduce(ctx.binary("stablehlo.multiply", a, a), d, "add", keepdim=keepdim))
    else:
        p = ctx.binary("stablehlo.power", a, ctx.constant(float(ord), dt, a.sym_shape))
        s = ctx.reduce(p, d, "add", keepdim=keepdim)
        r = ctx.binary("stablehlo.power", s, ctx.constant(1.0 / float(ord), dt, s.sym_shape))
    return ctx.reshape(r, ctx.out_shape(node))
