"""The regularized incomplete gamma functions ``igamma`` (P, lower) and ``igammac`` (Q = 1 - P,
upper), in f64 (the result narrowed), the way jax's ``lax.igamma`` computes them (Cephes'
``igam.c``): the power series (DLMF 8.11.4) where ``x <= 1`` or ``x <= a``, the continued
fraction for Q otherwise, each a ``stablehlo.while`` over the whole tensor that stops when
every element has converged (a term below epsilon) or after :data:`MAX_ITER` steps, as
torch's loops do. Off the domain, torch's values: NaN for a negative argument, P(0, x > 0) = 1,
P(a, 0) = 0, P(inf, x) = 0, P(a, inf) = 1 (NaN where both are infinite), tested in torch's
order (a NaN ``a`` still gives P(a, 0) = 0).

torch switches to Temme's uniform asymptotic expansion where ``a`` is large and near ``x``
(``a > 20``): the series and the fraction converge there too, to the same values, in more
steps (about ``sqrt(a)`` times a few)."""

from __future__ import annotations

import math

import torch

from ..registry import lowers
from ..types import SHAPE_DTYPE
from .special import _add, _c, _div, _mul, _sub, lgamma

aten = torch.ops.aten
prims = torch.ops.prims

MAX_ITER = 2000  # torch's and Cephes' cap
EPS = 1.11022302462515654042e-16  # Cephes' MACHEP (f64)
BIG, BIG_INV = 4.503599627370496e15, 2.22044604925031308085e-16  # the fraction's rescaling


def _iterate(ctx, enabled, state, step):
    """Run ``step(c, state) -> (state', converged)`` on the elements still ``enabled`` until none is
    (or :data:`MAX_ITER` steps); returns the final state. Carried whole: the loop's regions
    capture nothing from above."""
    k = len(state)

    def cond(c, i, en, *vals):
        more = c.reduce(en, list(range(en.rank)), "or") if en.rank else en
        return c.binary("stablehlo.and", c.compare(i, c.constant(MAX_ITER, SHAPE_DTYPE), "LT"), more)

    def body(c, i, en, *vals):
        new, converged = step(c, list(vals))
        vals = [c.select(en, n, o) for n, o in zip(new, vals, strict=True)]
        en = c.binary("stablehlo.and", en, c.unary("stablehlo.not", converged))
        return [c.binary("stablehlo.add", i, c.constant(1, SHAPE_DTYPE)), en, *vals]

    out = ctx.while_loop([ctx.constant(0, SHAPE_DTYPE), enabled, *state], cond, body)
    return out[2 : 2 + k]


def _log_prefactor(ctx, a, x):
    """log(x^a e^-x / Gamma(a))."""
    return _sub(ctx, _sub(ctx, _mul(ctx, a, ctx.unary("stablehlo.log", x)), x), lgamma(ctx, a))


