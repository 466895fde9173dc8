"""The scaled complementary error function ``special.erfcx(x) = e^(x^2) erfc(x)`` and the log of
the standard normal CDF ``special.log_ndtr``, computed in f64 (the result narrowed).

torch's kernel (``calc_erfcx``, Johnson's Faddeeva package) tabulates 100 Chebyshev pieces; this
uses Cephes' ``ndtr.c`` instead, whose ``erfc(a) = e^(-a^2) P(a)/Q(a)`` (``1 <= a < 8``) and
``e^(-a^2) R(a)/S(a)`` (beyond) make ``erfcx`` the rational function alone, to f64's precision;
below 1, ``e^(a^2) (1 - erf(a))`` with Cephes' ``erf = a T(a^2)/U(a^2)``. Negative ``x``:
``2 e^(x^2) - erfcx(-x)``, as torch's; ``log_ndtr`` as torch's (SciPy's) from it."""

from __future__ import annotations

import math

import torch

from ..registry import lowers
from .special import _c, _div, _mul, _poly, _sub

aten = torch.ops.aten
prims = torch.ops.prims

# Cephes ndtr.c, highest power first
# fmt: off
ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
          4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
          9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
          9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
          1.65666309194161350182e3, 5.57535340817727675546e2)
ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
          6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
          1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)
ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
         7.00332514112805075473e3, 5.55923013010394962768e4)
ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
         2.26290000613890934246e4, 4.92673942608635921086e4)
# fmt: on
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def erfcx_nonneg(ctx, a):
    """erfcx(a) for ``a >= 0`` (f64)."""
    z = _mul(ctx, a, a)
    erf = _div(ctx, _mul(ctx, a, _poly(ctx, z, ERF_T)), _poly(ctx, z, ERF_U))
    small = _mul(ctx, ctx.unary("stablehlo.exponential", z), _sub(ctx, _c(ctx, a, 1.0), erf))
    mid = _div(ctx, _poly(ctx, a, ERFC_P), _poly(ctx, a, ERFC_Q))
    big = _div(ctx, _poly(ctx, a, ERFC_R), _poly(ctx, a, ERFC_S))
    huge = _div(ctx, _c(ctx, a, _INV_SQRT_PI), a)  # (R/S's powers would overflow)
    out = ctx.select(ctx.compare(a, _c(ctx, a, 5e7), "GT"), huge, big)
    out = ctx.select(ctx.compare(a, _c(ctx, a, 8.0), "LT"), mid, out)
    return ctx.select(ctx.compare(a, _c(ctx, a, 1.0), "LT"), small, out)


def erfcx(ctx, x):
    """erfcx(x): ``2 e^(x^2) - erfcx(-x)`` below 0 (inf below -26.7, as torch's)."""
    a = ctx.unary("stablehlo.abs", x)
    pos = erfcx_nonneg(ctx, a)
    neg = _sub(ctx, _mul(ctx, _c(ctx, x, 2.0), ctx.unary("stablehlo.exponential", _mul(ctx, x, x))), pos)
    neg = ctx.select(ctx.compare(x, _c(ctx, x, -26.7), "LT"), _c(ctx, x, math.inf), neg)
    return ctx.select(ctx.compare(x, _c(ctx, x, 0.0), "LT"), neg, pos)


def log_ndtr(ctx, x):
    """log(Phi(x)), t = x / sqrt(2): ``log(erfcx(-t) / 2) - t^2`` below -1, else
    ``log1p(-erfc(t) / 2)`` with ``erfc(t) = e^(-t^2) erfcx(t)``."""
    t = _mul(ctx, x, _c(ctx, x, math.sqrt(0.5)))
    t2 = _mul(ctx, t, t)
    half = _c(ctx, x, 0.5)
    low = _sub(ctx, ctx.unary("stablehlo.log", _mul(ctx, erfcx(ctx, ctx.unary("stablehlo.negate", t)), half)), t2)
    erfc = _mul(ctx, ctx.unary("stablehlo.exponential", ctx.unary("stablehlo.negate", t2)), erfcx(ctx, t))
    high = ctx.unary("stablehlo.log_plus_one", ctx.unary("stablehlo.negate", _mul(ctx, erfc, half)))
    return ctx.select(ctx.compare(x, _c(ctx, x, -1.0), "LT"), low, high)


def _register(fn, *ops) -> None:
    def lower(ctx, node, a):
        dt = ctx.out_dtype(node)
        return ctx.convert(fn(ctx, ctx.tensor(a, "f64")), dt)

    lowers(*ops)(lower)


_register(erfcx, aten.special_erfcx.default, prims.erfcx.default)
_register(log_ndtr, aten.special_log_ndtr.default)
