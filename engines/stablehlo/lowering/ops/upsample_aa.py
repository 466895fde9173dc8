"""Antialiased bilinear and bicubic resampling (``aten._upsample_{bilinear,bicubic}2d_aa``,
timm's position-embedding resize), over static or `?` sides.

Torch's CPU kernel (``_compute_indices_min_size_weights_aa`` in ATen's
``UpSampleKernel.cpp``) gives output ``i`` of a side the taps ``[xmin, xmin + xsize)``
around ``center = scale·(i + ½)``, each weighted ``filter((j - center + ½)·invscale)``
and normalised to sum 1, where the filter's support widens by ``scale`` when
downsampling. Here each side's taps are one dense ``(n_out, n_in)`` weight matrix
built from iotas (every size a run-time value, so one module serves every size) and
contracted with the input (a broadcast product and a sum); a side whose size does not change is
copied, as torch's kernel skips it.
"""

from __future__ import annotations

import torch

from ..builder import LoweringError
from ..registry import lowers
from .pool import area_scale, side_value

aten = torch.ops.aten


def _triangle(ctx, x):
    """``max(0, 1 - |x|)``: the bilinear filter (``interp_size`` 2)."""
    one = ctx.constant(1.0, x.dtype, x.sym_shape)
    return ctx.binary(
        "stablehlo.maximum",
        ctx.binary("stablehlo.subtract", one, ctx.unary("stablehlo.abs", x)),
        ctx.constant(0.0, x.dtype, x.sym_shape),
    )


def _keys_cubic(ctx, x):
    """Keys' cubic with a = -0.5 (torch's antialiased bicubic, ``interp_size`` 4):
    ``((a+2)|x| - (a+3))x² + 1`` below 1, ``((a|x| - 5a)|x| + 8a)|x| - 4a`` below 2, else 0."""
    a = -0.5
    ax = ctx.unary("stablehlo.abs", x)

    def c(v):
        return ctx.constant(v, x.dtype, x.sym_shape)

    def poly(coeffs):  # Horner in |x|
        acc = c(coeffs[0])
        for k in coeffs[1:]:
            acc = ctx.binary("stablehlo.add", ctx.binary("stablehlo.multiply", acc, ax), c(k))
        return acc

    near = poly([a + 2, -(a + 3), 0.0, 1.0])
    far = poly([a, -5 * a, 8 * a, -4 * a])
    out = ctx.select(ctx.compare(ax, c(2.0), "LT"), far, c(0.0))
    return ctx.select(ctx.compare(ax, c(1.0), "LT"), near, out)


FILTERS = {"bilinear": (2, _triangle), "bicubic": (4, _keys_cubic)}


def _weights(ctx, n_in, n_out, align_corners, scale, mode, f):
    """The ``(n_out, n_in)`` matrix of side weights (rows sum to 1, or are all 0)."""
    interp, filt = FILTERS[mode]
    shape = (n_out, n_in)
    s = area_scale(ctx, n_in, n_out, align_corners, scale, f)
    half, one = ctx.constant(interp * 0.5, f), ctx.constant(1.0, f)
    wide = ctx.compare(s, one, "GE")  # downsampling: the filter stretches by the scale
    support = ctx.select(wide, ctx.binary("stablehlo.multiply", half, s), half)
    invscale = ctx.select(wide, ctx.binary("stablehlo.divide", one, s), one)
    max_taps = ctx.binary(
        "stablehlo.add",
        ctx.binary("stablehlo.multiply", ctx.convert(ctx.unary("stablehlo.ceil", support), "i64"), ctx.constant(2, "i64")),
        ctx.constant(1, "i64"),
    )
    i, j = ctx.iota(shape, 0, f), ctx.iota(shape, 1, "i64")
    b = lambda v: ctx.broadcast_to(v, shape)  # noqa: E731
    center = ctx.binary("stablehlo.multiply", b(s), ctx.binary("stablehlo.add", i, ctx.constant(0.5, f, shape)))
    # int64 casts truncate toward zero, as torch's static_cast does
    lo = ctx.binary("stablehlo.add", ctx.binary("stablehlo.subtract", center, b(support)), ctx.constant(0.5, f, shape))
    hi = ctx.binary("stablehlo.add", ctx.binary("stablehlo.add", center, b(support)), ctx.constant(0.5, f, shape))
    xmin = ctx.binary("stablehlo.maximum", ctx.convert(lo, "i64"), ctx.constant(0, "i64", shape))
    xmax = ctx.binary("stablehlo.minimum", ctx.convert(hi, "i64"), b(side_value(ctx, n_in, "i64")))
    xsize = ctx.binary(
        "stablehlo.minimum",
        ctx.binary("stablehlo.maximum", ctx.binary("stablehlo.subtract", xmax, xmin), ctx.constant(0, "i64", shape)),
        b(max_taps),
    )
    inside = ctx.binary(
        "stablehlo.and", ctx.compare(j, xmin, "GE"), ctx.compare(j, ctx.binary("stablehlo.add", xmin, xsize), "LT")
    )
    arg = ctx.binary(
        "stablehlo.multiply",
        ctx.binary("stablehlo.add", ctx.binary("stablehlo.subtract", ctx.convert(j, f), center), ctx.constant(0.5, f, shape)),
        b(invscale),
    )
    zero = ctx.constant(0.0, f, shape)
    w = ctx.select(inside, filt(ctx, arg), zero)
    total = ctx.broadcast_to(ctx.reduce(w, [1], "add"), shape, dims=[0])
    w = ctx.select(ctx.compare(total, zero, "NE"), ctx.binary("stablehlo.divide", w, total), w)
    eye = ctx.convert(ctx.compare(ctx.iota(shape, 0, "i64"), j, "EQ"), f)
    same = ctx.compare(side_value(ctx, n_in, "i64"), side_value(ctx, n_out, "i64"), "EQ")
    return ctx.select(b(same), eye, w)


