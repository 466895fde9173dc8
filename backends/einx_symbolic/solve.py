"""Symbolic solver: every axis size as an expression of input dims and parameters.

``solve`` walks the equations ``dim expression == tensor.shape[j]`` (and the
constraint equations) and defines each unknown axis from the first equation
that isolates it.  Every other equation, plus the divisibility / sign side
conditions of the definitions, becomes a ``Check`` evaluated by the generated
code at run time -- unless it is a syntactic identity of the normal forms.

Sizes are expressions of :mod:`backends.sizes` over variables named like the
locals of the generated code (``d0_1`` for ``t0.shape[1]``, ``p_b`` for the
constraint ``b``), so ``sizes.source(e)`` is the code that computes ``e``.
"""
import functools
import math
import re
from dataclasses import dataclass

from backends import sizes as sz

from .errors import AxisSizeError, NotSupportedError, SemanticError
from .parse import identifier
from .tree import Axis, Concat, Flat, List


@dataclass
class Check:
    """A condition the equations impose on the sizes, checked at run time."""
    kind: str  # "eq" | "div" | "nonneg" | "one" | "raise" (always fails: ``what`` is the error)
    lhs: sz.Expr
    rhs: sz.Expr
    what: str  # human description of the left side (axis/expression)
    where: str  # human description of the right side (e.g. args[1].shape[0])
    pos: list


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
        if c.kind == "one":
            raise SemanticError(_desc, f"The input axes {{{c.what!r}}} must appear in the output expression (its size is {lhs}, "
                                "only axes of size 1 may be dropped).\n%EXPR%", c.pos)
        if c.kind == "div":
            raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                                f"{c.what} = {readable(c.where)} = {lhs} is not divisible by {readable(sz.source(c.rhs))} = {rhs}."
                                "\n%EXPR%", c.pos)
        if c.kind == "nonneg":
            raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                                f"axis {c.what} = {readable(c.where)} = {lhs} would be negative.\n%EXPR%", c.pos)
        raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                            f"{c.what} = {readable(sz.source(c.lhs))} = {lhs}, but {readable(c.where)} = {rhs}.\n%EXPR%", c.pos)
    return _fail


def isolve(f, value):
    """The least integer ``x >= 0`` with ``f(x) >= value`` for a nondecreasing ``f`` (0 when there is none
    below ``value + 1``): the run-time size of an axis einx finds by solving a polynomial."""
    lo, hi = 0, 1
    while f(hi) < value and hi <= value:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if f(mid) < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


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
                self.checks.append(Check("nonneg", sub, sz.const(0), str_dim(u), f"{where} - {sz.source(rest, atomic=True)}", pos))
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
        name, = names
        self.sizes[name] = size_var("x")
        f = self.size(d)
        safe = re.sub(r"\W", "_", name)  # an ellipsis repetition "s.0": q0_s_0
        q = size_var(f"q{sum(c.kind == 'root' for c in self.checks)}_{safe}")
        self.sizes[name] = q
        self.checks.append(Check("root", f, value, sz.source(q), where, pos))
        return self.equate(d, value, where, pos)


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
    # Prefer defining axes from tensor dims that are a single axis (cheapest code)
    pending.sort(key=lambda p: 0 if isinstance(p[0], Axis) else 1)
    while pending:
        rest = [p for p in pending if not s.equate(*p)]
        if len(rest) == len(pending):  # stuck: an equation of one unknown name, nonlinear, is solved at run time
            k = next((k for k, p in enumerate(rest) if s.equate_root(*p)), None)
            if k is None:
                break
            rest.pop(k)
        pending = rest
    for e in exprs_all:  # number axes: their value (an output-only number axis is read by name too)
        for a in _all_axes(e):
            if a.value is not None:
                s.sizes[a.name] = sz.const(a.value)
    names = sorted({a.name for e in exprs_all for a in _all_axes(e) if a.value is None and a.name not in s.sizes})
    stuck = {a.name for p in pending for a in s.unknown_leaves(p[0])}
    if pending and len(stuck) > 1 and not set(names) - stuck and len(pending) >= len(stuck):
        # as many equations as unknowns, none with one unknown alone (``(a + b) (a + 2 b)``, ``(1 + (a d)) (d + a)``):
        # einx solves such systems with sympy; ours solves one unknown at a time
        pos = [p for e in exprs_all for a in _all_axes(e) if a.name in stuck for p in range(*a.pos)]
        raise NotSupportedError(desc, f"a system of equations in several unknown sizes ({', '.join(sorted(stuck))}).\n%EXPR%", pos)
    if pending or names:
        unknown = names or sorted(stuck)
        shown = [n.replace("_anonymous_ellipsis_axis", "...") for n in unknown]
        pos = [p for e in exprs_all for a in _all_axes(e) if a.name in unknown for p in range(*a.pos)]
        word = "axes" if len(unknown) > 1 else "axis"
        raise AxisSizeError(desc, f"Failed to uniquely determine the size of the {word} {', '.join(shown)}. "
                            "Please provide more constraints.\n%EXPR%", pos)
    for e in exprs_all:  # unnamed axes ("1" in "a b -> a 1 b") have their size in the description
        for a in _all_axes(e):
            if a.value is not None:
                s.sizes.setdefault(a.name, sz.const(a.value))
    return s.sizes, s.checks


def _all_axes(e):
    from .expand import leaves
    return leaves(e)
