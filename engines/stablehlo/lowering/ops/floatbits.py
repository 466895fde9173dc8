"""Ops on a float's bit fields: ``frexp`` (mantissa in [0.5, 1) and exponent) and ``nextafter``
(the next representable float towards another), with integer ops on the bits
(``bitcast_convert``), so subnormals are exact whatever the backend's flush-to-zero mode."""

from __future__ import annotations

import torch

from ..registry import lowers
from .special import _c

aten = torch.ops.aten
prims = torch.ops.prims

#: dtype -> (its bits' integer type, width, mantissa bits, exponent bias)
LAYOUT = {"f64": ("i64", 64, 52, 1023), "f32": ("i32", 32, 23, 127), "f16": ("i16", 16, 10, 15), "bf16": ("i16", 16, 7, 127)}


def _bits(ctx, x):
    it = LAYOUT[x.dtype][0]
    return ctx.op("stablehlo.bitcast_convert", [x], (x.sym_shape, it))


def _and(ctx, a, b):
    return ctx.binary("stablehlo.and", a, b)


def _or(ctx, a, b):
    return ctx.binary("stablehlo.or", a, b)


def frexp(ctx, x):
    """(mantissa, exponent) with ``x = mantissa * 2^exponent``: the exponent field set to the
    bias - 1 (a subnormal's mantissa shifted up to its leading bit first); 0, inf and NaN are
    their own mantissa, with exponent 0."""
    _, width, nm, bias = LAYOUT[x.dtype]
    b = _bits(ctx, x)
    sign = _and(ctx, b, _c(ctx, b, -(1 << (width - 1))))
    field = _and(ctx, ctx.binary("stablehlo.shift_right_logical", b, _c(ctx, b, nm)), _c(ctx, b, (1 << (width - 1 - nm)) - 1))
    frac = _and(ctx, b, _c(ctx, b, (1 << nm) - 1))
    half = _or(ctx, sign, _c(ctx, b, (bias - 1) << nm))  # 0.5 with x's sign
    # subnormal: the leading bit of frac at position p
    p = ctx.binary("stablehlo.subtract", _c(ctx, b, width - 1), ctx.unary("stablehlo.count_leading_zeros", frac))
    shifted = _and(
        ctx,
        ctx.binary("stablehlo.shift_left", frac, ctx.binary("stablehlo.subtract", _c(ctx, b, nm), p)),
        _c(ctx, b, (1 << nm) - 1),
    )
    zero = _c(ctx, b, 0)
    sub = ctx.compare(field, zero, "EQ")
    mant = ctx.select(sub, _or(ctx, half, shifted), _or(ctx, half, frac))
    exp = ctx.select(
        sub,
        ctx.binary("stablehlo.subtract", p, _c(ctx, b, bias - 2 + nm)),
        ctx.binary("stablehlo.subtract", field, _c(ctx, b, bias - 1)),
    )
    special = ctx.binary(
        "stablehlo.or",
        ctx.compare(field, _c(ctx, b, (1 << (width - 1 - nm)) - 1), "EQ"),
        ctx.binary("stablehlo.and", sub, ctx.compare(frac, zero, "EQ")),
    )
    mant = ctx.select(special, x, ctx.op("stablehlo.bitcast_convert", [mant], (x.sym_shape, x.dtype)))
    return mant, ctx.convert(ctx.select(special, zero, exp), "i32")


@lowers(aten.frexp.Tensor, prims.frexp.default)
def _frexp(ctx, node, a):
    dt = ctx.out_dtype(node, 0)
    x = ctx.tensor(a, "f32" if dt in ("f16", "bf16") else dt)  # (f32 holds their subnormals as normals)
    mant, exp = frexp(ctx, x)
    return ctx.convert(mant, dt), ctx.convert(exp, ctx.out_dtype(node, 1))


def _order_key(ctx, b, width):
    """An integer whose order is the float's (sign-magnitude bits to two's complement; -0 = +0):
    comparisons of the floats themselves would see subnormals as 0 where the backend flushes."""
    mag = _and(ctx, b, _c(ctx, b, (1 << (width - 1)) - 1))
    return ctx.select(ctx.compare(b, _c(ctx, b, 0), "LT"), ctx.unary("stablehlo.negate", mag), mag)


def nextafter(ctx, x, y):
    """The float after ``x`` towards ``y``: ``y`` where equal, NaN where either is, the least
    subnormal with ``y``'s sign from 0, else ``x``'s bits one up (away from 0) or down."""
    b, by = _bits(ctx, x), _bits(ctx, y)
    width = LAYOUT[x.dtype][1]
    kx, ky = _order_key(ctx, b, width), _order_key(ctx, by, width)
    zero = _c(ctx, b, 0)
    away = ctx.compare(ctx.compare(ky, kx, "GT"), ctx.compare(kx, zero, "GT"), "EQ")
    step = ctx.binary("stablehlo.add", b, ctx.select(away, _c(ctx, b, 1), _c(ctx, b, -1)))
    tiny = _or(ctx, _and(ctx, by, _c(ctx, b, -(1 << (width - 1)))), _c(ctx, b, 1))
    out = ctx.select(ctx.compare(kx, zero, "EQ"), tiny, step)
    out = ctx.select(ctx.compare(kx, ky, "EQ"), by, out)
    out = ctx.op("stablehlo.bitcast_convert", [out], (x.sym_shape, x.dtype))
    nan = ctx.binary("stablehlo.or", ctx.compare(x, x, "NE"), ctx.compare(y, y, "NE"))
    return ctx.select(nan, ctx.binary("stablehlo.add", x, y), out)


@lowers(aten.nextafter.default, prims.nextafter.default)
def _nextafter(ctx, node, a, b):
    dt = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    return nextafter(ctx, ctx.tensor(a, dt, shape), ctx.tensor(b, dt, shape))