def _upsample_aa(ctx, node, x, align_corners, scales, mode):
    shape, dt = ctx.out_spec(node)
    if dt not in ("f16", "bf16", "f32", "f64"):
        raise LoweringError(f"antialiased {mode} upsampling of {dt}: torch's integer kernel rounds fixed-point weights")
    f = "f64" if dt == "f64" else "f32"
    y = ctx.convert(x, f)
    n, c, h, w = y.sym_shape
    # width first, as torch's kernel; each pass a broadcast product and a sum over a middle
    # dim: XLA's bounded padder refuses a transpose, or a consumer of a dot_general over a
    # `?` side, and XLA 0.10.2's CPU compiler gets a sum over the product's minor dim wrong
    # from 48 channels on (IREE and the interpreter right)
    ww = _weights(ctx, w, shape[3], align_corners, scales[1] if scales else None, mode, f)
    wide = (n, c, h, w, shape[3])
    y = ctx.binary("stablehlo.multiply", ctx.broadcast_to(y, wide, dims=[0, 1, 2, 3]), ctx.broadcast_to(ww, wide, dims=[4, 3]))
    y = ctx.reduce(y, [3], "add")  # (N, C, H, W_out)
    wh = _weights(ctx, h, shape[2], align_corners, scales[0] if scales else None, mode, f)
    tall = (n, c, shape[2], h, shape[3])
    y = ctx.binary("stablehlo.multiply", ctx.broadcast_to(y, tall, dims=[0, 1, 3, 4]), ctx.broadcast_to(wh, tall, dims=[2, 3]))
    y = ctx.reduce(y, [3], "add")  # (N, C, H_out, W_out)
    return ctx.convert(y, dt)


@lowers(aten._upsample_bilinear2d_aa.default)
def _bilinear_aa(ctx, node, x, output_size, align_corners, scales_h=None, scales_w=None):
    return _upsample_aa(ctx, node, x, align_corners, [scales_h, scales_w], "bilinear")


@lowers(aten._upsample_bicubic2d_aa.default)
def _bicubic_aa(ctx, node, x, output_size, align_corners, scales_h=None, scales_w=None):
    return _upsample_aa(ctx, node, x, align_corners, [scales_h, scales_w], "bicubic")


@lowers(aten._upsample_bilinear2d_aa.vec)
def _bilinear_aa_vec(ctx, node, x, output_size, align_corners, scale_factors=None):
    return _upsample_aa(ctx, node, x, align_corners, scale_factors, "bilinear")


@lowers(aten._upsample_bicubic2d_aa.vec)
def _bicubic_aa_vec(ctx, node, x, output_size, align_corners, scale_factors=None):
    return _upsample_aa(ctx, node, x, align_corners, scale_factors, "bicubic")
