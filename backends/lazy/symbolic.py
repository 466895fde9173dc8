"""Size expressions: a small normalised algebra over input dim variables.

An :class:`Expr` is an integer polynomial whose atoms are dim variables
(:class:`Var`) or opaque ``floordiv``/``mod`` terms. Construction normalises
(terms merged and sorted, exact divisions folded), so structurally equal sizes
hash equal -- the same idea as jax's shape_poly.

:class:`SymSize` / :class:`SymBool` are the user-facing values (``x.shape[0]``,
``x.shape[0] == 3``). Arithmetic on them stays symbolic; anything that needs a
concrete Python value (``int()``, ``bool()``, ``if``) specialises on the
current size and records a guard in the tensor's context.
"""

from __future__ import annotations

import itertools
import operator

_uids = itertools.count()


class Var:
    """A dynamic input dim. ``src`` is the ``(leaf node, axis)`` it is read from."""

    __slots__ = ("uid", "name", "hint", "src", "bound", "key")

    def __init__(self, name: str, hint: int, src, bound: int | None = None):
        self.uid = next(_uids)
        self.name, self.hint, self.src, self.bound = name, hint, src, bound
        self.key = ("v", self.uid)

    def eval(self) -> int:
        return self.hint

    def vars(self):
        return (self,)

    def fmt(self, namer) -> str:
        return namer(self)


class _Op:
    """An opaque ``num // den`` or ``num % den`` atom."""

    __slots__ = ("kind", "num", "den", "key")

    def __init__(self, kind: str, num: "Expr", den: "Expr"):
        self.kind, self.num, self.den = kind, num, den
        self.key = (kind, num.key, den.key)

    def eval(self) -> int:
        f = operator.floordiv if self.kind == "floordiv" else operator.mod
        return f(self.num.eval(), self.den.eval())

    def vars(self):
        return self.num.vars() + self.den.vars()

    def fmt(self, namer) -> str:
        sym = "//" if self.kind == "floordiv" else "%"
        return f"({self.num.fmt(namer)} {sym} {self.den.fmt(namer)})"


def _mono_key(mono) -> tuple:
    return tuple((a.key, p) for a, p in mono)


