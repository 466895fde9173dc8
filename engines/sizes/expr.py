"""The normal form: sums of monomials over atoms (variables, ``//``, ``%``, max, min).

The normal form, its normalising constructors and their memo/fast paths are
one invariant -- every way to build an Expr must give the same terms, key and
hash -- kept in this module; its text is :mod:`engines.sizes.text`.

An :class:`Expr` is a polynomial with integer coefficients whose atoms are
named size variables or opaque operations (``floordiv``, ``mod``, ``max``,
``min``) over normal-form expressions -- the structure of jax's
``shape_poly._DimExpr``.  Expressions are built only through normalising
constructors, are immutable and hashable, and ``==`` is structural equality of
normal forms (a constant compares and hashes equal to its ``int``).

Simplifications the normal form makes (every one exact for all integer values
of the variables, except where a symbolic divisor is assumed nonzero):

* polynomial arithmetic: sums and products expanded, like terms merged, zero
  terms dropped, commutative operands sorted (``2*(a+b) == a+b+b+a``);
* constant folding of every operation on constants;
* ``e // c`` and ``e % c`` for a constant ``c``: a negative ``c`` is flipped
  (``e // -c == (-e) // c``, ``e % -c == -((-e) % c)``); the multiple of
  ``c`` is taken out, leaving coefficients in ``[0, c)`` inside the atom
  (``(6*a + b + 7) // 3 == 2*a + 2 + (b + 1) // 3``,
  ``(6*a + b + 7) % 3 == (b + 1) % 3``, ``(-a) // 2 == a // 2 - a``);
  for c1, c2 > 0, ``(x // c1) // c2 == x // (c1*c2)`` when ``x // c1`` is
  the whole numerator, and ``(x % c1) % c2 == x % c2`` when c2 divides c1;
* ``e // d`` and ``e % d`` for a one-term symbolic divisor ``d`` (``k*m``):
  terms divisible by ``d`` are taken out the same way, so ``(a*b) // b == a``,
  ``(a*b + c) // b == a + c // b`` and ``(a*b) % b == 0``; for a divisor of
  several terms an exact polynomial quotient is found by long division
  (``(a*b + b) // (a + 1) == b``).  These ASSUME THE SYMBOLIC DIVISOR IS
  NONZERO (as jax and the engines this replaces do): where it is zero the
  original raised and the normal form may give a value instead;
* ``max``/``min``: an argument that differs from another by a constant is
  dropped when dominated (``max(a, a + 2, 3) == max(a + 2, 3)``,
  ``max(x, x + 1) == x + 1``) -- before and after nested ones of the same
  kind are flattened; duplicates dropped, constants folded into one, a single
  remaining argument returned as is, the rest sorted.

Nothing else is simplified: ``max(a, 0)`` stays (a variable may be negative
here; sign facts live in :mod:`engines.sizes.facts`), ``2*max(a, b)`` is not
``max(2*a, 2*b)``, ``(a // 2)*2 + a % 2`` is not ``a``. So equal normal
forms mean equal values, but not conversely.
"""

from __future__ import annotations

import keyword

from .text import fmt as _fmt
from .text import fmt_atom as _fmt_atom
from .text import fmt_operand as _fmt_operand
from .text import mono_key as _mono_key

KINDS = ("floordiv", "mod", "max", "min")


class SizeError(ValueError):
    """A size expression is malformed, or cannot be built or evaluated."""


class SizeZeroDivisionError(SizeError, ZeroDivisionError):
    """A size expression divides by zero (the message names the expression)."""


class UndecidedError(SizeError):
    """A comparison of sizes is not evident from the normal form and bounds."""


class Atom:
    """A factor of a monomial: a variable (``kind == "var"``, ``name``) or an
    operation (``kind`` in :data:`KINDS`) over normal-form ``args``."""

    __slots__ = ("_hash", "args", "key", "kind", "name")
    kind: str
    name: str | None
    args: tuple
    key: tuple
    _hash: int

    def __init__(self, kind: str, name: str | None = None, args: tuple = ()):
        self.kind, self.name, self.args = kind, name, args
        self.key = (0, name, ()) if kind == "var" else (1, kind, tuple(a.key for a in args))
        self._hash = hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Atom) and self.key == other.key

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Atom({_fmt_atom(self)})"

    def __reduce__(self):  # rebuilt, so the (per-process) string hash is recomputed
        return Atom, (self.kind, self.name, self.args)


