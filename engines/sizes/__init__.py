"""One algebra of symbolic sizes (modelled on jax's ``export/shape_poly.py``).

Sums, products, floor division, remainder, min and max over named size
variables and integer constants, kept in a canonical normal form
(:mod:`.expr`): hashable, built only by normalising constructors, ``==`` is
structural equality of normal forms. Facts (``>= 0``, ``>= 1``,
divisibility) and comparisons are decided only when evident
(:mod:`.facts`; an undecidable comparison raises :class:`UndecidedError`).
Floor, ceil, round (half to even) and trunc of a quotient -- torch's
``RoundToInt(IntTrueDiv(s, 3))`` and kin -- are exact expressions of those atoms
(:mod:`.rational`). Parsers read text and torch.export's sympy (:mod:`.parse`); one evaluator,
parameterised by an ops object, emits ints, Python source, graph nodes or
StableHLO scalar ops (:mod:`.emit`).

    >>> from engines import sizes
    >>> e = sizes.parse("2*(a + b) // 2 + max(a, a + 1) + c % 4")
    >>> str(e), sizes.evaluate(e, {"a": 3, "b": 4, "c": 7})
    ('2*a + b + c % 4 + 1', 14)

Imports nothing heavy: sympy only inside :func:`from_sympy`, torch only when
an :class:`FxOps` is built.
"""

from .emit import INT, ExprOps, FxOps, IntOps, NodeOps, Ops, SourceOps, Src, StableHLOOps, evaluate, source, substitute
from .expr import (
    KINDS,
    Atom,
    Expr,
    SizeError,
    SizeZeroDivisionError,
    UndecidedError,
    as_expr,
    const,
    floordiv,
    mod,
    var,
)
from .facts import bounds, compare, evident_divisible, evident_nonneg, evident_positive
from .minmax import smax, smin
from .parse import from_sympy, missing, parse
from .rational import Ratio, ceildiv, rounddiv, truncdiv

__all__ = [
    "INT",
    "KINDS",
    "Atom",
    "Expr",
    "ExprOps",
    "FxOps",
    "IntOps",
    "NodeOps",
    "Ops",
    "Ratio",
    "SizeError",
    "SizeZeroDivisionError",
    "SourceOps",
    "Src",
    "StableHLOOps",
    "UndecidedError",
    "as_expr",
    "bounds",
    "ceildiv",
    "compare",
    "const",
    "evaluate",
    "evident_divisible",
    "evident_nonneg",
    "evident_positive",
    "floordiv",
    "from_sympy",
    "missing",
    "mod",
    "parse",
    "rounddiv",
    "smax",
    "smin",
    "source",
    "substitute",
    "truncdiv",
    "var",
]
