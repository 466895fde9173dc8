"""The Airy function ``special.airy_ai`` as torch's kernel computes it (``airy_ai_forward`` in
``ATen/native/Math.h``, Cephes' ``airy.c``), at the input's precision as torch's (its phase
``zeta`` for large negative ``x`` is only as exact as that precision): below -2.09 the
oscillating asymptotic form (rational in ``1/zeta^2``, ``zeta = 2/3 |x|^(3/2)``), from 2.09 the
decaying one (0 beyond 103.892), between them the Maclaurin series ``c1 f(x) - c2 g(x)``,
its terms unrolled (:data:`SERIES_TERMS`: torch sums until a term is below epsilon, which
``|x^3| < 9.2`` reaches within 12 terms even in f64). NaN at +-inf, as torch gives."""

from __future__ import annotations

import math

import torch

from ..registry import lowers
from .special import _add, _c, _compute_dtype, _div, _mul, _poly, _sub

aten = torch.ops.aten

# fmt: off
AN = (3.46538101525629032477e-01, 1.20075952739645805542e01, 7.62796053615234516538e01,
      1.68089224934630576269e02, 1.59756391350164413639e02, 7.05360906840444183113e01,
      1.40264691163389668864e01, 9.99999999999999995305e-01)
AD = (5.67594532638770212846e-01, 1.47562562584847203173e01, 8.45138970141474626562e01,
      1.77318088145400459522e02, 1.64234692871529701831e02, 7.14778400825575695274e01,
      1.40959135607834029598e01, 1.00000000000000000470e00)
AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
       -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
       -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
AFD = (1.33560420706553243746e01, 3.26825032795224613948e01, 2.67367040941499554804e01,
       9.18707402907259625840e00, 1.47529146771666414581e00, 1.15687173795188044134e-01,
       4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e00,
       9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
       5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
       8.11789239554389293311e-08, 3.41551784765923618484e-10)
AGD = (9.30892908077441974853e00, 1.98352928718312140417e01, 1.55646628932864612953e01,
       5.47686069422975497931e00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
       4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
       4.91834570062930015649e-09)
# fmt: on
_C1, _C2 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0), -Ai'(0)
_INV_SQRT_PI = 5.64189583547756286948e-01
#: Maclaurin terms summed (the 16th is below f64's epsilon for every |x| < 2.09)
SERIES_TERMS = 16


def _oscillating(ctx, x):
    """x < -2.09: ``(sin(t) (1 + z^2 F) - cos(t) z G) / (sqrt(pi) |x|^(1/4))``, t = zeta + pi/4."""
    nx = ctx.unary("stablehlo.negate", x)
    # (torch's order of operations: the phase of a large |x| is as exact as it is)
    zeta = _div(ctx, _mul(ctx, _mul(ctx, _c(ctx, x, -2.0), x), ctx.unary("stablehlo.sqrt", nx)), _c(ctx, x, 3.0))
    z = _div(ctx, _c(ctx, x, 1.0), zeta)
    zz = _mul(ctx, z, z)
    f = _div(ctx, _poly(ctx, zz, AFN), _poly(ctx, zz, AFD))
    g = _div(ctx, _poly(ctx, zz, AGN), _poly(ctx, zz, AGD))
    t = _add(ctx, zeta, _c(ctx, x, 0.25 * math.pi))
    sin_part = _mul(ctx, ctx.unary("stablehlo.sine", t), _add(ctx, _c(ctx, x, 1.0), _mul(ctx, zz, f)))
    r = _sub(ctx, sin_part, _mul(ctx, ctx.unary("stablehlo.cosine", t), _mul(ctx, z, g)))
    return _div(ctx, _mul(ctx, _c(ctx, x, _INV_SQRT_PI), r), ctx.unary("stablehlo.sqrt", ctx.unary("stablehlo.sqrt", nx)))


def _decaying(ctx, x):
    """x >= 2.09: ``AN(1/zeta)/AD(1/zeta) / (2 sqrt(pi) x^(1/4) e^zeta)``."""
    zeta = _mul(ctx, _c(ctx, x, 2.0 / 3.0), _mul(ctx, x, ctx.unary("stablehlo.sqrt", x)))
    w = _div(ctx, _c(ctx, x, 1.0), zeta)
    ratio = _div(ctx, _poly(ctx, w, AN), _poly(ctx, w, AD))
    den = _mul(
        ctx,
        _mul(ctx, _c(ctx, x, 2.0), ctx.unary("stablehlo.sqrt", ctx.unary("stablehlo.sqrt", x))),
        ctx.unary("stablehlo.exponential", zeta),
    )
    return _div(ctx, _mul(ctx, _c(ctx, x, _INV_SQRT_PI), ratio), den)


def _series(ctx, x):
    """``c1 f - c2 g``: f = sum 3^k (1/3)_k x^3k / (3k)!, g likewise from x; term k of each is
    the last times ``x^3`` over the next two integers (constants: k steps by 3)."""
    z = _mul(ctx, _mul(ctx, x, x), x)
    f, g, m, n = _c(ctx, x, 1.0), x, _c(ctx, x, 1.0), x
    k = 1
    for _ in range(SERIES_TERMS):
        m = _mul(ctx, m, _mul(ctx, z, _c(ctx, x, 1.0 / ((k + 1) * (k + 2)))))
        n = _mul(ctx, n, _mul(ctx, z, _c(ctx, x, 1.0 / ((k + 2) * (k + 3)))))
        f, g, k = _add(ctx, f, m), _add(ctx, g, n), k + 3
    return _sub(ctx, _mul(ctx, _c(ctx, x, _C1), f), _mul(ctx, _c(ctx, x, _C2), g))


def airy_ai(ctx, x):
    out = ctx.select(ctx.compare(x, _c(ctx, x, 2.09), "GE"), _decaying(ctx, x), _series(ctx, x))
    out = ctx.select(ctx.compare(x, _c(ctx, x, -2.09), "LT"), _oscillating(ctx, x), out)
    out = ctx.select(ctx.compare(x, _c(ctx, x, 103.892), "GT"), _c(ctx, x, 0.0), out)
    inf = ctx.compare(ctx.unary("stablehlo.abs", x), _c(ctx, x, math.inf), "EQ")
    return ctx.select(inf, _c(ctx, x, math.nan), out)


@lowers(aten.special_airy_ai.default)
def _airy_ai(ctx, node, a):
    dt = ctx.out_dtype(node)
    return ctx.convert(airy_ai(ctx, ctx.tensor(a, _compute_dtype(dt))), dt)
