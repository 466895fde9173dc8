"""Modified Bessel functions of the first kind, orders 0 and 1 (``i0``, ``i1``, their
exponentially scaled ``i0e``, ``i1e``, and ``special.modified_bessel_i0``/``_i1``, the same
functions): Cephes' Chebyshev expansions, as torch's kernels (``ATen/native/Math.h``: ``calc_i0``,
``calc_i1e``, ...) compute them -- one expansion on ``[0, 8]`` in ``x / 2 - 2``, another beyond in
``32 / x - 2`` -- with torch's coefficient tables (the double ones: an f32 input is computed in f32
with every term), each summed by Clenshaw's recurrence unrolled (:func:`chbevl`)."""

from __future__ import annotations

import torch

from ..registry import lowers
from .special import _add, _c, _compute_dtype, _div, _mul, _sub

aten = torch.ops.aten
prims = torch.ops.prims

# Cephes' coefficients, as torch's Math.h lists them (chebyshev_coefficients_i0e_A, ...)
I0E_A = (
    -4.4153416464793395e-18,
    3.3307945188222384e-17,
    -2.431279846547955e-16,
    1.715391285555133e-15,
    -1.1685332877993451e-14,
    7.676185498604936e-14,
    -4.856446783111929e-13,
    2.95505266312964e-12,
    -1.726826291441556e-11,
    9.675809035373237e-11,
    -5.189795601635263e-10,
    2.6598237246823866e-09,
    -1.300025009986248e-08,
    6.046995022541919e-08,
    -2.670793853940612e-07,
    1.1173875391201037e-06,
    -4.4167383584587505e-06,
    1.6448448070728896e-05,
    -5.754195010082104e-05,
    0.00018850288509584165,
    -0.0005763755745385824,
    0.0016394756169413357,
    -0.004324309995050576,
    0.010546460394594998,
    -0.02373741480589947,
    0.04930528423967071,
    -0.09490109704804764,
    0.17162090152220877,
    -0.3046826723431984,
    0.6767952744094761,
)
I0E_B = (
    -7.233180487874754e-18,
    -4.830504485944182e-18,
    4.46562142029676e-17,
    3.461222867697461e-17,
    -2.8276239805165836e-16,
    -3.425485619677219e-16,
    1.7725601330565263e-15,
    3.8116806693526224e-15,
    -9.554846698828307e-15,
    -4.150569347287222e-14,
    1.54008621752141e-14,
    3.8527783827421426e-13,
    7.180124451383666e-13,
    -1.7941785315068062e-12,
    -1.3215811840447713e-11,
    -3.1499165279632416e-11,
    1.1889147107846439e-11,
    4.94060238822497e-10,
    3.3962320257083865e-09,
    2.266668990498178e-08,
    2.0489185894690638e-07,
    2.8913705208347567e-06,
    6.889758346916825e-05,
    0.0033691164782556943,
    0.8044904110141088,
)
I1E_A = (
    2.7779141127610464e-18,
    -2.111421214358166e-17,
    1.5536319577362005e-16,
    -1.1055969477353862e-15,
    7.600684294735408e-15,
    -5.042185504727912e-14,
    3.223793365945575e-13,
    -1.9839743977649436e-12,
    1.1736186298890901e-11,
    -6.663489723502027e-11,
    3.625590281552117e-10,
    -1.8872497517228294e-09,
    9.381537386495773e-09,
    -4.445059128796328e-08,
    2.0032947535521353e-07,
    -8.568720264695455e-07,
    3.4702513081376785e-06,
    -1.3273163656039436e-05,
    4.781565107550054e-05,
    -0.00016176081582589674,
    0.0005122859561685758,
    -0.0015135724506312532,
    0.004156422944312888,
    -0.010564084894626197,
    0.024726449030626516,
    -0.05294598120809499,
    0.1026436586898471,
    -0.17641651835783406,
    0.25258718644363365,
)
I1E_B = (
    7.517296310842105e-18,
    4.414348323071708e-18,
    -4.6503053684893586e-17,
    -3.209525921993424e-17,
    2.96262899764595e-16,
    3.3082023109209285e-16,
    -1.8803547755107825e-15,
    -3.8144030724370075e-15,
    1.0420276984128802e-14,
    4.272440016711951e-14,
    -2.1015418427726643e-14,
    -4.0835511110921974e-13,
    -7.198551776245908e-13,
    2.0356285441470896e-12,
    1.4125807436613782e-11,
    3.2526035830154884e-11,
    -1.8974958123505413e-11,
    -5.589743462196584e-10,
    -3.835380385964237e-09,
    -2.6314688468895196e-08,
    -2.512236237870209e-07,
    -3.882564808877691e-06,
    -0.00011058893876262371,
    -0.009761097491361469,
    0.7785762350182801,
)


def chbevl(ctx, y, coeffs):
    """Cephes' ``chbevl``: the Chebyshev series ``coeffs`` at ``y`` (Clenshaw), unrolled."""
    b0, b1, b2 = _c(ctx, y, coeffs[0]), _c(ctx, y, 0.0), _c(ctx, y, 0.0)
    for a in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = _add(ctx, _sub(ctx, _mul(ctx, y, b1), b2), _c(ctx, y, a))
    return _mul(ctx, _c(ctx, y, 0.5), _sub(ctx, b0, b2))


def scaled(ctx, x, order: int):
    """(``i0e(a)`` or ``i1e(a)``, ``a``) of ``a = |x|``: the expansion on ``[0, 8]`` or beyond it."""
    a = ctx.unary("stablehlo.abs", x)
    near_a, far_b = (I0E_A, I0E_B) if order == 0 else (I1E_A, I1E_B)
    near = chbevl(ctx, _sub(ctx, _div(ctx, a, _c(ctx, a, 2.0)), _c(ctx, a, 2.0)), near_a)
    if order == 1:
        near = _mul(ctx, near, a)
    far_y = _sub(ctx, _div(ctx, _c(ctx, a, 32.0), a), _c(ctx, a, 2.0))
    far = _div(ctx, chbevl(ctx, far_y, far_b), ctx.unary("stablehlo.sqrt", a))
    return ctx.select(ctx.compare(a, _c(ctx, a, 8.0), "LE"), near, far), a


def bessel(ctx, x, order: int, exp_scaled: bool):
    """I_order(x), or e^-|x| I_order(x) where ``exp_scaled``; I1 odd (the sign of ``x``)."""
    s, a = scaled(ctx, x, order)
    out = s if exp_scaled else _mul(ctx, ctx.unary("stablehlo.exponential", a), s)
    if order == 1:
        out = ctx.select(ctx.compare(x, _c(ctx, x, 0.0), "LT"), ctx.unary("stablehlo.negate", out), out)
    return out


def _register(order: int, exp_scaled: bool, *ops) -> None:
    def lower(ctx, node, a):
        dt = ctx.out_dtype(node)
        return ctx.convert(bessel(ctx, ctx.tensor(a, _compute_dtype(dt)), order, exp_scaled), dt)

    lowers(*ops)(lower)


_register(0, False, aten.i0.default, prims.bessel_i0.default, aten.special_modified_bessel_i0.default)
_register(0, True, aten.special_i0e.default, prims.bessel_i0e.default)
_register(1, False, aten.special_i1.default, prims.bessel_i1.default, aten.special_modified_bessel_i1.default)
_register(1, True, aten.special_i1e.default, prims.bessel_i1e.default)