def _series(ctx, enabled, a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""

    def step(c, s):
        a, x, r, term, total = s
        r = _add(c, r, _c(c, r, 1.0))
        term = _mul(c, term, _div(c, x, r))
        total = _add(c, total, term)
        return [a, x, r, term, total], c.compare(term, _mul(c, total, _c(c, total, EPS)), "LE")

    one = _c(ctx, a, 1.0)
    *_, total = _iterate(ctx, enabled, [a, x, a, one, one], step)
    return _div(ctx, _mul(ctx, total, ctx.unary("stablehlo.exponential", _log_prefactor(ctx, a, x))), a)


def _fraction(ctx, enabled, a, x):
    """Q(a, x) by Legendre's continued fraction (Cephes' ``igamc``), its convergents rescaled
    when they grow past :data:`BIG`."""

    def step(c, s):
        a, x, y, z, n, pkm1, pkm2, qkm1, qkm2, ans = s
        one = _c(c, x, 1.0)
        n, y, z = _add(c, n, one), _add(c, y, one), _add(c, z, _c(c, z, 2.0))
        yc = _mul(c, y, n)
        pk = _sub(c, _mul(c, pkm1, z), _mul(c, pkm2, yc))
        qk = _sub(c, _mul(c, qkm1, z), _mul(c, qkm2, yc))
        nonzero = c.compare(qk, _c(c, qk, 0.0), "NE")
        r = _div(c, pk, c.select(nonzero, qk, one))
        t = c.select(nonzero, c.unary("stablehlo.abs", _div(c, _sub(c, ans, r), r)), one)
        ans = c.select(nonzero, r, ans)
        big = c.compare(c.unary("stablehlo.abs", pk), _c(c, pk, BIG), "GT")
        scale = c.select(big, _c(c, pk, BIG_INV), one)
        pkm2, pkm1, qkm2, qkm1 = _mul(c, pkm1, scale), _mul(c, pk, scale), _mul(c, qkm1, scale), _mul(c, qk, scale)
        return [a, x, y, z, n, pkm1, pkm2, qkm1, qkm2, ans], c.compare(t, _c(c, t, EPS), "LE")

    one = _c(ctx, a, 1.0)
    y = _sub(ctx, one, a)
    z = _add(ctx, _add(ctx, x, y), one)
    pkm1, qkm1 = _add(ctx, x, one), _mul(ctx, z, x)
    state = [a, x, y, z, _c(ctx, a, 0.0), pkm1, one, qkm1, x, _div(ctx, pkm1, qkm1)]
    ans = _iterate(ctx, enabled, state, step)[-1]
    return _mul(ctx, ans, ctx.unary("stablehlo.exponential", _log_prefactor(ctx, a, x)))


def igamma(ctx, a, x, upper: bool):
    """P(a, x), or Q(a, x) where ``upper``."""
    zero, one, inf, nan = _c(ctx, a, 0.0), _c(ctx, a, 1.0), _c(ctx, a, math.inf), _c(ctx, a, math.nan)
    finite = ctx.binary("stablehlo.and", ctx.compare(a, inf, "LT"), ctx.compare(x, inf, "LT"))
    inside = ctx.binary(
        "stablehlo.and", finite, ctx.binary("stablehlo.and", ctx.compare(a, zero, "GT"), ctx.compare(x, zero, "GT"))
    )
    use_fraction = ctx.binary("stablehlo.and", ctx.compare(x, one, "GT"), ctx.compare(x, a, "GT"))
    # each loop runs on its own elements only; the others hold values where it is harmless
    safe_a, safe_x = ctx.select(inside, a, one), ctx.select(inside, x, one)
    p_series = _series(ctx, ctx.binary("stablehlo.and", inside, ctx.unary("stablehlo.not", use_fraction)), safe_a, safe_x)
    q_fraction = _fraction(ctx, ctx.binary("stablehlo.and", inside, use_fraction), safe_a, safe_x)
    p = ctx.select(use_fraction, _sub(ctx, one, q_fraction), p_series)
    q = ctx.select(use_fraction, q_fraction, _sub(ctx, one, p_series))
    out = ctx.select(inside, q if upper else p, nan)  # (NaN in: NaN out, but where below says otherwise)
    lo, hi = (one, zero) if upper else (zero, one)  # P's value at x = 0 (or a = inf), at a = 0 (or x = inf)
    out = ctx.select(ctx.compare(x, inf, "EQ"), hi, out)
    out = ctx.select(ctx.compare(a, inf, "EQ"), ctx.select(ctx.compare(x, inf, "EQ"), nan, lo), out)
    out = ctx.select(ctx.compare(x, zero, "EQ"), lo, out)
    out = ctx.select(ctx.compare(a, zero, "EQ"), ctx.select(ctx.compare(x, zero, "GT"), hi, nan), out)
    negative = ctx.binary("stablehlo.or", ctx.compare(a, zero, "LT"), ctx.compare(x, zero, "LT"))
    return ctx.select(negative, nan, out)


def _register(upper: bool, *ops) -> None:
    def lower(ctx, node, a, x):
        dt = ctx.out_dtype(node)
        shape = ctx.out_shape(node)
        return ctx.convert(igamma(ctx, ctx.tensor(a, "f64", shape), ctx.tensor(x, "f64", shape), upper), dt)

    lowers(*ops)(lower)


_register(False, aten.igamma.default, prims.igamma.default, aten.special_gammainc.default)
_register(True, aten.igammac.default, prims.igammac.default, aten.special_gammaincc.default)