class Expr:
    """A normalised size expression; build it with :func:`const`, :func:`var`,
    the operators ``+ - * // %`` (ints mix in), :func:`smax`, :func:`smin` or
    the parsers.

    ``terms`` is a tuple of ``(monomial, coefficient)`` sorted by monomial; a
    monomial is a tuple of ``(Atom, power)`` sorted by atom; the constant term
    has the empty monomial.
    """

    __slots__ = ("_hash", "key", "terms")
    terms: tuple
    key: tuple
    _hash: int

    def __init__(self, *_):
        raise TypeError("build sizes with const(), var(), operators or parse()")

    # -- queries ---------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms or (len(self.terms) == 1 and not self.terms[0][0])

    @property
    def value(self) -> int:
        """The value of a constant expression (raises :class:`SizeError` otherwise)."""
        if not self.is_const:
            raise SizeError(f"size {self} is not a constant")
        return self.terms[0][1] if self.terms else 0

    @property
    def vars(self) -> frozenset:
        """The names of the variables, at any depth."""
        out = set()
        for a in self.atoms():
            if a.kind == "var":
                out.add(a.name)
            else:
                for x in a.args:
                    out |= x.vars
        return frozenset(out)

    def atoms(self) -> tuple:
        """The top-level atoms, in canonical order (no duplicates)."""
        seen: dict = {}
        for m, _ in self.terms:
            for a, _ in m:
                seen.setdefault(a, None)
        return tuple(sorted(seen, key=lambda a: a.key))

    def single_atom(self) -> Atom | None:
        """The atom when the expression is exactly one atom (``1 * a``)."""
        if len(self.terms) == 1:
            m, c = self.terms[0]
            if c == 1 and len(m) == 1 and m[0][1] == 1:
                return m[0][0]
        return None

    def __eq__(self, other):
        if isinstance(other, Expr):
            return self.key == other.key
        if isinstance(other, int) and not isinstance(other, bool):
            return self.is_const and self.value == other
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return self._hash

    def __bool__(self):
        if self.is_const:
            return self.value != 0
        raise UndecidedError(f"the truth value of size {self} is not known; use facts.compare()")

    def __int__(self):
        return self.value

    __index__ = __int__

    def __str__(self):
        return _fmt(self)

    def __reduce__(self):  # rebuilt, so the (per-process) string hash is recomputed
        return _make, (dict(self.terms),)

    def __repr__(self):
        return f"Expr({_fmt(self)})"

    # -- arithmetic (always normalised) ------------------------------------
    def __add__(self, other):
        if type(other) is int and self.terms and self.terms[0][0]:  # no constant term yet: prepend it
            return _scaled(self, 1, other) if other else self
        k = ("+", self, other)
        r = _MEMO.get(k) if type(other) is not bool else None
        if r is None:
            other = as_expr(other)
            d = dict(self.terms)
            for m, c in other.terms:
                d[m] = d.get(m, 0) + c
            r = _remember(k, _make(d))
        return r

    __radd__ = __add__

    def __neg__(self):
        return _scaled(self, -1, 0)

    def __pos__(self):
        return self

    def __sub__(self, other):
        if type(other) is int:
            return self + (-other)
        k = ("-", self, other)
        r = _MEMO.get(k)
        return r if r is not None else _remember(k, self + (-as_expr(other)))

    def __rsub__(self, other):
        return as_expr(other) + (-self)

    def __mul__(self, other):
        if type(other) is int:  # scaling keeps the monomials and their order (the lazy path's ``x.shape[0] * 2``)
            return _scaled(self, other, 0) if other else ZERO
        other = as_expr(other)
        if len(other.terms) == 1 and not other.terms[0][0]:
            return _scaled(self, other.terms[0][1], 0) if other.terms[0][1] else ZERO
        k = ("*", self, other)
        r = _MEMO.get(k)
        if r is None:
            d: dict = {}
            for m1, c1 in self.terms:
                for m2, c2 in other.terms:
                    m = _mono_mul(m1, m2)
                    d[m] = d.get(m, 0) + c1 * c2
            r = _remember(k, _make(d))
        return r

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    def __mod__(self, other):
        return mod(self, other)

    def __rmod__(self, other):
        return mod(other, self)


