"""torch.special's orthogonal polynomials at ``x`` of degree ``n`` (a tensor, truncated to an
integer): Chebyshev T/U/V/W and their shifted forms, Hermite H/He, Laguerre L, Legendre P.

One family, one lowering: torch's kernels (``ATen/native/Math.h``) run a three-term recurrence
from the degree-0 and degree-1 values, ``n - 1`` steps. Here that is one ``stablehlo.while``
over the step ``j`` up to the largest ``n`` of the tensor; each element takes a step only while
``j < n`` (its own degree), so every element ends at its degree. torch's special cases (a
negative degree, ``x`` at the interval's ends, a closed form ``cos(n acos x)`` for large degrees
where the recurrence would lose accuracy, Hermite's degree limit) are selects after the loop, in
torch's order. A shifted Chebyshev polynomial is the plain one at ``2x - 1`` with its own
closed-form threshold."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..registry import lowers
from .special import _add, _c, _compute_dtype, _div, _mul, _sub

aten = torch.ops.aten


def _acos(ctx, x):
    root = ctx.unary("stablehlo.sqrt", _mul(ctx, _sub(ctx, _c(ctx, x, 1.0), x), _add(ctx, _c(ctx, x, 1.0), x)))
    return ctx.binary("stablehlo.atan2", root, x)


def _cos(ctx, x):
    return ctx.unary("stablehlo.cosine", x)


def _sin(ctx, x):
    return ctx.unary("stablehlo.sine", x)


def _even(ctx, n):
    """``n`` (integral, as a float) is even."""
    half = _mul(ctx, n, _c(ctx, n, 0.5))
    return ctx.compare(half, ctx.unary("stablehlo.floor", half), "EQ")


def _signed(ctx, n, v):
    """``v`` where ``n`` is even, else ``-v`` (the value at ``x = -1``)."""
    return ctx.select(_even(ctx, n), v, ctx.unary("stablehlo.negate", v))


@dataclass(frozen=True)
class Recurrence:
    """``p1(x)``: the degree-1 value; ``step(ctx, j, x, p, q)``: degree ``j + 1`` from degrees
    ``j - 1`` (``p``) and ``j`` (``q``); ``special(ctx, x, n, loop)``: torch's cases around it."""

    p1: Callable
    step: Callable
    special: Callable


def _cheb_step(ctx, j, x, p, q):
    return _sub(ctx, _mul(ctx, _add(ctx, x, x), q), p)


def _chebyshev(kind: str, threshold: int):
    """Chebyshev ``kind`` (t, u, v, w): the values at ``x = +-1`` and the closed form torch takes
    for ``n > threshold`` inside ``(-1, 1)``."""

    def p1(ctx, x):
        two_x = _add(ctx, x, x)
        return {"t": x, "u": two_x, "v": _sub(ctx, two_x, _c(ctx, x, 1.0)), "w": _add(ctx, two_x, _c(ctx, x, 1.0))}[kind]

    def special(ctx, x, n, out):
        one = _c(ctx, x, 1.0)
        a = _acos(ctx, x)
        if kind == "t":
            closed = _cos(ctx, _mul(ctx, n, a))
            at_one, at_minus_one = one, _signed(ctx, n, one)
        elif kind == "u":
            n1 = _add(ctx, n, one)
            closed = _div(ctx, _sin(ctx, _mul(ctx, n1, a)), _sin(ctx, a))
            at_one, at_minus_one = n1, _signed(ctx, n, n1)
        else:
            half = _mul(ctx, a, _c(ctx, x, 0.5))
            nh = _mul(ctx, _add(ctx, n, _c(ctx, x, 0.5)), a)
            two_n1 = _add(ctx, _add(ctx, n, n), one)
            if kind == "v":
                closed = _div(ctx, _cos(ctx, nh), _cos(ctx, half))
                at_one, at_minus_one = one, _signed(ctx, n, two_n1)
            else:
                closed = _div(ctx, _sin(ctx, nh), _sin(ctx, half))
                at_one, at_minus_one = two_n1, _signed(ctx, n, one)
        ax = ctx.unary("stablehlo.abs", x)
        big = ctx.binary("stablehlo.and", ctx.compare(n, _c(ctx, n, float(threshold)), "GT"), ctx.compare(ax, one, "LT"))
        out = ctx.select(big, closed, out)
        out = ctx.select(ctx.compare(x, ctx.unary("stablehlo.negate", one), "EQ"), at_minus_one, out)
        return ctx.select(ctx.compare(x, one, "EQ"), at_one, out)

    return Recurrence(p1, _cheb_step, special)


def _hermite(physicists: bool):
    """H (``r = 2x q - 2j p``) or He (``r = x q - j p``); NaN past torch's degree limit."""

    def p1(ctx, x):
        return _add(ctx, x, x) if physicists else x

    def step(ctx, j, x, p, q):
        if physicists:
            return _sub(ctx, _mul(ctx, _add(ctx, x, x), q), _mul(ctx, _add(ctx, j, j), p))
        return _sub(ctx, _mul(ctx, x, q), _mul(ctx, j, p))

    def special(ctx, x, n, out):
        limit = 128.0 if x.dtype == "f32" else 512.0  # (torch's getHermitianLimit)
        return ctx.select(ctx.compare(n, _c(ctx, n, limit), "GT"), _c(ctx, x, math.nan), out)

    return Recurrence(p1, step, special)