class Expr:
    """An immutable integer polynomial: ``terms`` is a sorted tuple of
    ``(monomial, coeff)``; a monomial is a sorted tuple of ``(atom, power)``;
    the constant term has the empty monomial."""

    __slots__ = ("terms", "key", "_hash")

    def __init__(self, d: dict):
        items = sorted(((m, c) for m, c in d.items() if c), key=lambda mc: _mono_key(mc[0]))
        self.terms = tuple(items)
        self.key = tuple((_mono_key(m), c) for m, c in items)
        self._hash = hash(self.key)

    # -- construction --------------------------------------------------
    @staticmethod
    def const(c: int) -> "Expr":
        return Expr({(): int(c)})

    @staticmethod
    def var(v: Var) -> "Expr":
        return Expr({((v, 1),): 1})

    @staticmethod
    def atom(a) -> "Expr":
        return Expr({((a, 1),): 1})

    # -- queries ---------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms or (len(self.terms) == 1 and self.terms[0][0] == ())

    @property
    def value(self) -> int:
        """The constant value (only when ``is_const``)."""
        return self.terms[0][1] if self.terms else 0

    def eval(self) -> int:
        """The value under the current sizes (the hint)."""
        total = 0
        for mono, c in self.terms:
            p = c
            for a, k in mono:
                p *= a.eval() ** k
            total += p
        return total

    def vars(self) -> tuple:
        out = ()
        for mono, _ in self.terms:
            for a, _ in mono:
                out += a.vars()
        return out

    def fmt(self, namer=lambda v: v.name) -> str:
        parts = []
        for mono, c in self.terms:
            body = "*".join(a.fmt(namer) + (f"^{p}" if p > 1 else "") for a, p in mono)
            parts.append((body, c))
        parts.sort(key=lambda bc: (bc[0] == "", bc[1] < 0, bc[0]))
        out = ""
        for body, c in parts:
            mag = abs(c)
            s = str(mag) if not body else (body if mag == 1 else f"{mag}*{body}")
            out += (" - " if c < 0 else " + ") + s if out else ("-" if c < 0 else "") + s
        return out or "0"

    __str__ = fmt

    def __repr__(self) -> str:
        return f"Expr({self.fmt()})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    # -- arithmetic (always returns a normalised Expr) --------------------
    def add(self, other: "Expr", sign: int = 1) -> "Expr":
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) + sign * c
        return Expr(d)

    def sub(self, other: "Expr") -> "Expr":
        return self.add(other, -1)

    def mul(self, other: "Expr") -> "Expr":
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = _mono_mul(m1, m2)
                d[m] = d.get(m, 0) + c1 * c2
        return Expr(d)

    def floordiv(self, other: "Expr") -> "Expr":
        if other.is_const:
            c = other.value
            if c == 0:
                raise ZeroDivisionError("symbolic size divided by zero")
            if c == 1:
                return self
            if c > 0:  # (q*c + r) // c == q + r // c for integer polynomial q
                q = {m: k // c for m, k in self.terms}
                r = {m: k % c for m, k in self.terms}
                rest = Expr(r)
                tail = Expr.const(rest.value // c) if rest.is_const else Expr.atom(_Op("floordiv", rest, other))
                return Expr(q).add(tail)
        if self == other:
            return Expr.const(1)
        if len(other.terms) == 1:
            (dm, dc), = other.terms
            q = {}
            for m, k in self.terms:
                mq = _mono_div(m, dm)
                if mq is None or k % dc:
                    break
                q[mq] = k // dc
            else:
                return Expr(q)
        if self.is_const and self.value == 0:
            return self
        return Expr.atom(_Op("floordiv", self, other))

    def mod(self, other: "Expr") -> "Expr":
        if other.is_const and other.value > 0:
            c = other.value
            rest = Expr({m: k % c for m, k in self.terms})
            return Expr.const(rest.value % c) if rest.is_const else Expr.atom(_Op("mod", rest, other))
        q = self.floordiv(other)
        if not any(isinstance(a, _Op) for m, _ in q.terms for a, _ in m):
            return self.sub(other.mul(q))
        return Expr.atom(_Op("mod", self, other))


def _mono_mul(m1, m2):
    d = dict(m1)
    for a, p in m2:
        d[a] = d.get(a, 0) + p
    return tuple(sorted(d.items(), key=lambda ap: ap[0].key))


def _mono_div(m, dm):
    d = dict(m)
    for a, p in dm:
        if d.get(a, 0) < p:
            return None
        d[a] -= p
    return tuple(sorted(((a, p) for a, p in d.items() if p), key=lambda ap: ap[0].key))


# Expr atoms must hash by key for the dicts above.
for _cls in (Var, _Op):
    _cls.__hash__ = lambda self: hash(self.key)
    _cls.__eq__ = lambda self, other: getattr(other, "key", None) == self.key


def as_expr(x) -> Expr:
    """An int, :class:`SymSize` or :class:`Expr` as an :class:`Expr`."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, SymSize):
        return x.expr
    if isinstance(x, bool) or not isinstance(x, int):
        try:
            x = operator.index(x)
        except TypeError:
            raise TypeError(f"expected a size (int or symbolic size), got {type(x).__name__}") from None
    return Expr.const(x)


def is_size(x) -> bool:
    return isinstance(x, (SymSize, Expr)) or (isinstance(x, int) and not isinstance(x, bool))


# ---------------------------------------------------------------------------
# user-facing symbolic values
# ---------------------------------------------------------------------------
_CMP = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


class SymBool:
    """A pending comparison of sizes; ``bool()`` specialises and records a guard."""

    __slots__ = ("op", "lhs", "rhs", "ctx")

    def __init__(self, op, lhs: Expr, rhs: Expr, ctx):
        self.op, self.lhs, self.rhs, self.ctx = op, lhs, rhs, ctx

    def __bool__(self) -> bool:
        return self.ctx.guard(self.lhs, self.op, self.rhs, reason="bool")

    def __repr__(self) -> str:
        return f"SymBool({self.lhs} {self.op} {self.rhs})"


class SymSize:
    """A symbolic size (``x.shape[i]`` and arithmetic on it).

    ``+ - * // %`` stay symbolic; comparisons give a :class:`SymBool`;
    ``int()`` / ``index()`` / ``bool()`` / ``float()`` / true division force a
    concrete value and record a guard.
    """

    __slots__ = ("expr", "ctx")

    def __init__(self, expr: Expr, ctx):
        self.expr, self.ctx = expr, ctx

    @staticmethod
    def wrap(expr: Expr, ctx):
        """A plain int when ``expr`` is constant, else a :class:`SymSize`."""
        return expr.value if expr.is_const else SymSize(expr, ctx)

    @property
    def hint(self) -> int:
        return self.expr.eval()

    def _bin(self, other, fn, rev=False):
        if not is_size(other):
            if isinstance(other, float):
                return fn(float(other), float(self)) if rev else fn(float(self), float(other))
            return NotImplemented
        a, b = self.expr, as_expr(other)
        if rev:
            a, b = b, a
        return SymSize.wrap(fn(a, b), self.ctx)

    def __add__(self, o): return self._bin(o, Expr.add)
    def __radd__(self, o): return self._bin(o, Expr.add, True)
    def __sub__(self, o): return self._bin(o, Expr.sub)
    def __rsub__(self, o): return self._bin(o, Expr.sub, True)
    def __mul__(self, o): return self._bin(o, Expr.mul)
    def __rmul__(self, o): return self._bin(o, Expr.mul, True)
    def __floordiv__(self, o): return self._bin(o, Expr.floordiv)
    def __rfloordiv__(self, o): return self._bin(o, Expr.floordiv, True)
    def __mod__(self, o): return self._bin(o, Expr.mod)
    def __rmod__(self, o): return self._bin(o, Expr.mod, True)
    def __neg__(self): return SymSize.wrap(self.expr.mul(Expr.const(-1)), self.ctx)
    def __pos__(self): return self

    def __truediv__(self, o):
        return float(self) / float(o)

    def __rtruediv__(self, o):
        return float(o) / float(self)

    def _cmp(self, other, op):
        if not is_size(other):
            return NotImplemented
        return SymBool(op, self.expr, as_expr(other), self.ctx)

    def __eq__(self, o): return self._cmp(o, "==")
    def __ne__(self, o): return self._cmp(o, "!=")
    def __lt__(self, o): return self._cmp(o, "<")
    def __le__(self, o): return self._cmp(o, "<=")
    def __gt__(self, o): return self._cmp(o, ">")
    def __ge__(self, o): return self._cmp(o, ">=")

    def __hash__(self) -> int:
        return hash(self.expr)

    def __int__(self) -> int:
        return self.ctx.specialise(self.expr, reason="int")

    def __index__(self) -> int:
        return self.ctx.specialise(self.expr, reason="index")

    def __float__(self) -> float:
        return float(self.ctx.specialise(self.expr, reason="float"))

    def __bool__(self) -> bool:
        return self.ctx.guard(self.expr, "!=", Expr.const(0), reason="bool")

    def __repr__(self) -> str:
        return f"SymSize({self.expr}, hint={self.hint})"

    __str__ = __repr__


def compare(lhs: Expr, op: str, rhs: Expr) -> bool:
    """Evaluate ``lhs op rhs`` on the current sizes."""
    return _CMP[op](lhs.eval(), rhs.eval())
