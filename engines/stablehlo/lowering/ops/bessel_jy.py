"""Bessel functions of the first and second kind, orders 0 and 1 (``special.bessel_j0``,
``_j1``, ``_y0``, ``_y1``) as torch's kernels compute them (``ATen/native/Math.h``:
``bessel_j0_forward``, ...; Cephes' ``j0.c``/``j1.c``): a rational function of ``x^2`` up to 5,
Hankel's asymptotic form beyond (``P cos(x - phase) - Q sin(x - phase)``, ``P`` and ``Q``
rational in ``25 / x^2``), each at the input's precision (f32 stays f32, as torch's does).
Y_n below 5 adds ``2/pi log(x) J_n(x)``: -inf at 0, NaN below."""

from __future__ import annotations

import math

import torch

from ..registry import lowers
from .special import _add, _c, _compute_dtype, _div, _mul, _poly, _sub

aten = torch.ops.aten
prims = torch.ops.prims

# Cephes' coefficients (torch's Math.h tables), highest power first
# fmt: off
J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e00,
         5.44725003058768775090e00, 8.74716500199817011941e00, 5.30324038235394892183e00,
         9.99999999999999997821e-01)
J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e00,
         5.47097740330417105182e00, 8.76190883237069594232e00, 5.30605288235394617618e00,
         1.00000000000000000218e00)
J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e00, -1.95539544257735972385e01,
         -9.32060152123768231369e01, -1.77681167980488050595e02, -1.47077505154951170175e02,
         -5.14105326766599330220e01, -6.05014350600728481186e00)
J0_QQ = (6.43178256118178023184e01, 8.56430025976980587198e02, 3.88240183605401609683e03,
         7.24046774195652478189e03, 5.93072701187316984827e03, 2.06209331660327847417e03,
         2.42005740240291393179e02)
J0_RP = (-4.79443220978201773821e09, 1.95617491946556577543e12, -2.49248344360967716204e14,
         9.70862251047306323952e15)
J0_RQ = (4.99563147152651017219e02, 1.73785401676374683123e05, 4.84409658339962045305e07,
         1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
         3.18121955943204943306e16, 1.71086294081043136091e18)
J0_ZEROS_SQ = (5.78318596294678452118e00, 3.04712623436620863991e01)
Y0_YP = (1.55924367855235737965e04, -1.46639295903971606143e07, 5.43526477051876500413e09,
         -9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15,
         4.42733268572569800351e16, -1.84950800436986690637e16)
Y0_YQ = (1.04128353664259848412e03, 6.26107330137134956842e05, 2.68919633393814121987e08,
         8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15,
         2.50596256172653059228e17)
J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e00,
         5.11207951146807644818e00, 8.42404590141772420927e00, 5.21451598682361504063e00,
         1.00000000000000000254e00)
J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e00,
         5.07386386128601488557e00, 8.39985554327604159757e00, 5.20982848682361821619e00,
         9.99999999999999997461e-01)
J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e00, 7.58238284132545283818e01,
         3.66779609360150777800e02, 7.10856304998926107277e02, 5.97489612400613639965e02,
         2.11688757100572135698e02, 2.52070205858023719784e01)
J1_QQ = (7.42373277035675149943e01, 1.05644886038262816351e03, 4.98641058337653607651e03,
         9.56231892404756170795e03, 7.99704160447350683650e03, 2.82619278517639096600e03,
         3.36093607810698293419e02)
J1_RP = (-8.99971225705559398224e08, 4.52228297998194034323e11, -7.27494245221818276015e13,
         3.68295732863852883286e15)
J1_RQ = (6.20836478118054335476e02, 2.56987256757748830383e05, 8.35146791431949253037e07,
         2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
         8.95222336184627338078e16, 5.32278620332680085395e18)
J1_ZEROS_SQ = (1.46819706421238932572e01, 4.92184563216946036703e01)
Y1_YP = (1.26320474790178026440e09, -6.47355876379160291031e11, 1.14509511541823727583e14,
         -8.12770255501325109621e15, 2.02439475713594898196e17, -7.78877196265950026825e17)
Y1_YQ = (5.94301592346128195359e02, 2.35564092943068577943e05, 7.34811944459721705660e07,
         1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14,
         6.87141087355300489866e16, 3.97270608116560655612e18)
# fmt: on
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TWO_OVER_PI = 2.0 / math.pi


