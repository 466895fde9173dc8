"""Symbolic solver: every axis size as an expression of input dims and parameters.

``solve`` walks the equations ``dim expression == tensor.shape[j]`` (and the
constraint equations) and defines each unknown axis from the first equation
that isolates it.  Every other equation, plus the divisibility / sign side
conditions of the definitions, becomes a ``Check`` evaluated by the generated
code at run time -- unless it is a syntactic identity of the normal forms.

Sizes are expressions of :mod:`engines.sizes` over variables named like the
locals of the generated code (``d0_1`` for ``t0.shape[1]``, ``p_b`` for the
constraint ``b``), so ``sizes.source(e)`` is the code that computes ``e``.
"""

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from engines import sizes as sz

from .errors import AxisSizeError, SemanticError
from .parse import identifier
from .tree import Axis, Concat, Flat, List


@dataclass
class Check:
    """A condition the equations impose on the sizes, checked at run time."""

    kind: str  # "eq" | "div" | "nonneg" | "one" | "root" | "system" | "raise" (always fails: ``what`` is the error)
    lhs: sz.Expr
    rhs: sz.Expr
    what: str  # human description of the left side (axis/expression)
    where: str  # human description of the right side (e.g. args[1].shape[0])
    pos: list
    #: "system": the equations ``(f, value)`` over the size variables ``x0, x1, ...`` of the unknowns whose run-time
    #: sizes (``what``: ``q{k}_{name}, ...``) ``ssolve`` finds
    eqs: tuple = ()


def readable(src):
    """Size source as the user wrote it: ``d0_1`` -> ``args[0].shape[1]``, ``p_b`` -> ``b``, ``p0_b`` -> ``b[0]``."""
    src = re.sub(r"\bd(\d+)_(\d+)\b", r"args[\1].shape[\2]", src)
    src = re.sub(r"\bp_([A-Za-z0-9_]+)", r"\1", src)
    src = re.sub(r"\bq\d+_([A-Za-z0-9_]+)", r"\1", src)  # a size solved at run time (``isolve``)
    return re.sub(r"\bp(\d+)_([A-Za-z0-9_]+)", r"\2[\1]", src)


def failer(r):
    """``_fail(k, lhs, rhs)``: raise the error of recipe ``r``'s ``checks[k]``, failed with sizes
    lhs, rhs (generated code and closures call it; the checks are read only on failure)."""

    def _fail(k, lhs, rhs, _r=r, _desc=r.sig.description):
        c = _r.checks[k]
        if c.kind == "raise":  # an error einx raises once the sizes are solved (``c.what``)
            raise c.what.with_traceback(None)
        if c.kind == "system":
            raise AxisSizeError(
                _desc,
                "Failed to determine the size of all axes in the expression under the given constraints: "
                f"the equations {c.where} have no unique solution in sizes >= 0.\n%EXPR%",
                c.pos,
            )
        if c.kind == "one":
            raise SemanticError(
                _desc,
                f"The input axes {{{c.what!r}}} must appear in the output expression (its size is {lhs}, "
                "only axes of size 1 may be dropped).\n%EXPR%",
                c.pos,
            )
        if c.kind == "div":
            raise AxisSizeError(
                _desc,
                f"Failed to determine the size of all axes in the expression under the given constraints: "
                f"{c.what} = {readable(c.where)} = {lhs} is not divisible by {readable(sz.source(c.rhs))} = {rhs}."
                "\n%EXPR%",
                c.pos,
            )
        if c.kind == "nonneg":
            raise AxisSizeError(
                _desc,
                f"Failed to determine the size of all axes in the expression under the given constraints: "
                f"axis {c.what} = {readable(c.where)} = {lhs} would be negative.\n%EXPR%",
                c.pos,
            )
        raise AxisSizeError(
            _desc,
            f"Failed to determine the size of all axes in the expression under the given constraints: "
            f"{c.what} = {readable(sz.source(c.lhs))} = {lhs}, but {readable(c.where)} = {rhs}.\n%EXPR%",
            c.pos,
        )

    return _fail


