"""Float math functions StableHLO has no op for, from its primitives: one table of
``(ops, f(ctx, x) -> Value)``, each computed in f32 or wider (f16/bf16 inputs are
widened and the result narrowed), registered for the aten op and for the prim of
the same name (torch's refs decompose some aten ops to ``prims.*``).

``chlo`` has most of these (``chlo.acosh``, ``chlo.lgamma``, ...) and XLA runs them,
but the reference interpreter does not, and XLA's dynamic padder serves plain
elementwise StableHLO ops; so these are the formulas XLA's own expansions use
(Lanczos for lgamma/digamma, Giles for erfinv), written with StableHLO ops."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import types as T
from ..registry import lowers

aten = torch.ops.aten
prims = torch.ops.prims


def _c(ctx, x, v):
    return ctx.constant(v, x.dtype, x.sym_shape)


def _add(ctx, a, b):
    return ctx.binary("stablehlo.add", a, b)


def _sub(ctx, a, b):
    return ctx.binary("stablehlo.subtract", a, b)


def _mul(ctx, a, b):
    return ctx.binary("stablehlo.multiply", a, b)


def _div(ctx, a, b):
    return ctx.binary("stablehlo.divide", a, b)


def _poly(ctx, x, coeffs):
    """Horner: ``coeffs[0] * x^(n-1) + ... + coeffs[-1]``."""
    acc = _c(ctx, x, coeffs[0])
    for k in coeffs[1:]:
        acc = _add(ctx, _mul(ctx, acc, x), _c(ctx, x, k))
    return acc


def acosh(ctx, x):
    """log(x + sqrt((x - 1)(x + 1))); log(x) + log(2) where x^2 would overflow."""
    one = _c(ctx, x, 1.0)
    small = ctx.unary(
        "stablehlo.log",
        _add(ctx, x, ctx.unary("stablehlo.sqrt", _mul(ctx, _sub(ctx, x, one), _add(ctx, x, one)))),
    )
    big = _add(ctx, ctx.unary("stablehlo.log", x), _c(ctx, x, math.log(2.0)))
    return ctx.select(ctx.compare(x, _c(ctx, x, 1e18), "GT"), big, small)


def asinh(ctx, x):
    """sign(x) * log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x| (exact near 0);
    log(a) + log(2) where a^2 would overflow."""
    a = ctx.unary("stablehlo.abs", x)
    one = _c(ctx, x, 1.0)
    a2 = _mul(ctx, a, a)
    small = ctx.unary(
        "stablehlo.log_plus_one",
        _add(ctx, a, _div(ctx, a2, _add(ctx, one, ctx.unary("stablehlo.sqrt", _add(ctx, one, a2))))),
    )
    big = _add(ctx, ctx.unary("stablehlo.log", a), _c(ctx, x, math.log(2.0)))
    r = ctx.select(ctx.compare(a, _c(ctx, x, 1e18), "GT"), big, small)
    return _mul(ctx, ctx.unary("stablehlo.sign", x), r)


def atanh(ctx, x):
    """log1p(2x / (1 - x)) / 2."""
    one = _c(ctx, x, 1.0)
    q = _div(ctx, _mul(ctx, _c(ctx, x, 2.0), x), _sub(ctx, one, x))
    return _mul(ctx, ctx.unary("stablehlo.log_plus_one", q), _c(ctx, x, 0.5))


def erfinv(ctx, x):
    """Giles' single-precision approximation (XLA's ErfInv for f32); +-inf at +-1."""
    one = _c(ctx, x, 1.0)
    w = ctx.unary("stablehlo.negate", ctx.unary("stablehlo.log", _mul(ctx, _sub(ctx, one, x), _add(ctx, one, x))))
    lo = _poly(
        ctx,
        _sub(ctx, w, _c(ctx, x, 2.5)),
        [
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ],
    )
    hi = _poly(
        ctx,
        _sub(ctx, ctx.unary("stablehlo.sqrt", w), _c(ctx, x, 3.0)),
        [
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ],
    )
    p = ctx.select(ctx.compare(w, _c(ctx, x, 5.0), "LT"), lo, hi)
    r = _mul(ctx, p, x)
    at_one = ctx.compare(ctx.unary("stablehlo.abs", x), one, "EQ")
    return ctx.select(at_one, _mul(ctx, x, _c(ctx, x, math.inf)), r)


# Lanczos approximation, g = 7, n = 9 (XLA's, from Numerical Recipes / Boost)
_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = [
    676.520368121885098567009190444019,
    -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,
    -176.61502916214059906584551354,
    12.507343278686904814458936853,
    -0.13857109526572011689554707,
    9.984369578019570859563e-6,
    1.50563273514931155834e-7,
]


def _reflected(ctx, x):
    """(x < 0.5, z): z = -x where reflected, x - 1 otherwise (the Lanczos argument)."""
    reflect = ctx.compare(x, _c(ctx, x, 0.5), "LT")
    z = ctx.select(reflect, ctx.unary("stablehlo.negate", x), _sub(ctx, x, _c(ctx, x, 1.0)))
    return reflect, z


def _log_t(ctx, z):
    gh = _LANCZOS_G + 0.5
    return _add(ctx, _c(ctx, z, math.log(gh)), ctx.unary("stablehlo.log_plus_one", _div(ctx, z, _c(ctx, z, gh))))


def lgamma(ctx, x):
    """log|Gamma(x)|: Lanczos for x >= 0.5, the reflection formula below (XLA's Lgamma)."""
    reflect, z = _reflected(ctx, x)
    acc = _c(ctx, x, _LANCZOS_BASE)
    for i, k in enumerate(_LANCZOS):
        acc = _add(ctx, acc, _div(ctx, _c(ctx, x, k), _add(ctx, z, _c(ctx, x, i + 1.0))))
    t = _add(ctx, z, _c(ctx, x, _LANCZOS_G + 0.5))
    log_t = _log_t(ctx, z)
    log_y = _add(
        ctx,
        _add(
            ctx,
            _c(ctx, x, 0.5 * math.log(2 * math.pi)),
            _mul(ctx, _sub(ctx, _add(ctx, z, _c(ctx, x, 0.5)), _div(ctx, t, log_t)), log_t),
        ),
        ctx.unary("stablehlo.log", acc),
    )
    a = ctx.unary("stablehlo.abs", x)
    frac = _sub(ctx, a, ctx.unary("stablehlo.floor", a))
    frac = ctx.select(ctx.compare(frac, _c(ctx, x, 0.5), "GT"), _sub(ctx, _c(ctx, x, 1.0), frac), frac)
    denom = ctx.unary("stablehlo.log", ctx.unary("stablehlo.sine", _mul(ctx, _c(ctx, x, math.pi), frac)))
    finite = ctx.op("stablehlo.is_finite", [denom], (denom.sym_shape, "i1"))
    reflection = ctx.select(
        finite, _sub(ctx, _sub(ctx, _c(ctx, x, math.log(math.pi)), denom), log_y), ctx.unary("stablehlo.negate", denom)
    )
    r = ctx.select(reflect, reflection, log_y)
    inf = ctx.compare(a, _c(ctx, x, math.inf), "EQ")
    return ctx.select(inf, _c(ctx, x, math.inf), r)


def digamma(ctx, x):
    """psi(x): the Lanczos series' log-derivative, reflected below 0.5 (XLA's Digamma);
    -inf at 0 and NaN at the negative integers, as torch gives."""
    reflect, z = _reflected(ctx, x)
    num = _c(ctx, x, 0.0)
    den = _c(ctx, x, _LANCZOS_BASE)
    for i, k in enumerate(_LANCZOS):
        zi = _add(ctx, z, _c(ctx, x, i + 1.0))
        num = _sub(ctx, num, _div(ctx, _c(ctx, x, k), _mul(ctx, zi, zi)))
        den = _add(ctx, den, _div(ctx, _c(ctx, x, k), zi))
    t = _add(ctx, z, _c(ctx, x, _LANCZOS_G + 0.5))
    y = _sub(ctx, _add(ctx, _log_t(ctx, z), _div(ctx, num, den)), _div(ctx, _c(ctx, x, _LANCZOS_G), t))
    reduced = _add(ctx, x, ctx.unary("stablehlo.abs", ctx.unary("stablehlo.floor", _add(ctx, x, _c(ctx, x, 0.5)))))
    pix = _mul(ctx, _c(ctx, x, math.pi), reduced)
    reflection = _sub(
        ctx, y, _div(ctx, _mul(ctx, _c(ctx, x, math.pi), ctx.unary("stablehlo.cosine", pix)), ctx.unary("stablehlo.sine", pix))
    )
    r = ctx.select(reflect, reflection, y)
    zero = _c(ctx, x, 0.0)
    pole = ctx.binary("stablehlo.and", ctx.compare(x, zero, "LT"), ctx.compare(x, ctx.unary("stablehlo.floor", x), "EQ"))
    r = ctx.select(pole, _c(ctx, x, math.nan), r)
    return ctx.select(ctx.compare(x, zero, "EQ"), _c(ctx, x, -math.inf), r)


def exp2(ctx, x):
    return ctx.binary("stablehlo.power", _c(ctx, x, 2.0), x)


def erfc(ctx, x):
    from .elementwise import erf

    return _sub(ctx, _c(ctx, x, 1.0), erf(ctx, x))


def _float_unary(fn, wide=False):
    def lowering(ctx, node, a, *rest, **kw):
        dt = ctx.out_dtype(node)
        cdt = _compute_dtype(dt, wide)
        return ctx.convert(fn(ctx, ctx.tensor(a, cdt)), dt)

    return lowering


def _compute_dtype(dt, wide=False):
    """f32 for narrower floats; f64 where ``wide`` (the series whose reflections and
    poles lose digits in f32: lgamma, digamma, zeta, polygamma)."""
    if wide:
        return "f64"
    return "f32" if dt in ("f16", "bf16") or not T.is_float(dt) else dt


#: the functions computed in f64 (see :func:`_compute_dtype`)
WIDE = {"lgamma", "digamma"}


UNARY = {
    "acosh": acosh,
    "asinh": asinh,
    "atanh": atanh,
    "erfinv": erfinv,
    "lgamma": lgamma,
    "digamma": digamma,
    "exp2": exp2,
    "erfc": erfc,
}
#: the prim of each aten op where its name differs
_PRIM_NAMES = {"erfinv": "erf_inv"}

for _name, _fn in UNARY.items():
    _ops = [getattr(aten, _name).default]
    _prim = getattr(prims, _PRIM_NAMES.get(_name, _name), None)
    if _prim is not None:
        _ops.append(_prim.default)
    lowers(*_ops)(_float_unary(_fn, _name in WIDE))


@lowers(aten.signbit.default, prims.signbit.default)
def _signbit(ctx, node, a):
    """The sign bit: x < 0, and -0.0 and NaNs with it set (the bits' top one)."""
    if not T.is_float(a.dtype):
        return ctx.compare(a, ctx.constant(0, a.dtype, a.sym_shape), "LT")
    x = ctx.convert(a, "f32") if a.dtype in ("f16", "bf16") else a
    it = {"f32": "i32", "f64": "i64"}[x.dtype]
    bits = ctx.op("stablehlo.bitcast_convert", [x], (x.sym_shape, it))
    return ctx.compare(bits, ctx.constant(0, it, x.sym_shape), "LT")


def _fminmax(kind):
    def fn(ctx, node, a, b):
        """fmax/fmin: the other operand where one is NaN (NaN only where both are)."""
        dt = ctx.out_dtype(node)
        shape = ctx.out_shape(node)
        x, y = ctx.tensor(a, dt, shape), ctx.tensor(b, dt, shape)
        r = ctx.binary(f"stablehlo.{kind}imum", x, y)
        if not T.is_float(dt):
            return r
        r = ctx.select(ctx.compare(x, x, "NE"), y, r)
        return ctx.select(ctx.compare(y, y, "NE"), x, r)

    return fn


lowers(aten.fmax.default, prims.fmax.default)(_fminmax("max"))
lowers(aten.fmin.default, prims.fmin.default)(_fminmax("min"))


@lowers(aten.copysign.Tensor, aten.copysign.Scalar)
def _copysign(ctx, node, a, b):
    """|a| with b's sign bit (-0.0 and NaNs with the bit set count as negative)."""
    dt = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    x, y = ctx.tensor(a, dt, shape), ctx.tensor(b, dt, shape)
    mag = ctx.unary("stablehlo.abs", x)
    it = {"f32": "i32", "f64": "i64", "f16": "i16", "bf16": "i16"}[dt]
    neg = ctx.compare(ctx.op("stablehlo.bitcast_convert", [y], (shape, it)), ctx.constant(0, it, shape), "LT")
    return ctx.select(neg, ctx.unary("stablehlo.negate", mag), mag)


# (2k)! / B_2k (Bernoulli numbers), the Euler-Maclaurin terms of XLA's Zeta
_ZETA = [
    -7.1661652561756670113e18,
    1.8152105401943546773e17,
    -4.5979787224074726105e15,
    1.1646782814350067249e14,
    -2.950130727918164224e12,
    7.47242496e10,
    -1.8924375803183791606e9,
    47900160.0,
    -1209600.0,
    30240.0,
    -720.0,
    12.0,
]


#: terms summed before the Euler-Maclaurin tail: the tail wants ``q + terms > 9``
#: (Cephes sums until it is), which 30 gives for every q > -21
ZETA_TERMS = 30


def zeta(ctx, x, q):
    """Hurwitz zeta(x, q) = sum_k (k + q)^-x: :data:`ZETA_TERMS` terms, then the
    Euler-Maclaurin tail (XLA's Zeta); torch's values off the domain (x < 1: NaN, x = 1: inf, a pole
    at an integer q <= 0: inf, q < 0 with a fractional x: NaN)."""
    nx = ctx.unary("stablehlo.negate", x)
    one = _c(ctx, x, 1.0)
    a = q
    initial = ctx.binary("stablehlo.power", q, nx)
    for _ in range(ZETA_TERMS - 1):
        a = _add(ctx, a, one)
        initial = _add(ctx, initial, ctx.binary("stablehlo.power", a, nx))
    a = _add(ctx, a, one)
    neg_power = ctx.binary("stablehlo.power", a, nx)
    s = _add(ctx, initial, _div(ctx, _mul(ctx, neg_power, a), _sub(ctx, x, one)))
    inv_sq = _div(ctx, one, _mul(ctx, a, a))
    horner = _c(ctx, x, 0.0)
    for i in range(11):
        factor = _mul(ctx, _sub(ctx, x, _c(ctx, x, 22.0 - 2.0 * i)), _sub(ctx, x, _c(ctx, x, 21.0 - 2.0 * i)))
        horner = _mul(ctx, _mul(ctx, factor, inv_sq), _add(ctx, horner, _c(ctx, x, 1.0 / _ZETA[i])))
    tail = _add(ctx, _c(ctx, x, 0.5), _mul(ctx, _div(ctx, x, a), _add(ctx, _c(ctx, x, 1.0 / _ZETA[11]), horner)))
    s = _add(ctx, s, _mul(ctx, neg_power, tail))
    eps = float(np.finfo(np.float32 if x.dtype == "f32" else np.float64).eps)
    small = ctx.compare(
        ctx.unary("stablehlo.abs", neg_power), _mul(ctx, ctx.unary("stablehlo.abs", initial), _c(ctx, x, eps)), "LT"
    )
    out = ctx.select(small, initial, s)
    out = ctx.select(ctx.compare(x, one, "EQ"), _c(ctx, x, math.inf), out)
    out = ctx.select(ctx.compare(x, one, "LT"), _c(ctx, x, math.nan), out)
    zero = _c(ctx, x, 0.0)
    q_nonpos = ctx.compare(q, zero, "LE")
    x_frac = ctx.compare(x, ctx.unary("stablehlo.floor", x), "NE")
    out = ctx.select(ctx.binary("stablehlo.and", q_nonpos, x_frac), _c(ctx, x, math.nan), out)
    pole = ctx.binary("stablehlo.and", q_nonpos, ctx.compare(q, ctx.unary("stablehlo.floor", q), "EQ"))
    return ctx.select(pole, _c(ctx, x, math.inf), out)


def _float_pair(ctx, node, a, b):
    dt = ctx.out_dtype(node)
    cdt = _compute_dtype(dt, wide=True)
    shape = ctx.out_shape(node)
    return dt, ctx.tensor(a, cdt, shape), ctx.tensor(b, cdt, shape)


@lowers(aten.special_zeta.default, aten.special_zeta.self_scalar, aten.special_zeta.other_scalar, prims.zeta.default)
def _zeta(ctx, node, x, q):
    dt, x, q = _float_pair(ctx, node, x, q)
    return ctx.convert(zeta(ctx, x, q), dt)


@lowers(aten.polygamma.default)
def _polygamma(ctx, node, n, a):
    """polygamma(0, x) = digamma(x); polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)."""
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, _compute_dtype(dt, wide=True))
    if n == 0:
        return ctx.convert(digamma(ctx, x), dt)
    z = zeta(ctx, _c(ctx, x, float(n + 1)), x)
    return ctx.convert(_mul(ctx, _c(ctx, x, (-1.0) ** (n + 1) * math.factorial(n)), z), dt)