# (op, operand, operand) -> result: Exprs are immutable and compare by structure,
# so a program traced again (the lazy path, every step) reuses its arithmetic
_MEMO: dict = {}
_MEMO_MAX = 1 << 16
_CONSTS: dict = {}  # int -> its Expr (shared: sizes meet the same few constants again and again)


def _remember(k, r):
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[k] = r
    return r


def _make(d: dict) -> Expr:
    """The Expr of ``{canonical monomial: coefficient}`` (zeros dropped)."""
    e = object.__new__(Expr)
    keyed = sorted([(_mono_key(m), m, c) for m, c in d.items() if c])  # monomial keys are distinct
    e.terms = tuple([(m, c) for _, m, c in keyed])
    e.key = tuple([(mk, c) for mk, _, c in keyed])
    e._hash = hash(e.terms[0][1] if e.terms else 0) if e.is_const else hash(e.key)
    return e


def _scaled(e: Expr, k: int, c: int) -> Expr:
    """``k * e + c`` for ``k != 0`` and an ``e`` without constant term when ``c != 0``:
    built directly (the monomials and their order are ``e``'s)."""
    out = object.__new__(Expr)
    terms = tuple([(m, k * v) for m, v in e.terms]) if k != 1 else e.terms
    key = tuple([(mk, k * v) for mk, v in e.key]) if k != 1 else e.key
    if c:
        terms, key = (((), c),) + terms, (((), c),) + key
    out.terms, out.key = terms, key
    out._hash = hash(out.terms[0][1] if out.terms else 0) if out.is_const else hash(key)
    return out


def _mono_mul(m1, m2):
    if not m1:
        return m2
    if not m2:
        return m1
    d = dict(m1)
    for a, p in m2:
        d[a] = d.get(a, 0) + p
    return tuple(sorted(d.items(), key=lambda ap: ap[0].key))


def _mono_div(m, dm):
    """``m / dm`` as a monomial, or None when ``dm`` does not divide ``m``."""
    d = dict(m)
    for a, p in dm:
        if d.get(a, 0) < p:
            return None
        d[a] -= p
    return tuple(sorted(((a, p) for a, p in d.items() if p), key=lambda ap: ap[0].key))


ZERO = _make({})
ONE = _make({(): 1})


def const(c: int) -> Expr:
    """The constant ``c`` (an ``int`` or ``__index__``-able; ``bool`` is refused)."""
    if isinstance(c, Expr):
        raise SizeError(f"const() of a size expression {c}")
    return as_expr(c)