def isolve(f, value):
    """The least integer ``x >= 0`` with ``f(x) >= value`` for a nondecreasing ``f`` (0 when there is none
    below ``value + 1``): the run-time size of an axis einx finds by solving a polynomial."""
    lo, hi = 0, 1
    while f(hi) < value and hi <= value:
        lo, hi = hi, hi * 2
    return _least(f, value, lo, hi)


def _least(f, value, lo, hi):
    """The least ``x`` in ``[lo, hi]`` with ``f(x) >= value`` for a nondecreasing ``f`` (``hi`` when none below it)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if f(mid) < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def ssolve(f, values, n):
    """The unique solution ``(x0, ..., x{n-1})`` in integers >= 0 of ``f(x0, ...) == values`` (``f`` gives a tuple,
    each entry nondecreasing in every ``x``: sums and products of sizes), or None when there is none or several: the
    run-time sizes of a system einx solves with sympy (``(1 + (a d)) (d + a)``). Candidates run to ``max(values) + 1``
    (a solution beyond ``max(values)`` means a free unknown, so several); the last unknown is bisected."""
    top = max(values, default=0) + 1
    m = len(values)
    found = []

    def first(g, v):  # the least x in [0, top + 1] with g(x) >= v (top + 2 when none)
        return _least(g, v, 0, top + 2)

    def walk(prefix):
        k = len(prefix)
        if k == n - 1:
            lo, hi = 0, top + 2
            for j in range(m):

                def g(x, j=j):
                    return f(*prefix, x)[j]

                lo, hi = max(lo, first(g, values[j])), min(hi, first(g, values[j] + 1))
            found.extend(tuple(prefix) + (x,) for x in range(lo, min(hi, lo + 2)))
            return
        for x in range(top + 2):
            low = f(*prefix, x, *[0] * (n - k - 1))  # the least the rest can give: past a value, larger x only grow
            if any(low[j] > values[j] for j in range(m)):
                break
            walk(prefix + [x])
            if len(found) > 1:
                return

    walk([])
    return found[0] if len(found) == 1 else None


def dim_code(i, j):
    """The size variable (and local of generated code) of ``t{i}.shape[j]``."""
    return f"d{i}_{j}"


#: the size variable of a name (``dim_code``, ``param_code``); expressions are immutable, so one per name is shared
size_var = functools.cache(sz.var)


def param_code(name, idx=None):
    """The size variable (and local of generated code) of constraint ``name``
    (``p_b``), or of element ``idx`` of a tuple constraint (``p0_b``: no
    constraint named ``b_0`` can take its name)."""
    safe = identifier(name)
    return f"p_{safe}" if idx is None else f"p{int(idx)}_{safe}"


def dim_index(e):
    """``(i, j)`` when size ``e`` is exactly the input dim ``t{i}.shape[j]`` (``dim_code(i, j)``), else None."""
    a = e.single_atom()
    if a is None or a.kind != "var" or a.name[0] != "d":
        return None
    i, _, j = a.name[1:].partition("_")
    return (int(i), int(j)) if i.isdigit() and j.isdigit() else None


class _Solver:
    def __init__(self, desc):
        self.desc = desc
        self.sizes = {}
        self.checks = []

    def size(self, d):
        """The size of a dim node, or None if it contains unknowns."""
        if isinstance(d, Axis):
            if d.value is not None:
                return sz.const(d.value)
            return self.sizes.get(d.name)
        if isinstance(d, Flat):
            return self.size_list(d.inner.children, math.prod, 1)
        if isinstance(d, Concat):
            return self.size_list(d.children, sum, 0)
        if isinstance(d, List):
            return self.size_list(d.children, math.prod, 1)
        raise AssertionError(type(d))

    def size_list(self, ds, combine, start):
        vals = [self.size(c) for c in ds]
        if any(v is None for v in vals):
            return None
        return combine(vals, start=sz.const(start))

    def unknown_leaves(self, d):
        if isinstance(d, Axis):
            return [] if (d.value is not None or d.name in self.sizes) else [d]
        kids = d.inner.children if isinstance(d, Flat) else d.children
        return [a for c in kids for a in self.unknown_leaves(c)]

    def equate(self, d, value, where, pos):
        """Try to use ``d == value``; return False if it must be retried later."""
        s = self.size(d)
        if s is not None:
            if s != value:
                self.checks.append(Check("eq", s, value, str_dim(d), where, pos))
            return True
        if isinstance(d, Axis):
            self.sizes[d.name] = value
            return True
        kids = d.inner.children if isinstance(d, (Flat, List)) else d.children
        unknown = [c for c in kids if self.size(c) is None]
        if len(unknown) > 1 and isinstance(d, Concat):
            return self.equate_linear(d, kids, unknown, value, where, pos)
        if len(unknown) != 1:
            return False
        u = unknown[0]
        if isinstance(d, Concat):
            rest = sum((self.size(c) for c in kids if c is not u), start=sz.const(0))
            sub = value - rest
            if rest != 0:
                self.checks.append(
                    Check("nonneg", sub, sz.const(0), str_dim(u), f"{where} - {sz.source(rest, atomic=True)}", pos)
                )
        else:
            rest = math.prod((self.size(c) for c in kids if c is not u), start=sz.const(1))
            # a constant 0 divisor: the "div" check always fails at run time, before the quotient is used
            sub = value // rest if rest != 0 else rest
            if rest != 1:
                self.checks.append(Check("div", value, rest, str_dim(d), where, pos))
        return self.equate(u, sub, where, pos)

    def equate_linear(self, d, kids, unknown, value, where, pos):
        """``(c + c)``, ``(c + (2 c))``: one unknown axis in several operands of a concatenation."""
        name, coef = None, sz.const(0)
        for u in unknown:
            leaves = u.inner.children if isinstance(u, Flat) else [u]
            un = [a for a in leaves if self.size(a) is None]
            if len(un) != 1 or not isinstance(un[0], Axis) or (name is not None and un[0].name != name):
                return False
            name = un[0].name
            coef = coef + math.prod((self.size(a) for a in leaves if a is not un[0]), start=sz.const(1))
        rest = sum((self.size(c) for c in kids if all(c is not u for u in unknown)), start=sz.const(0))
        sub = value - rest
        if rest != 0:
            self.checks.append(Check("nonneg", sub, sz.const(0), str_dim(d), f"{where} - {sz.source(rest, atomic=True)}", pos))
        if coef != 1:
            self.checks.append(Check("div", sub, coef, str_dim(d), where, pos))
        return self.equate(Axis(name), sub // coef if coef != 0 else coef, where, pos)

    def equate_root(self, d, value, where, pos):
        """``(d d) == value``, ``((d d) + d) == value``: one unknown name, nonlinear (einx solves
        these with sympy). Its size is found at run time, the least ``x >= 0`` with ``f(x) >= value``
        (``f``, the size of ``d`` in ``x``, is monotone: sums and products of sizes); a ``"root"``
        check defines it (``q{k}_{name} = _isolve(lambda x: f, value)``), then ``f(q) == value`` is
        checked like any equation. False when ``d`` holds more than one unknown name."""
        names = {a.name for a in self.unknown_leaves(d)}
        if len(names) != 1:
            return False
        (name,) = names
        self.sizes[name] = size_var("x")
        f = self.size(d)
        safe = re.sub(r"\W", "_", name)  # an ellipsis repetition "s.0": q0_s_0
        q = size_var(f"q{sum(c.kind == 'root' for c in self.checks)}_{safe}")
        self.sizes[name] = q
        self.checks.append(Check("root", f, value, sz.source(q), where, pos))
        return self.equate(d, value, where, pos)

    def linear(self, d):
        """``(coefficients, rest)`` with ``size(d) == sum(c * name) + rest`` over the unknown names, integer
        coefficients; None when ``d`` is not linear in them or a coefficient is not a constant."""
        if isinstance(d, Axis):
            s = self.size(d)
            return ({}, s) if s is not None else ({d.name: 1}, sz.const(0))
        if isinstance(d, Concat):
            coefs, rest = {}, sz.const(0)
            for c in d.children:
                t = self.linear(c)
                if t is None:
                    return None
                for n, k in t[0].items():
                    coefs[n] = coefs.get(n, 0) + k
                rest = rest + t[1]
            return coefs, rest
        kids = d.inner.children if isinstance(d, Flat) else d.children
        unknown = [c for c in kids if self.size(c) is None]
        known = math.prod((self.size(c) for c in kids if self.size(c) is not None), start=sz.const(1))
        if not unknown:
            return {}, known
        t = self.linear(unknown[0]) if len(unknown) == 1 and known.is_const else None
        return None if t is None else ({n: k * known.value for n, k in t[0].items()}, t[1] * known)

    def undetermined(self, names, pos):
        """einx's error for a system of equations in ``names`` that has no unique solution for any input shape."""
        shown = [n.replace("_anonymous_ellipsis_axis", "...") for n in names]
        return AxisSizeError(
            self.desc,
            f"Failed to uniquely determine the size of the axes {', '.join(shown)}. Please provide more constraints.\n%EXPR%",
            pos,
        )

    def equate_system(self, pending, exprs_all):
        """``(a + b) (a + (2 b))``, ``(1 + (a d)) (d + a)``: as many equations (``pending``, none of them with one
        unknown alone) as unknown names, which einx solves with sympy. Linear ones with constant coefficients are
        solved here by elimination (exact fractions; the divisibility and sign conditions become checks), others at
        run time (``ssolve``, a ``"system"`` check that defines the sizes). False when they are fewer than the unknowns
        or another name is unknown too (einx's "cannot determine" error); a singular linear system raises it."""
        stuck = sorted({a.name for p in pending for a in self.unknown_leaves(p[0])})
        names = {a.name for e in exprs_all for a in _all_axes(e) if a.value is None and a.name not in self.sizes}
        if len(stuck) < 2 or len(pending) < len(stuck) or names - set(stuck):
            return False
        pos = sorted({q for p in pending for q in p[3]})
        where = ", ".join(f"{str_dim(p[0])} == {p[2]}" for p in pending)
        rows = [self.linear(p[0]) for p in pending]
        if all(r is not None for r in rows):
            sol = _eliminate([[Fraction(r[0].get(n, 0)) for n in stuck] for r in rows])
            if sol is None:  # a singular system: no unique solution for any input shape (sympy: free symbols or none)
                raise self.undetermined(stuck, pos)
            rhs = [p[1] - r[1] for p, r in zip(pending, rows, strict=False)]
            for n, w in zip(stuck, sol, strict=False):
                den = math.lcm(*(x.denominator for x in w))
                num = sum((sz.const(int(x * den)) * b for x, b in zip(w, rhs, strict=False) if x), start=sz.const(0))
                if not sz.evident_nonneg(num):
                    self.checks.append(Check("nonneg", num, sz.const(0), n, sz.source(num), pos))
                if den != 1:
                    self.checks.append(Check("div", num, sz.const(den), n, sz.source(num), pos))
                self.sizes[n] = num // den if den != 1 else num
            return True
        xs = [size_var(f"x{i}") for i in range(len(stuck))]
        self.sizes.update(zip(stuck, xs, strict=False))
        eqs = tuple((self.size(p[0]), p[1]) for p in pending)
        if len({sz.source(f) for f, _ in eqs}) < len(stuck):
            # equations with one left side coincide or contradict each other for every input shape: fewer than the
            # unknowns (sympy: ``(s t)... (s t)...`` on 1 x 1 leaves s t = 1, free), even where sizes >= 0 decide them
            raise self.undetermined(stuck, pos)
        k = sum(c.kind in ("root", "system") for c in self.checks)
        qs = [size_var(f"q{k}_{safe}") for safe in (re.sub(r"\W", "_", n) for n in stuck)]
        self.sizes.update(zip(stuck, qs, strict=False))
        self.checks.append(Check("system", sz.const(0), sz.const(0), ", ".join(map(sz.source, qs)), where, pos, eqs))
        return True