def _hankel(ctx, a, order: int, second_kind: bool):
    """The asymptotic form for ``a > 5``: (P cos(a - phase) - 5/a Q sin(a - phase)) sqrt(2/(pi a))
    (J_n); sin and cos swapped, the Q term added (Y_n); phase = (2n + 1) pi / 4."""
    pp, pq, qp, qq = (J0_PP, J0_PQ, J0_QP, J0_QQ) if order == 0 else (J1_PP, J1_PQ, J1_QP, J1_QQ)
    five_a = _div(ctx, _c(ctx, a, 5.0), a)
    w = _mul(ctx, five_a, five_a)
    p = _div(ctx, _poly(ctx, w, pp), _poly(ctx, w, pq))
    q = _mul(ctx, five_a, _div(ctx, _poly(ctx, w, qp), _poly(ctx, w, qq)))
    t = _sub(ctx, a, _c(ctx, a, (2 * order + 1) * math.pi / 4))
    sin, cos = ctx.unary("stablehlo.sine", t), ctx.unary("stablehlo.cosine", t)
    if second_kind:
        r = _add(ctx, _mul(ctx, p, sin), _mul(ctx, q, cos))
    else:
        r = _sub(ctx, _mul(ctx, p, cos), _mul(ctx, q, sin))
    return _div(ctx, _mul(ctx, r, _c(ctx, a, _SQRT_2_OVER_PI)), ctx.unary("stablehlo.sqrt", a))


def _five(ctx, a):
    return ctx.compare(a, _c(ctx, a, 5.0), "LE")


def j0(ctx, x):
    """J0: even; ``1 - x^2/4`` below 1e-5, ``(z - r1)(z - r2) RP(z)/RQ(z)`` (z = x^2) to 5."""
    a = ctx.unary("stablehlo.abs", x)
    z = _mul(ctx, a, a)
    near = _mul(ctx, _sub(ctx, z, _c(ctx, z, J0_ZEROS_SQ[0])), _sub(ctx, z, _c(ctx, z, J0_ZEROS_SQ[1])))
    near = _mul(ctx, near, _div(ctx, _poly(ctx, z, J0_RP), _poly(ctx, z, J0_RQ)))
    tiny = _sub(ctx, _c(ctx, z, 1.0), _div(ctx, z, _c(ctx, z, 4.0)))
    near = ctx.select(ctx.compare(a, _c(ctx, a, 1e-5), "LT"), tiny, near)
    return ctx.select(_five(ctx, a), near, _hankel(ctx, a, 0, False))


def j1(ctx, x):
    """J1: odd (the near form has ``x``'s sign, -0.0 kept; the far one takes it)."""
    a = ctx.unary("stablehlo.abs", x)
    z = _mul(ctx, x, x)
    near = _mul(ctx, _div(ctx, _poly(ctx, z, J1_RP), _poly(ctx, z, J1_RQ)), x)
    near = _mul(ctx, near, _sub(ctx, z, _c(ctx, z, J1_ZEROS_SQ[0])))
    near = _mul(ctx, near, _sub(ctx, z, _c(ctx, z, J1_ZEROS_SQ[1])))
    far = _hankel(ctx, a, 1, False)
    far = ctx.select(ctx.compare(x, _c(ctx, x, 0.0), "LT"), ctx.unary("stablehlo.negate", far), far)
    return ctx.select(_five(ctx, a), near, far)


def _y_domain(ctx, x, r):
    """-inf at 0, NaN below (both in the near branch: ``x <= 5``)."""
    zero = _c(ctx, x, 0.0)
    r = ctx.select(ctx.compare(x, zero, "LT"), _c(ctx, x, math.nan), r)
    return ctx.select(ctx.compare(x, zero, "EQ"), _c(ctx, x, -math.inf), r)


def y0(ctx, x):
    """Y0: ``YP(z)/YQ(z) + 2/pi log(x) J0(x)`` to 5, Hankel's form beyond."""
    z = _mul(ctx, x, x)
    log_j = _mul(ctx, _mul(ctx, _c(ctx, x, _TWO_OVER_PI), ctx.unary("stablehlo.log", x)), j0(ctx, x))
    near = _y_domain(ctx, x, _add(ctx, _div(ctx, _poly(ctx, z, Y0_YP), _poly(ctx, z, Y0_YQ)), log_j))
    return ctx.select(_five(ctx, x), near, _hankel(ctx, x, 0, True))


def y1(ctx, x):
    """Y1: ``x YP(z)/YQ(z) + 2/pi (J1(x) log(x) - 1/x)`` to 5, Hankel's form beyond."""
    z = _mul(ctx, x, x)
    rational = _mul(ctx, x, _div(ctx, _poly(ctx, z, Y1_YP), _poly(ctx, z, Y1_YQ)))
    log_j = _sub(ctx, _mul(ctx, j1(ctx, x), ctx.unary("stablehlo.log", x)), _div(ctx, _c(ctx, x, 1.0), x))
    near = _y_domain(ctx, x, _add(ctx, rational, _mul(ctx, _c(ctx, x, _TWO_OVER_PI), log_j)))
    return ctx.select(_five(ctx, x), near, _hankel(ctx, x, 1, True))


def _register(fn, *ops) -> None:
    def lower(ctx, node, a):
        dt = ctx.out_dtype(node)
        return ctx.convert(fn(ctx, ctx.tensor(a, _compute_dtype(dt))), dt)

    lowers(*ops)(lower)


_register(j0, aten.special_bessel_j0.default, prims.bessel_j0.default)
_register(j1, aten.special_bessel_j1.default, prims.bessel_j1.default)
_register(y0, aten.special_bessel_y0.default)
_register(y1, aten.special_bessel_y1.default)
