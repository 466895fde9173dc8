"""A small, normalised, hashable algebra of symbolic sizes.

An ``Expr`` is a polynomial with integer coefficients over *atoms*: input dims
(``Sym("t1.shape[0]")``), constraint parameters (``Sym("P['b']")``) and floor
divisions of two expressions.  Equal polynomials have equal normal forms, so
``==`` is structural equality of normal forms.  We never decide anything that
is not structurally evident: a comparison that is not a syntactic identity is
turned into a run-time check by the caller (never a guess).
"""
import re
from functools import total_ordering


@total_ordering
class Atom:
    __slots__ = ("key", "code", "_h")

    def __init__(self, key, code):
        self.key, self.code = key, code
        self._h = hash(key)

    def __eq__(self, other):
        return isinstance(other, Atom) and self.key == other.key

    def __lt__(self, other):
        return repr(self.key) < repr(other.key)

    def __hash__(self):
        return self._h


def Sym(code):
    """A size read at run time; ``code`` is the Python expression that reads it."""
    e = Expr.__new__(Expr)  # already normal: one monomial of one atom, coefficient 1
    e.terms = {(Atom(("sym", code), code),): 1}
    e._h = hash(frozenset(e.terms.items()))
    return e


class Expr:
    __slots__ = ("terms", "_h")

    def __init__(self, terms):
        # terms: {monomial (sorted tuple of Atoms): int coefficient}
        self.terms = {tuple(sorted(m)): c for m, c in terms.items() if c != 0}
        self._h = hash(frozenset(self.terms.items()))

    @staticmethod
    def const(c):
        return Expr({(): int(c)})

    # -- queries -----------------------------------------------------------
    def is_const(self):
        return all(m == () for m in self.terms)

    def value(self):
        assert self.is_const()
        return self.terms.get((), 0)

    def __eq__(self, other):
        other = _e(other)
        return self.terms == other.terms

    def __hash__(self):
        return self._h

    # -- arithmetic ----------------------------------------------------------
    def __add__(self, other):
        other = _e(other)
        t = dict(self.terms)
        for m, c in other.terms.items():
            t[m] = t.get(m, 0) + c
        return Expr(t)

    __radd__ = __add__

    def __neg__(self):
        return Expr({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-_e(other))

    def __rsub__(self, other):
        return _e(other) - self

    def __mul__(self, other):
        other = _e(other)
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return Expr(t)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        other = _e(other)
        if other.is_const():
            d = other.value()
            if d == 1:
                return self
            if d != 0 and all(c % d == 0 for c in self.terms.values()):
                return Expr({m: c // d for m, c in self.terms.items()})
        if self.is_const() and other.is_const() and other.value() != 0:
            return Expr.const(self.value() // other.value())
        # exact cancellation of a single-term divisor present in every term
        if len(other.terms) == 1:
            (dm, dc), = other.terms.items()
            if dc == 1 and dm and all(_contains(m, dm) for m in self.terms):
                return Expr({_remove(m, dm): c for m, c in self.terms.items()})
        code = f"({self.code()} // {as_operand(other.code())})"
        return Expr({(Atom(("fd", self._key(), other._key()), code),): 1})

    def _key(self):
        return tuple(sorted(((tuple(a.key for a in m), c) for m, c in self.terms.items()), key=repr))

    # -- output -----------------------------------------------------------------
    def code(self):
        """Python source computing this size at run time."""
        if not self.terms:
            return "0"
        if len(self.terms) == 1:
            (m, c), = self.terms.items()
            if c == 1 and len(m) == 1 and "+" not in m[0].code and " - " not in m[0].code:  # a single atom
                return m[0].code
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: repr(mc[0])):
            factors = [a.code for a in m]
            if c != 1 or not factors:
                factors = [str(c)] + factors if c != -1 or not factors else ["-" + factors[0]] + factors[1:]
            parts.append(" * ".join(factors))
        s = " + ".join(parts).replace("+ -", "- ")
        return s if len(parts) == 1 and len(self.terms) == 1 and "+" not in s and " - " not in s else f"({s})"

    def __repr__(self):
        return self.code()


def as_operand(code):
    """``code`` safe as the right operand of ``//`` or ``%`` (which bind as
    tightly as ``*``): a name, a number or a subscript stays, else parentheses."""
    return code if _TOKEN.fullmatch(code) else f"({code})"


_TOKEN = re.compile(r"-?[\w.]+(\[\w+\])*")


def _e(x):
    return x if isinstance(x, Expr) else Expr.const(x)


def _contains(m, sub):
    m = list(m)
    for a in sub:
        if a in m:
            m.remove(a)
        else:
            return False
    return True


def _remove(m, sub):
    m = list(m)
    for a in sub:
        m.remove(a)
    return tuple(m)


def prod(xs):
    r = Expr.const(1)
    for x in xs:
        r = r * x
    return r
