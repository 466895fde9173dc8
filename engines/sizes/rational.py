"""Integer results of size quotients -- floor, ceil, round and trunc of ``n / d`` --
and the rational values torch.export's SymFloats carry.

torch.export traces ``round(x.shape[0] / 3)`` as ``RoundToInt(IntTrueDiv(s, 3))``,
``math.ceil(n * 0.5)`` as ``CeilToInt(0.5*ToFloat(s))`` and ``torch.sym_int(n * 0.7)``
as ``TruncToInt(0.7*ToFloat(s))``: a float computed from sizes, brought back to an
integer. Such a float is a :class:`Ratio` here, ``num / den`` of two size
expressions (a float constant only when it is a short dyadic fraction), and
each rounding of it is an exact expression of the atoms the normal form already has
(``//``, ``%``, ``min``, ``max``), so every evaluator -- ints, Python source, fx
graphs, StableHLO scalar ops, the bounded executor's live sizes -- serves it unchanged:

* ``floor(n / d) == n // d`` and ``ceil(n / d) == -((-n) // d)`` (any nonzero ``d``);
* ``round(n / d)`` rounds half to even, as Python's ``round`` and torch's
  ``RoundToInt`` do: ``t - tie * (t % 2)`` with ``t = (2n + d) // (2d)`` (half up)
  and ``tie = 1 - min((2n + d) % (2d), 1)`` (1 exactly when ``n / d`` ends in .5);
* ``trunc(n / d) == max(n, 0) // d - max(-n, 0) // d`` (toward zero).

The value is exact; torch computes it in double. The two agree while the double
arithmetic cannot cross an integer: a true division of sizes below 2**26 (the error
of ``fl(n / d)`` is below ``1 / d``, the least distance of ``n / d`` from an integer
or a half), products and sums with integers and dyadic constants (``0.5``). A float
constant that is no short dyadic fraction (``0.7``) is refused (:func:`fraction`).

A negative constant divisor is flipped first; round and trunc ASSUME A SYMBOLIC
DIVISOR IS POSITIVE (sizes are), as the normal form assumes one nonzero.
"""

from __future__ import annotations

from fractions import Fraction

from .expr import Expr, SizeError, as_expr, const, floordiv, mod
from .minmax import smax, smin

#: the largest denominator of a float constant taken (a power of two: the float is exact)
MAX_DENOMINATOR = 2**10


def ceildiv(n, d) -> Expr:
    """``ceil(n / d)``, exact for any nonzero ``d``."""
    return -floordiv(-as_expr(n), d)


def _positive(n, d):
    n, d = as_expr(n), as_expr(d)
    if d.is_const and d.value < 0:
        return -n, -d
    if d.is_const and d.value == 0:
        floordiv(n, d)  # raises SizeZeroDivisionError naming the expression
    return n, d


def rounddiv(n, d) -> Expr:
    """``round(n / d)``, half to even (Python's ``round``, torch's ``RoundToInt``)."""
    n, d = _positive(n, d)
    if n.is_const and d.is_const:
        return const(round(Fraction(n.value, d.value)))  # Fraction rounds half to even
    if d == 1:
        return n
    t = floordiv(2 * n + d, 2 * d)
    tie = 1 - smin(mod(2 * n + d, 2 * d), 1)
    return t - tie * mod(t, 2)


def truncdiv(n, d) -> Expr:
    """``trunc(n / d)`` (toward zero: ``int()`` of a float, ``torch.sym_int``)."""
    n, d = _positive(n, d)
    if n.is_const and d.is_const:
        return const(int(Fraction(n.value, d.value)))
    return floordiv(smax(n, 0), d) - floordiv(smax(-n, 0), d)


ROUNDINGS = {"floor": floordiv, "ceil": ceildiv, "round": rounddiv, "trunc": truncdiv}


def fraction(c) -> Fraction:
    """A number constant as an exact fraction: a float only when it is a dyadic
    fraction with denominator up to :data:`MAX_DENOMINATOR` (``0.5``, ``1.25``), whose
    products with sizes double arithmetic computes exactly. Any other float raises
    :class:`SizeError`: torch rounds ``n * 0.7`` in double (``int(90 * 0.7) == 62``,
    ``7 * 90 // 10 == 63``), which no exact expression reproduces."""
    if isinstance(c, (int, Fraction)) and not isinstance(c, bool):
        return Fraction(c)
    f = float(c)
    if f != f or f in (float("inf"), float("-inf")):
        raise SizeError(f"size arithmetic on the float {f} is not supported")
    q = Fraction(f)
    if q.denominator > MAX_DENOMINATOR:
        raise SizeError(
            f"the float {f!r} in a size expression: torch rounds products with it in double, which the exact "
            f"size algebra does not reproduce (write the size in integers: n * 7 // 10 for n * 0.7)"
        )
    return q


class Ratio:
    """``num / den``: a SymFloat's exact value over size expressions (``den`` nonzero;
    kept positive when constant). Arithmetic with ints, floats and Ratios; :meth:`round`
    to an integer :class:`Expr` with one of :data:`ROUNDINGS`."""

    __slots__ = ("den", "num")

    def __init__(self, num, den=1):
        num, den = as_expr(num), as_expr(den)
        if den.is_const and den.value < 0:
            num, den = -num, -den
        self.num, self.den = num, den

    @classmethod
    def of(cls, x) -> Ratio:
        """``x`` (a Ratio, size expression, int, float or Fraction) as a Ratio."""
        if isinstance(x, Ratio):
            return x
        if isinstance(x, Expr) or (isinstance(x, int) and not isinstance(x, bool)):
            return cls(x)
        q = fraction(x)
        return cls(q.numerator, q.denominator)

    def __add__(self, other):
        o = Ratio.of(other)
        if self.den == o.den:
            return Ratio(self.num + o.num, self.den)
        return Ratio(self.num * o.den + o.num * self.den, self.den * o.den)

    __radd__ = __add__

    def __neg__(self):
        return Ratio(-self.num, self.den)

    def __sub__(self, other):
        return self + (-Ratio.of(other))

    def __mul__(self, other):
        o = Ratio.of(other)
        return Ratio(self.num * o.num, self.den * o.den)

    __rmul__ = __mul__

    def __truediv__(self, other):
        o = Ratio.of(other)
        if o.num == 0:
            raise SizeError(f"division by zero in the size quotient ({self}) / ({o})")
        return Ratio(self.num * o.den, self.den * o.num)

    def round(self, how: str) -> Expr:
        """The integer ``how(num / den)``, ``how`` one of :data:`ROUNDINGS`."""
        return ROUNDINGS[how](self.num, self.den)

    def __repr__(self):
        return f"Ratio({self})"

    def __str__(self):
        return str(self.num) if self.den == 1 else f"({self.num}) / ({self.den})"