def var(name: str) -> Expr:
    """The size variable ``name`` (a Python identifier, not a keyword)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SizeError(f"size variable name {name!r} is not an identifier")
    return trusted_var(name)


def trusted_var(name: str) -> Expr:
    """:func:`var` for a name the caller built as an identifier (not checked):
    the normal form of one variable, built directly (what _make would build;
    the lazy path makes one per dynamic input dim per step)."""
    a = Atom("var", name)
    e = object.__new__(Expr)
    e.terms = ((((a, 1),), 1),)
    e.key = ((((a.key, 1),), 1),)
    e._hash = hash(e.key)
    return e


def as_expr(x) -> Expr:
    """An :class:`Expr` or an integer as an :class:`Expr`."""
    if isinstance(x, Expr):
        return x
    if type(x) is int:
        e = _CONSTS.get(x)
        if e is None:
            if len(_CONSTS) >= 4096:
                _CONSTS.clear()
            e = _CONSTS[x] = _make({(): x})
        return e
    if isinstance(x, int) and not isinstance(x, bool):
        return _make({(): x})
    if not isinstance(x, bool) and hasattr(x, "__index__"):
        return _make({(): x.__index__()})
    raise SizeError(f"not a size: {x!r} ({type(x).__name__}); expected an int or a size expression")


def _atom(kind: str, args: tuple) -> Expr:
    return _make({((Atom(kind, None, args), 1),): 1})


def _single_term(d: Expr):
    return d.terms[0] if len(d.terms) == 1 else None


def _split(n: Expr, dm, dc: int):
    """``n == q * (dc*dm) + r``: q takes every term ``dc*dm`` divides."""
    q, r = {}, {}
    for m, k in n.terms:
        mq = _mono_div(m, dm)
        if mq is None:
            r[m] = k
        else:
            q[mq] = k // dc
            r[m] = k % dc
    return _make(q), _make(r)


def _degree(m) -> int:
    return sum(p for _, p in m)


def _exact_div(n: Expr, d: Expr, steps: int = 64) -> Expr | None:
    """``q`` with ``n == q*d`` by polynomial long division, or None."""
    quotient, rest = ZERO, n
    dm, dc = max(d.terms, key=lambda mc: (_degree(mc[0]), _mono_key(mc[0])))
    for _ in range(steps):
        if not rest.terms:
            return quotient
        m, k = max(rest.terms, key=lambda mc: (_degree(mc[0]), _mono_key(mc[0])))
        mq = _mono_div(m, dm)
        if mq is None or k % dc:
            return None
        q = _make({mq: k // dc})
        quotient, rest = quotient + q, rest - q * d
    return None


def floordiv(n, d) -> Expr:
    """``n // d`` with Python (floor) semantics, normalised."""
    n, d = as_expr(n), as_expr(d)
    k = ("//", n, d)
    r = _MEMO.get(k)
    return r if r is not None else _remember(k, _floordiv(n, d))


def _floordiv(n: Expr, d: Expr) -> Expr:
    if d.is_const:
        if d.value == 0:
            raise SizeZeroDivisionError(f"division by zero in size expression {_fmt_operand(n, False)} // 0")
        if n.is_const:
            return const(n.value // d.value)
    t = _single_term(d)
    if t is not None:
        dm, dc = t
        if dc < 0:
            return floordiv(-n, -d)
        q, r = _split(n, dm, dc)
        if not r.terms:
            return q
        if q.terms:
            return q + floordiv(r, d)
        if d.is_const:
            inner = n.single_atom()
            if inner is not None and inner.kind == "floordiv" and inner.args[1].is_const:
                return floordiv(inner.args[0], inner.args[1].value * d.value)
    else:
        q = _exact_div(n, d)
        if q is not None:
            return q
    return _atom("floordiv", (n, d))


def mod(n, d) -> Expr:
    """``n % d`` with Python semantics (the sign of the divisor), normalised."""
    n, d = as_expr(n), as_expr(d)
    k = ("%", n, d)
    r = _MEMO.get(k)
    return r if r is not None else _remember(k, _mod(n, d))


def _mod(n: Expr, d: Expr) -> Expr:
    if d.is_const:
        if d.value == 0:
            raise SizeZeroDivisionError(f"modulo by zero in size expression {_fmt_operand(n, False)} % 0")
        if n.is_const:
            return const(n.value % d.value)
    t = _single_term(d)
    if t is not None:
        dm, dc = t
        if dc < 0:
            return -mod(-n, -d)
        _, n = _split(n, dm, dc)
        if not n.terms:
            return ZERO
        if n.is_const and d.is_const:  # (2*a + 1) % 2 == 1
            return const(n.value % d.value)
        if d.is_const:
            inner = n.single_atom()
            if inner is not None and inner.kind == "mod" and inner.args[1].is_const and inner.args[1].value % d.value == 0:
                return mod(inner.args[0], d)
    elif _exact_div(n, d) is not None:
        return ZERO
    return _atom("mod", (n, d))
