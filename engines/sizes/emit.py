"""One evaluator for size expressions, parameterised by an "ops" object.

:func:`evaluate` walks the normal form (a sum of ``coefficient * atoms``) and
calls the ops: ``const``, ``var``, ``add``, ``mul``, ``floordiv``, ``mod``,
``max``, ``min`` (``sub`` and ``neg`` default to ``add``/``mul``). The order
is fixed: positive terms first, then negative ones (``sub``), the constant
last; factors in canonical order; ``max``/``min`` of several arguments fold
left. Values for sub-expressions (whole expression, term, monomial, atom) are
cached in ``memo`` by normal form, so a shared ``memo`` emits each size once
(CSE) -- one ``memo`` per (env, ops) pair.

``floordiv`` must floor and ``mod`` must take the sign of the divisor
(Python semantics on signed integers); targets that truncate fix the sign up
(see :class:`StableHLOOps`).

Ops here: :class:`IntOps` (``INT``, the default), :class:`ExprOps`
(substitution), :class:`SourceOps` (Python source text), :class:`NodeOps` /
:class:`FxOps` (graph nodes through a ``make(op, args)`` callback / a
``torch.fx.Graph``), :class:`StableHLOOps` (scalar ``tensor<i32>`` ops).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from .expr import Expr, SizeError, SizeZeroDivisionError, _atom, _make, _mono_key, as_expr
from .expr import var as _var
from .minmax import smax, smin
from .parse import missing, parse


class Ops:
    """The operations :func:`evaluate` needs. Subclasses define ``const``,
    ``add``, ``mul``, ``floordiv`` (floor), ``mod`` (sign of the divisor),
    ``max``, ``min``; ``var`` looks the name up in the environment by default."""

    def const(self, c: int):
        raise NotImplementedError

    def var(self, name: str, env: Mapping[str, Any]):
        """The value of variable ``name`` (raises :class:`SizeError` naming it)."""
        try:
            return env[name]
        except KeyError:
            raise missing(name, env) from None

    def add(self, a, b):
        raise NotImplementedError

    def mul(self, a, b):
        raise NotImplementedError

    def floordiv(self, a, b):
        raise NotImplementedError

    def mod(self, a, b):
        raise NotImplementedError

    def max(self, a, b):
        raise NotImplementedError

    def min(self, a, b):
        raise NotImplementedError

    def sub(self, a, b):
        return self.add(a, self.neg(b))

    def neg(self, a):
        return self.mul(a, self.const(-1))

    def note(self, expr: Expr, value) -> None:
        """Called once per sub-expression materialised (e.g. to label a node)."""


_NO = object()


def _order(terms):
    return sorted(terms, key=lambda mc: (not mc[0], mc[1] < 0, _mono_key(mc[0])))


class _Evaluator:
    def __init__(self, env, ops: Ops, memo: dict):
        self.env, self.ops, self.memo = env, ops, memo

    def _done(self, key: Expr, v):
        if key not in self.memo:
            self.memo[key] = v
            self.ops.note(key, v)
        return v

    def _get(self, key: Expr):
        return self.memo.get(key, _NO)

    def expr(self, e: Expr):
        v = self._get(e)
        if v is not _NO:
            return v
        ops = self.ops
        if e.is_const:
            return self._done(e, ops.const(e.value))
        acc, prefix = None, {}
        for m, c in _order(e.terms):  # every partial sum is cached too
            prefix[m] = c
            key = _make(prefix)
            v = self._get(key)
            if v is not _NO:
                acc = v
                continue
            t = self.term(m, abs(c))
            acc = (ops.neg(t) if c < 0 else t) if acc is None else ops.sub(acc, t) if c < 0 else ops.add(acc, t)
            self._done(key, acc)
        return acc

    def term(self, m, mag: int):
        if not m:
            return self.ops.const(mag)
        key = _make({m: mag})
        v = self._get(key)
        if v is not _NO:
            return v
        v = self.mono(m)
        return v if mag == 1 else self._done(key, self.ops.mul(v, self.ops.const(mag)))

    def mono(self, m):
        acc = None
        for j, (a, p) in enumerate(m):  # every partial product is cached too
            f = self.atom(a)
            for k in range(1, p + 1):
                if acc is None:
                    acc = f
                    continue
                key = _make({m[:j] + ((a, k),): 1})
                v = self._get(key)
                acc = self._done(key, self.ops.mul(acc, f)) if v is _NO else v
        return acc

    def atom(self, a):
        key = _make({((a, 1),): 1})
        v = self.memo.get(key, _NO)
        if v is not _NO:
            return v
        ops = self.ops
        if a.kind == "var":
            return self._done(key, ops.var(a.name, self.env))
        args = [self.expr(x) for x in a.args]
        if a.kind in ("max", "min"):
            f = ops.max if a.kind == "max" else ops.min
            acc = args[0]
            for i in range(1, len(args)):  # every partial max/min is cached too
                k = key if i == len(args) - 1 else _atom(a.kind, a.args[: i + 1])
                v = self._get(k)
                acc = self._done(k, f(acc, args[i])) if v is _NO else v
            return acc
        try:
            v = (ops.floordiv if a.kind == "floordiv" else ops.mod)(*args)
        except SizeError:
            raise
        except ZeroDivisionError:
            raise SizeZeroDivisionError(f"division by zero evaluating size {key}: the divisor {a.args[1]} is 0") from None
        return self._done(key, v)


def evaluate(expr, env: Mapping[str, Any] | None, ops: Ops | None = None, memo: dict | None = None):
    """The value of ``expr`` (an :class:`Expr`, int or text) with each variable
    taken from ``env`` through ``ops`` (default :data:`INT`: Python ints).

    Raises :class:`SizeError` naming a variable missing from ``env``, and
    :class:`SizeZeroDivisionError` naming the expression whose divisor is 0.
    """
    e = parse(expr) if isinstance(expr, str) else as_expr(expr)
    if (ops is None or ops is INT) and memo is None:
        return _int(e, env)  # the same walk, without the memo
    return _Evaluator(env, INT if ops is None else ops, {} if memo is None else memo).expr(e)


def _int(e: Expr, env) -> int:
    total = 0
    for m, c in e.terms:
        for a, p in m:
            c *= _int_atom(a, env) ** p
        total += c
    return total


def _int_atom(a, env) -> int:
    if a.kind == "var":
        return INT.var(a.name, env)
    args = [_int(x, env) for x in a.args]
    if a.kind in ("max", "min"):
        return max(args) if a.kind == "max" else min(args)
    if args[1] == 0:
        raise SizeZeroDivisionError(f"division by zero evaluating size {_make({((a, 1),): 1})}: the divisor {a.args[1]} is 0")
    return args[0] // args[1] if a.kind == "floordiv" else args[0] % args[1]


class IntOps(Ops):
    """Python integers (floor ``//``, Python ``%``)."""

    def const(self, c):
        return c

    add, sub, mul = staticmethod(operator.add), staticmethod(operator.sub), staticmethod(operator.mul)
    floordiv, mod, neg = staticmethod(operator.floordiv), staticmethod(operator.mod), staticmethod(operator.neg)

    # methods rather than staticmethod(max): the builtins' overloads (key=, default=,
    # iterables) are not the two-operand signature ExprOps overrides
    def max(self, a, b):
        return max(a, b)

    def min(self, a, b):
        return min(a, b)


INT = IntOps()


class ExprOps(IntOps):
    """Back into the algebra: ``env`` maps names to sizes (ints or Exprs);
    names it lacks stay variables. See :func:`substitute`."""

    def const(self, c):
        return as_expr(c)

    def var(self, name, env):
        return as_expr(env[name]) if name in env else _var(name)

    def max(self, a, b):
        return smax(a, b)

    def min(self, a, b):
        return smin(a, b)


def substitute(expr, mapping: Mapping[str, Any]) -> Expr:
    """``expr`` with variables replaced by the sizes in ``mapping``, renormalised."""
    return evaluate(expr, mapping, ExprOps())


# -- Python source -------------------------------------------------------------
_ATOM, _MUL, _ADD = 3, 2, 1
_SIMPLE = re.compile(r"[\w.]+(\[[^\[\]]*\]|\([^()]*\))*")


class Src(str):
    """Python source with its precedence (for minimal parentheses)."""

    prec = _ATOM


def _src(text: str, prec: int) -> Src:
    s = Src(text)
    s.prec = prec
    return s


def _p(s, prec: int) -> str:
    return f"({s})" if s.prec < prec else str(s)


class SourceOps(Ops):
    """Python source text: ``env`` maps each variable to a source snippet
    (``"t1.shape[0]"``, ``"P['b']"``; anything not a plain name, attribute,
    index or call is bracketed), or is ``None`` to write each name as is. The text uses ``//``, ``%``, ``max``, ``min``
    with Python semantics."""

    def const(self, c):
        return _src(str(c), _ATOM if c >= 0 else _ADD)

    def var(self, name, env):
        if env is None:  # each variable written as its own name
            return _src(name, _ATOM)
        s = super().var(name, env)
        if isinstance(s, Src):
            return s
        return _src(s, _ATOM) if _SIMPLE.fullmatch(s) else _src(f"({s})", _ATOM)

    def add(self, a, b):
        return _src(f"{_p(a, _ADD)} + {_p(b, _MUL)}", _ADD)

    def sub(self, a, b):
        return _src(f"{_p(a, _ADD)} - {_p(b, _MUL)}", _ADD)

    def mul(self, a, b):
        return _src(f"{_p(a, _MUL)} * {_p(b, _ATOM)}", _MUL)

    def floordiv(self, a, b):
        return _src(f"{_p(a, _MUL)} // {_p(b, _ATOM)}", _MUL)

    def mod(self, a, b):
        return _src(f"{_p(a, _MUL)} % {_p(b, _ATOM)}", _MUL)

    def neg(self, a):
        return _src(f"-{_p(a, _ATOM)}", _MUL)

    def max(self, a, b):
        return _src(f"max({a}, {b})", _ATOM)

    def min(self, a, b):
        return _src(f"min({a}, {b})", _ATOM)


def source(expr, env: Mapping[str, Any] | None = None, memo: dict | None = None, atomic: bool = False) -> str:
    """Python source computing ``expr``; ``env`` maps names to source snippets
    (``None``: each variable is written as its name, e.g. a local of the
    generated code). ``atomic`` brackets the text unless it is a name, call,
    index or non-negative literal, so it can be pasted into any context."""
    s = evaluate(expr, env, SourceOps(), memo)
    return _p(s, _ATOM) if atomic else str(s)


# -- graph nodes ---------------------------------------------------------------
class NodeOps(Ops):
    """Graph nodes built by ``make(op, args)``, ``op`` one of ``add``, ``sub``,
    ``mul``, ``floordiv``, ``mod``, ``max``, ``min`` (Python semantics).
    Constants stay Python ints and int-only arithmetic is folded, so a node is
    made only when an operand is a node, and once per ``(op, args)`` (nodes
    must be hashable). ``env`` maps names to nodes (or ints).
    """

    def __init__(self, make: Callable[[str, tuple], Any], note: Callable[[Expr, Any], None] | None = None):
        self.make, self._note = make, note
        self._made: dict = {}

    def const(self, c):
        return c

    def _bin(self, op: str, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return getattr(INT, op)(a, b)
        k = (op, a, b)
        if k not in self._made:
            self._made[k] = self.make(op, (a, b))
        return self._made[k]

    def add(self, a, b):
        return self._bin("add", a, b)

    def sub(self, a, b):
        return self._bin("sub", a, b)

    def mul(self, a, b):
        return self._bin("mul", a, b)

    def floordiv(self, a, b):
        return self._bin("floordiv", a, b)

    def mod(self, a, b):
        return self._bin("mod", a, b)

    def max(self, a, b):
        return self._bin("max", a, b)

    def min(self, a, b):
        return self._bin("min", a, b)

    def note(self, expr, value):
        if self._note is not None:
            self._note(expr, value)


class FxOps(NodeOps):
    """``call_function`` nodes in a ``torch.fx.Graph`` (or anything with
    ``call_function(target, args)``): ``operator.*`` for the arithmetic,
    ``torch.sym_max``/``torch.sym_min`` (imported here, not at module import)
    unless ``targets`` overrides them. ``env`` maps names to nodes, e.g.
    ``graph.call_function(torch.ops.aten.sym_size.int, (placeholder, axis))``."""

    def __init__(self, graph, targets: Mapping[str, Callable] | None = None):
        t = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv, "mod": operator.mod}
        if targets is None or not {"max", "min"} <= set(targets):
            import torch

            t.update(max=torch.sym_max, min=torch.sym_min)
        t.update(targets or {})
        super().__init__(lambda op, args: graph.call_function(t[op], args))


class StableHLOOps(Ops):
    """Scalar ``tensor<i32>`` StableHLO ops through a lowering context with
    ``constant(value, dtype)``, ``op(name, operands, (shape, dtype), attrs=)``
    and ``compare(a, b, direction)`` (``engines.stablehlo.lowering.builder.LoweringContext``).

    ``env`` maps a name to an emitted value or to ``(tensor value, axis)``,
    read with ``get_dimension_size``. StableHLO's ``divide``/``remainder``
    truncate; ``select`` fix-ups give floor division and Python modulo.
    """

    def __init__(self, ctx, dtype: str = "i32"):
        self.ctx, self.dtype = ctx, dtype

    def _op(self, name, *operands, dtype=None, attrs=None):
        kw = {"attrs": attrs} if attrs else {}
        return self.ctx.op(f"stablehlo.{name}", list(operands), ((), dtype or self.dtype), **kw)

    def const(self, c):
        return self.ctx.constant(c, self.dtype)

    def var(self, name, env):
        v = super().var(name, env)
        if isinstance(v, tuple):
            value, axis = v
            return self._op("get_dimension_size", value, attrs={"dimension": f"{axis} : i64"})
        return v

    def add(self, a, b):
        return self._op("add", a, b)

    def sub(self, a, b):
        return self._op("subtract", a, b)

    # 0 - a, not negate: StableHLO's shape refinement folds subtract but has no
    # folder for negate, so a negated size left the refined module dynamic
    def neg(self, a):
        return self._op("subtract", self.const(0), a)

    def mul(self, a, b):
        return self._op("multiply", a, b)

    def max(self, a, b):
        return self._op("maximum", a, b)

    def min(self, a, b):
        return self._op("minimum", a, b)

    def _fix(self, r, b):
        """i1: the truncated remainder ``r`` is nonzero and its sign differs from ``b``'s."""
        zero, cmp = self.const(0), self.ctx.compare
        differs = cmp(cmp(r, zero, "LT"), cmp(b, zero, "LT"), "NE")
        return self._op("and", cmp(r, zero, "NE"), differs, dtype="i1")

    def floordiv(self, a, b):
        q, r = self._op("divide", a, b), self._op("remainder", a, b)
        return self._op("select", self._fix(r, b), self._op("subtract", q, self.const(1)), q)

    def mod(self, a, b):
        r = self._op("remainder", a, b)
        return self._op("select", self._fix(r, b), self._op("add", r, b), r)
