"""Facts about sizes, decided only when evident; comparisons never guess.

:func:`bounds` is interval arithmetic over the normal form, each variable in
its range (by default ``[0, inf)``: a size). A fact holds when its interval
shows it; :func:`compare` answers ``True``/``False`` when the interval of
``a - b`` decides it and raises :class:`UndecidedError` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .expr import Expr, UndecidedError, _make, as_expr, mod
from .parse import parse

INF = math.inf
SIZE_RANGE = (0, None)


def _e(x) -> Expr:
    return parse(x) if isinstance(x, str) else as_expr(x)


def _m(x, y):
    return 0 if x == 0 or y == 0 else x * y  # 0 * inf is 0 for endpoints


def _mul(i, j):
    c = [_m(x, y) for x in i for y in j]
    return min(c), max(c)


def _fdiv(x, c: int):
    return x // c if math.isfinite(x) else x


def bounds(e, ranges: Mapping[str, tuple] | None = None, default: tuple = SIZE_RANGE) -> tuple:
    """``(lo, hi)`` with ``lo <= e <= hi`` for every value of the variables in
    their ranges (``ranges[name] = (lo, hi)``, ``None`` for unbounded; names
    not in ``ranges`` take ``default``, ``[0, inf)``). Ends may be
    ``-math.inf``/``math.inf``; symbolic divisors are assumed nonzero.

    A top-level ``c * max(...)``/``c * min(...)`` term is also bounded by
    putting each argument in its place (``min(a, 3) - a <= 0``).
    """
    return _refined(_e(e), ranges or {}, default, 2)


def _refined(e: Expr, ranges, default, depth: int) -> tuple:
    lo, hi = _interval(e, ranges, default)
    if depth <= 0:
        return lo, hi
    for m, c in e.terms:
        if len(m) == 1 and m[0][1] == 1 and m[0][0].kind in ("max", "min"):
            a = m[0][0]
            rest = e - c * _make({m: 1})
            alts = [_refined(rest + c * x, ranges, default, depth - 1) for x in a.args]
            lo, hi = max(lo, min(x for x, _ in alts)), min(hi, max(x for _, x in alts))  # e is one of them
            if (a.kind == "min") == (c > 0):  # e <= each of them
                hi = min(hi, min(x for _, x in alts))
            else:  # e >= each of them
                lo = max(lo, max(x for x, _ in alts))
    return lo, hi


def _interval(e: Expr, ranges, default) -> tuple:
    memo: dict = {}

    def var(name):
        lo, hi = ranges.get(name, default)
        return (-INF if lo is None else lo), (INF if hi is None else hi)

    def atom(a):
        if a.kind == "var":
            return var(a.name)
        args = [expr(x) for x in a.args]
        if a.kind == "max":
            return max(lo for lo, _ in args), max(hi for _, hi in args)
        if a.kind == "min":
            return min(lo for lo, _ in args), min(hi for _, hi in args)
        (nlo, nhi), (dlo, dhi) = args
        if a.kind == "mod":
            lo, hi = min(0, dlo + 1), max(0, dhi - 1)
            if dlo >= 1 and nlo >= 0:
                hi = min(hi, nhi)
            return lo, hi
        if dlo == dhi and dlo > 0:  # a constant divisor
            return _fdiv(nlo, dlo), _fdiv(nhi, dlo)
        if dlo >= 1:
            return min(nlo, 0), max(nhi, 0)
        if dhi <= -1:
            return min(-nhi, 0), max(-nlo, 0)
        return -INF, INF

    def expr(x: Expr):
        if x in memo:
            return memo[x]
        lo = hi = 0
        for m, c in x.terms:
            t = (1, 1)
            for a, p in m:
                for _ in range(p):
                    t = _mul(t, atom(a))
            t = _mul(t, (c, c))
            lo, hi = lo + t[0], hi + t[1]
        memo[x] = (lo, hi)
        return lo, hi

    return expr(e)


_DECIDE = {
    ">=": lambda lo, hi: True if lo >= 0 else False if hi < 0 else None,
    ">": lambda lo, hi: True if lo > 0 else False if hi <= 0 else None,
    "<=": lambda lo, hi: True if hi <= 0 else False if lo > 0 else None,
    "<": lambda lo, hi: True if hi < 0 else False if lo >= 0 else None,
    "==": lambda lo, hi: True if lo == hi == 0 else False if lo > 0 or hi < 0 else None,
    "!=": lambda lo, hi: False if lo == hi == 0 else True if lo > 0 or hi < 0 else None,
}


def compare(a, op: str, b, ranges: Mapping[str, tuple] | None = None) -> bool:
    """``a op b`` (``op`` one of ``== != < <= > >=``) when evident from the
    bounds of ``a - b``; raises :class:`UndecidedError` naming both sides
    otherwise (never guesses)."""
    if op not in _DECIDE:
        raise ValueError(f"unknown comparison {op!r}; valid: {', '.join(_DECIDE)}")
    a, b = _e(a), _e(b)
    diff = a - b
    lo, hi = bounds(diff, ranges)
    r = _DECIDE[op](lo, hi)
    if r is None:
        raise UndecidedError(f"cannot decide {a} {op} {b}: the difference {diff} is only known to lie in [{lo}, {hi}]")
    return r


def evident_nonneg(e, ranges: Mapping[str, tuple] | None = None) -> bool:
    """True when ``e >= 0`` is evident (False means "not evident", not "negative")."""
    return bounds(e, ranges)[0] >= 0


def evident_positive(e, ranges: Mapping[str, tuple] | None = None) -> bool:
    """True when ``e >= 1`` is evident (False means "not evident")."""
    return bounds(e, ranges)[0] >= 1


def evident_divisible(e, d) -> bool:
    """True when the normal form of ``e % d`` is 0 (a symbolic ``d`` assumed
    nonzero); False means "not evident"."""
    return mod(_e(e), _e(d)) == 0