@lowers(aten.special_spherical_bessel_j0.default)
def _spherical_j0(ctx, node, a):
    """sin(x) / x, 1 at 0 (|x| < 0.5: its Taylor series, exact where sin(x)/x cancels)."""
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") or not T.is_float(dt) else dt
    x = ctx.tensor(a, cdt)
    x2 = _mul(ctx, x, x)
    series = _poly(ctx, x2, [1.0 / 6227020800, -1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6, 1.0])
    direct = _div(ctx, ctx.unary("stablehlo.sine", x), x)
    small = ctx.compare(ctx.unary("stablehlo.abs", x), _c(ctx, x, 0.5), "LT")
    return ctx.convert(ctx.select(small, series, direct), dt)


@lowers(aten.special_ndtri.default)
def _ndtri(ctx, node, a):
    """The standard normal quantile: sqrt(2) erfinv(2p - 1)."""
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") or not T.is_float(dt) else dt
    p = ctx.tensor(a, cdt)
    y = erfinv(ctx, _sub(ctx, _mul(ctx, _c(ctx, p, 2.0), p), _c(ctx, p, 1.0)))
    return ctx.convert(_mul(ctx, _c(ctx, p, math.sqrt(2.0)), y), dt)


@lowers(aten.hypot.default)
def _hypot(ctx, node, a, b):
    """sqrt(a^2 + b^2) as ``std::hypot`` computes it: scaled by the larger magnitude (no
    overflow of the squares), 0 where both are, inf where either is (a NaN beside it too)."""
    dt = ctx.out_dtype(node)
    cdt = _compute_dtype(dt)
    shape = ctx.out_shape(node)
    x = ctx.unary("stablehlo.abs", ctx.tensor(a, cdt, shape))
    y = ctx.unary("stablehlo.abs", ctx.tensor(b, cdt, shape))
    big, small = ctx.binary("stablehlo.maximum", x, y), ctx.binary("stablehlo.minimum", x, y)
    zero = _c(ctx, x, 0.0)
    r = _div(ctx, small, ctx.select(ctx.compare(big, zero, "EQ"), _c(ctx, x, 1.0), big))
    out = _mul(ctx, big, ctx.unary("stablehlo.sqrt", _add(ctx, _c(ctx, x, 1.0), _mul(ctx, r, r))))
    a_nan = ctx.binary("stablehlo.or", ctx.compare(x, x, "NE"), ctx.compare(y, y, "NE"))
    out = ctx.select(a_nan, _c(ctx, x, math.nan), out)  # (XLA's maximum may drop a NaN)
    inf = _c(ctx, x, math.inf)
    either_inf = ctx.binary("stablehlo.or", ctx.compare(x, inf, "EQ"), ctx.compare(y, inf, "EQ"))
    return ctx.convert(ctx.select(either_inf, inf, out), dt)


@lowers(aten.angle.default)
def _angle(ctx, node, a):
    """The argument of a real number: pi below 0, else 0; NaN stays NaN (complex inputs are
    refused before they get here: no complex dtype lowers)."""
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    out = ctx.select(ctx.compare(x, _c(ctx, x, 0.0), "LT"), _c(ctx, x, math.pi), _c(ctx, x, 0.0))
    return ctx.select(ctx.compare(x, x, "EQ"), out, x)