def _eliminate(a):
    """For the ``m x n`` matrix ``a`` (Fractions) of rank ``n``: per unknown the weights ``w`` with
    ``x[i] == sum(w[i][k] * b[k])`` for every ``b`` the system ``a x == b`` is consistent for; None when singular."""
    m, n = len(a), len(a[0])
    rows = [list(r) + [Fraction(int(i == k)) for k in range(m)] for i, r in enumerate(a)]  # [a | identity]
    piv = []
    for col in range(n):
        k = next((i for i in range(len(piv), m) if rows[i][col] != 0), None)
        if k is None:
            return None
        r = len(piv)
        rows[r], rows[k] = rows[k], rows[r]
        rows[r] = [x / rows[r][col] for x in rows[r]]
        for i in range(m):
            if i != r and rows[i][col] != 0:
                rows[i] = [x - rows[i][col] * y for x, y in zip(rows[i], rows[r], strict=False)]
        piv.append(col)
    return [rows[i][n:] for i in range(n)]


def str_dim(d):
    if isinstance(d, Axis):
        return str(d.value) if d.value is not None else d.name
    if isinstance(d, Flat):
        return "(" + " ".join(str_dim(c) for c in d.inner.children) + ")"
    if isinstance(d, Concat):
        return "(" + " + ".join(str_dim(c) for c in d.children) + ")"
    return " ".join(str_dim(c) for c in d.children)


