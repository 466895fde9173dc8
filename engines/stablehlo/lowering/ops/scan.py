"""Scans along a dim: prefix sums (``reduce_window`` where the dim is static, an
unrolled Hillis-Steele scan of gathers where it is dynamic: what XLA's dynamic
padder can serve), and the same scan of any associative operator on tuples of
values: ``cummax``/``cummin`` (value and index), ``logcumsumexp``."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import types as T
from ..registry import lowers
from ..symbolic import as_dim
from .gather import gather_along

aten = torch.ops.aten


def cumsum_along(ctx, x, dim):
    """Inclusive prefix sum of ``x`` along ``dim`` (in ``x``'s dtype)."""
    out_dt = x.dtype
    n = x.sym_shape[dim]
    if isinstance(n, int):
        win = ["1"] * x.rank
        win[dim] = str(n)
        pad = ", ".join(f"[{n - 1}, 0]" if i == dim else "[0, 0]" for i in range(x.rank))
        init = ctx.constant(0, out_dt)
        return ctx.op(
            "stablehlo.reduce_window",
            [x, init],
            (x.sym_shape, out_dt),
            attrs={
                "window_dimensions": "array<i64: " + ", ".join(win) + ">",
                "padding": f"dense<[{pad}]> : tensor<{x.rank}x2xi64>",
            },
            regions=[ctx.scalar_region(out_dt, "stablehlo.add")],
        )
    return scan_add(ctx, x, dim)


#: steps of the unrolled scan over a dim with no bound: sizes are i32, so n < 2**31
MAX_SCAN_STEPS = 31


def scan_add(ctx, x, dim):
    """Inclusive prefix sum along a dynamic ``dim``: :func:`scan` of ``add``."""
    return scan(ctx, [x], dim, lambda ctx, a, b: [ctx.binary("stablehlo.add", a[0], b[0])], [0])[0]


def scan(ctx, xs, dim, combine, identities):
    """Inclusive scan of the values ``xs`` (one shape) along ``dim`` (Hillis-Steele): ``y =
    combine(shift(y, s), y)`` for s = 1, 2, 4, ..., ``combine(ctx, earlier, later)`` an
    associative operator on lists of Values. The shift gathers row ``max(i - s + 1, 0)`` of
    ``y`` with a row of ``identities`` (one scalar per value, ``combine``'s identity on the
    left) prepended, so the gather's operand is never empty, even for n = 0, and a step with
    ``s >= n`` combines identities.

    The steps are unrolled, no ``while``: ceil(log2 n) of them where ``n`` is static or has
    a bound, else :data:`MAX_SCAN_STEPS`. A loop carrying a dynamic dim is what XLA's dynamic
    padder cannot serve; straight-line gathers it can, so the bounded and bucketed executors
    compile the scan once (each step O(n))."""
    shape = xs[0].sym_shape
    n = shape[dim]
    bound = n if isinstance(n, int) else ctx.bound_of(n) if ctx.bounded else None
    steps = MAX_SCAN_STEPS if bound is None else max(bound - 1, 0).bit_length()
    i32 = T.SHAPE_DTYPE
    pos = ctx.iota((n,), 0, i32)
    row = tuple(1 if i == dim else d for i, d in enumerate(shape))
    padded = tuple(as_dim(d + 1) if i == dim else d for i, d in enumerate(shape))
    firsts = [ctx.constant(e, x.dtype, row) for x, e in zip(xs, identities, strict=True)]
    zero = ctx.constant(0, i32, (n,))
    ys = list(xs)
    for k in range(steps):
        idx = ctx.binary("stablehlo.maximum", ctx.binary("stablehlo.add", pos, ctx.constant(1 - 2**k, i32, (n,))), zero)
        shifted = []
        for first, y in zip(firsts, ys, strict=True):
            ypad = ctx.op("stablehlo.concatenate", [first, y], (padded, y.dtype), attrs={"dimension": f"{dim} : i64"})
            shifted.append(gather_along(ctx, ypad, dim, idx, shape))
        ys = combine(ctx, shifted, ys)
    return ys


def _is_nan(ctx, v):
    return ctx.compare(v, v, "NE")


def _cum_extreme(kind):
    """``cummax``/``cummin``: (value, int64 index) pairs scanned with torch's rule: a later
    element takes over when it is NaN, or neither is NaN and it is >= (<=) the running one
    (ties go to the last index; a NaN, once met, stays, its index the last NaN's)."""
    direction = "GE" if kind == "max" else "LE"

    def combine(ctx, earlier, later):
        (v1, i1), (v2, i2) = earlier, later
        take = ctx.compare(v2, v1, direction)
        if T.is_float(v1.dtype):
            take = ctx.binary(
                "stablehlo.or", _is_nan(ctx, v2), ctx.binary("stablehlo.and", ctx.unary("stablehlo.not", _is_nan(ctx, v1)), take)
            )
        return [ctx.select(take, v2, v1), ctx.select(take, i2, i1)]

    def lower(ctx, node, x, dim):
        shape = x.sym_shape
        if x.rank == 0:
            return x, ctx.constant(0, "i64")
        dim %= x.rank
        dt = x.dtype
        if T.is_float(dt):
            worst = -math.inf if kind == "max" else math.inf
        else:
            info = np.iinfo(T.MLIR_TO_NUMPY[dt]) if dt != "i1" else None
            worst = (info.min if kind == "max" else info.max) if info is not None else (kind != "max")
        vals, inds = scan(ctx, [x, ctx.iota(shape, dim, "i64")], dim, combine, [worst, -1])
        return vals, inds

    return lower


_lower_cummax = lowers(aten.cummax.default)(_cum_extreme("max"))
_lower_cummin = lowers(aten.cummin.default)(_cum_extreme("min"))


def _log_add_exp(ctx, earlier, later):
    """torch's ``_log_add_exp_helper``: ``max + log1p(exp(min - max))`` unless both are the
    same infinity (or NaN), which is then the result as it is."""
    a, b = earlier[0], later[0]
    lo, hi = ctx.binary("stablehlo.minimum", a, b), ctx.binary("stablehlo.maximum", a, b)
    finite = ctx.op("stablehlo.is_finite", [lo], (lo.sym_shape, "i1"))
    ok = ctx.binary("stablehlo.or", ctx.compare(lo, hi, "NE"), finite)
    s = ctx.binary(
        "stablehlo.add",
        hi,
        ctx.unary("stablehlo.log_plus_one", ctx.unary("stablehlo.exponential", ctx.binary("stablehlo.subtract", lo, hi))),
    )
    # (XLA's CPU maximum/minimum may drop a NaN: a NaN operand is the result)
    nan = ctx.binary("stablehlo.or", _is_nan(ctx, a), _is_nan(ctx, b))
    return [ctx.select(nan, ctx.binary("stablehlo.add", a, b), ctx.select(ok, s, a))]


@lowers(aten.logcumsumexp.default)
def _logcumsumexp(ctx, node, x, dim):
    dt = ctx.out_dtype(node)
    x = ctx.convert(x, dt)
    if x.rank == 0:
        return x
    return scan(ctx, [x], dim % x.rank, _log_add_exp, [-math.inf])[0]