def _laguerre_step(ctx, j, x, p, q):
    one = _c(ctx, x, 1.0)
    a = _mul(ctx, _add(ctx, _add(ctx, j, j), _sub(ctx, one, x)), q)
    return _div(ctx, _sub(ctx, a, _mul(ctx, j, p)), _add(ctx, j, one))


def _laguerre_special(ctx, x, n, out):
    return ctx.select(ctx.compare(x, _c(ctx, x, 0.0), "EQ"), _c(ctx, x, 1.0), out)


def _legendre_step(ctx, j, x, p, q):
    one = _c(ctx, x, 1.0)
    a = _mul(ctx, _mul(ctx, _add(ctx, _add(ctx, j, j), one), x), q)
    return _div(ctx, _sub(ctx, a, _mul(ctx, j, p)), _add(ctx, j, one))


def _legendre_special(ctx, x, n, out):
    one = _c(ctx, x, 1.0)
    out = ctx.select(ctx.compare(x, ctx.unary("stablehlo.negate", one), "EQ"), _signed(ctx, n, one), out)
    return ctx.select(ctx.compare(x, one, "EQ"), one, out)


RECURRENCES = {
    "chebyshev_polynomial_t": _chebyshev("t", 6),
    "chebyshev_polynomial_u": _chebyshev("u", 8),
    "chebyshev_polynomial_v": _chebyshev("v", 8),
    "chebyshev_polynomial_w": _chebyshev("w", 8),
    "shifted_chebyshev_polynomial_t": _chebyshev("t", 6),
    "shifted_chebyshev_polynomial_u": _chebyshev("u", 6),
    "shifted_chebyshev_polynomial_v": _chebyshev("v", 6),
    "shifted_chebyshev_polynomial_w": _chebyshev("w", 4),
    "hermite_polynomial_h": _hermite(True),
    "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": Recurrence(lambda ctx, x: _sub(ctx, _c(ctx, x, 1.0), x), _laguerre_step, _laguerre_special),
    "legendre_polynomial_p": Recurrence(lambda ctx, x: x, _legendre_step, _legendre_special),
}


def polynomial(ctx, name: str, x, n):
    """``name``'s polynomial of degree ``trunc(n)`` at ``x`` (both of one float dtype and shape)."""
    rec = RECURRENCES[name]
    if name.startswith("shifted_"):
        x = _sub(ctx, _add(ctx, x, x), _c(ctx, x, 1.0))
    # torch truncates n to an integer (a NaN or infinite Hermite degree reads as -1)
    n = ctx.select(ctx.compare(n, n, "EQ"), n, _c(ctx, n, -1.0))
    n = ctx.select(ctx.compare(ctx.unary("stablehlo.abs", n), _c(ctx, n, math.inf), "EQ"), _c(ctx, n, -1.0), n)
    n = _mul(ctx, ctx.unary("stablehlo.sign", n), ctx.unary("stablehlo.floor", ctx.unary("stablehlo.abs", n)))
    p0, p1 = _c(ctx, x, 1.0), rec.p1(ctx, x)
    # the loop: steps j = 1 .. max(n) - 1, each element stepping while j < its n
    top = ctx.reduce(n, list(range(n.rank)), "max") if n.rank else n
    top = ctx.select(ctx.compare(top, top, "EQ"), top, ctx.constant(0.0, n.dtype))
    top = ctx.binary("stablehlo.minimum", top, ctx.constant(1e6, n.dtype))  # (a bound: an inf degree would not stop)
    j0 = ctx.constant(1.0, x.dtype)

    def cond(c, j, p, q):
        return c.compare(j, top, "LT")

    def body(c, j, p, q):
        jj = c.broadcast_to(j, x.sym_shape, [])
        r = rec.step(c, jj, x, p, q)
        live = c.compare(jj, n, "LT")
        return [c.binary("stablehlo.add", j, c.constant(1.0, x.dtype)), c.select(live, q, p), c.select(live, r, q)]

    _, _, out = ctx.while_loop([j0, p0, p1], cond, body)
    out = ctx.select(ctx.compare(n, _c(ctx, n, 1.0), "EQ"), p1, out)
    out = ctx.select(ctx.compare(n, _c(ctx, n, 0.0), "EQ"), p0, out)
    out = rec.special(ctx, x, n, out)
    return ctx.select(ctx.compare(n, _c(ctx, n, 0.0), "LT"), _c(ctx, x, 0.0), out)


def _register(name: str) -> None:
    packet = getattr(aten, f"special_{name}")

    def lower(ctx, node, x, n):
        dt = ctx.out_dtype(node)
        cdt = _compute_dtype(dt)
        shape = ctx.out_shape(node)
        return ctx.convert(polynomial(ctx, name, ctx.tensor(x, cdt, shape), ctx.tensor(n, cdt, shape)), dt)

    lowers(packet.default, packet.x_scalar, packet.n_scalar)(lower)


for _name in RECURRENCES:
    _register(_name)
