"""Modified Bessel functions of the second kind, orders 0 and 1 (``special.modified_bessel_k0``,
``_k1``, and their ``scaled_`` forms ``e^x K_n(x)``) as torch's kernels compute them
(``ATen/native/Math.h``, Cephes' ``k0.c``/``k1.c``): a Chebyshev series in ``x^2 - 2`` plus the
``log(x/2) I_n(x)`` term up to 2, another in ``8/x - 2`` over ``sqrt(x)`` beyond; inf at 0, NaN
below."""

from __future__ import annotations

import math

import torch

from ..registry import lowers
from .bessel import bessel, chbevl
from .special import _add, _c, _compute_dtype, _div, _mul, _sub

aten = torch.ops.aten

# Cephes' Chebyshev coefficients (torch's Math.h tables)
# fmt: off
K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
        1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
        1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
        -5.35327393233902768720e-01)
K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
        -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
        6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
        -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
        1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
        -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
        2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
        -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
        2.44030308206595545468e00)
K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
        -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
        -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
        -3.53155960776544875667e-01, 1.52530022733894777053e00)
K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
        1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
        -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
        3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
        -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
        2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
        -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
        1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
        2.72062619048444266945e00)
# fmt: on


def bessel_k(ctx, x, order: int, exp_scaled: bool):
    """K_order(x), or ``e^x K_order(x)`` where ``exp_scaled``."""
    near_a, far_b = (K0_A, K0_B) if order == 0 else (K1_A, K1_B)
    series = chbevl(ctx, _sub(ctx, _mul(ctx, x, x), _c(ctx, x, 2.0)), near_a)
    log_i = _mul(ctx, ctx.unary("stablehlo.log", _mul(ctx, _c(ctx, x, 0.5), x)), bessel(ctx, x, order, False))
    near = _sub(ctx, series, log_i) if order == 0 else _add(ctx, log_i, _div(ctx, series, x))
    far = _div(ctx, chbevl(ctx, _sub(ctx, _div(ctx, _c(ctx, x, 8.0), x), _c(ctx, x, 2.0)), far_b), ctx.unary("stablehlo.sqrt", x))
    if exp_scaled:
        near = _mul(ctx, near, ctx.unary("stablehlo.exponential", x))
    else:
        far = _mul(ctx, far, ctx.unary("stablehlo.exponential", ctx.unary("stablehlo.negate", x)))
    zero = _c(ctx, x, 0.0)
    out = ctx.select(ctx.compare(x, _c(ctx, x, 2.0), "LE"), near, far)
    out = ctx.select(ctx.compare(x, zero, "LT"), _c(ctx, x, math.nan), out)
    return ctx.select(ctx.compare(x, zero, "EQ"), _c(ctx, x, math.inf), out)


def _register(order: int, exp_scaled: bool, op) -> None:
    def lower(ctx, node, a):
        dt = ctx.out_dtype(node)
        return ctx.convert(bessel_k(ctx, ctx.tensor(a, _compute_dtype(dt)), order, exp_scaled), dt)

    lowers(op)(lower)


_register(0, False, aten.special_modified_bessel_k0.default)
_register(1, False, aten.special_modified_bessel_k1.default)
_register(0, True, aten.special_scaled_modified_bessel_k0.default)
_register(1, True, aten.special_scaled_modified_bessel_k1.default)