def solve(desc, exprs_in, exprs_all, params, extra=(), reps=None):
    """Return ``(sizes, checks)``.

    ``exprs_in``: expanded input expressions (their dims are read at run time; ``None``
    for an input whose dims are not read, a tensor factory's);
    ``exprs_all``: every expanded expression (for unknown detection);
    ``params``: {axis name: None | tuple length}; ``extra``: [(dim node, size, where)];
    ``reps``: {ellipsis axis name: repetitions} (a scalar constraint on such an axis sizes every repetition).
    """
    s = _Solver(desc)
    pending = []
    reps = reps or {}
    for name, shape in params.items():
        if shape is None and name in reps:
            for i in range(reps[name]):
                pending.append((Axis(f"{name}.{i}"), size_var(param_code(name)), f"constraint {name}", []))
        elif shape is None:
            pending.append((Axis(name), size_var(param_code(name)), f"constraint {name}", []))
        else:
            for i in range(shape):
                pending.append((Axis(f"{name}.{i}"), size_var(param_code(name, i)), f"constraint {name}[{i}]", []))
    for i, e in enumerate(exprs_in):
        for j, d in enumerate(e.children if e is not None else ()):
            pending.append((d, size_var(dim_code(i, j)), f"args[{i}].shape[{j}]", list(range(*d.pos)) if d.pos[0] >= 0 else []))
    for d, v, where in extra:
        pending.append((d, v, where, []))
    # Prefer defining axes from numbers (a coordinate axis's length: the graph needs it as a number), then from tensor
    # dims that are a single axis (cheapest code)
    pending.sort(key=lambda p: (0 if p[1].is_const else 1) if isinstance(p[0], Axis) else 2)
    while pending:
        rest = [p for p in pending if not s.equate(*p)]
        if len(rest) == len(pending):  # stuck: an equation of one unknown name, nonlinear, is solved at run time
            k = next((k for k, p in enumerate(rest) if s.equate_root(*p)), None)
            if k is not None:
                rest.pop(k)
            elif not s.equate_system(rest, exprs_all):  # else a system in several unknown names
                break
        pending = rest
    for e in exprs_all:  # number axes: their value (an output-only number axis is read by name too)
        for a in _all_axes(e):
            if a.value is not None:
                s.sizes[a.name] = sz.const(a.value)
    names = sorted({a.name for e in exprs_all for a in _all_axes(e) if a.value is None and a.name not in s.sizes})
    stuck = {a.name for p in pending for a in s.unknown_leaves(p[0])}
    if pending or names:
        unknown = names or sorted(stuck)
        shown = [n.replace("_anonymous_ellipsis_axis", "...") for n in unknown]
        pos = [p for e in exprs_all for a in _all_axes(e) if a.name in unknown for p in range(*a.pos)]
        word = "axes" if len(unknown) > 1 else "axis"
        raise AxisSizeError(
            desc,
            f"Failed to uniquely determine the size of the {word} {', '.join(shown)}. Please provide more constraints.\n%EXPR%",
            pos,
        )
    for e in exprs_all:  # unnamed axes ("1" in "a b -> a 1 b") have their size in the description
        for a in _all_axes(e):
            if a.value is not None:
                s.sizes.setdefault(a.name, sz.const(a.value))
    return s.sizes, s.checks


def _all_axes(e):
    from .expand import leaves

    return leaves(e)
