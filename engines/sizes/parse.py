"""Size expressions from text (``"2*b + 1"``) and from torch.export's sympy.

Text is parsed with :mod:`ast` and walked -- never evaluated -- over the
grammar: integer literals, names, ``+ - * // %``, unary ``-``/``+``,
parentheses, ``min(...)``/``max(...)`` calls and the roundings of a quotient
``round(a / b)``, ``floor(a / b)``, ``ceil(a / b)``, ``trunc(a / b)``
(:mod:`.rational`). ``str(expr)`` is written in the same grammar, so
``parse(str(e)) == e``.

sympy is imported only when :func:`from_sympy` is called.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

from .expr import Expr, SizeError, as_expr, const, floordiv, mod, var
from .minmax import smax, smin
from .rational import ROUNDINGS, Ratio, fraction

GRAMMAR = "integers, names, + - * // %, unary -, parentheses, min(...), max(...), round/floor/ceil/trunc(a / b)"

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: floordiv,
    ast.Mod: mod,
}


def missing(name: str, known) -> SizeError:
    """The error for a variable that has no value (names the known ones)."""
    return SizeError(f"size variable {name!r} has no value in the environment (known: {', '.join(sorted(known)) or 'none'})")


def parse(text: str | int, names=None) -> Expr:
    """Parse ``text`` (an ``int`` is taken as a constant) into its normal form.

    ``names``, when given, lists the variables allowed; any other name raises
    :class:`SizeError` naming it (even one that the normal form cancels, as in
    ``0*x``). Results are cached (expressions are immutable).
    """
    if isinstance(text, Expr):
        return text
    if isinstance(text, int) and not isinstance(text, bool):
        return const(text)
    if not isinstance(text, str):
        raise SizeError(f"not a size expression: {text!r} ({type(text).__name__})")
    return _parse(text, None if names is None else frozenset(names))


@lru_cache(maxsize=2048)
def _parse(text: str, names: frozenset | None) -> Expr:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise SizeError(f"bad size expression {text!r}: not an expression ({GRAMMAR})") from None

    def walk(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return const(node.value)
        if isinstance(node, ast.Name):
            if names is not None and node.id not in names:
                raise missing(node.id, names)
            return var(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            x = walk(node.operand)
            return -x if isinstance(node.op, ast.USub) else x
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and node.args
            and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return (smin if node.func.id == "min" else smax)(*(walk(a) for a in node.args))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ROUNDINGS
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.BinOp)
            and isinstance(node.args[0].op, ast.Div)
        ):
            return ROUNDINGS[node.func.id](walk(node.args[0].left), walk(node.args[0].right))
        raise SizeError(f"bad size expression {text!r}: {ast.unparse(node)!r} is not allowed (use {GRAMMAR})")

    return walk(tree.body)


# -- sympy (torch.export) ------------------------------------------------------------
#: torch.utils._sympy.functions (and sympy) classes, by name -> builder
_SYMPY_FUNCS: dict[str, Callable[..., Expr]] = {
    "FloorDiv": lambda a, b: floordiv(a, b),
    "CleanDiv": lambda a, b: floordiv(a, b),  # exact division: floor division agrees
    "Mod": lambda a, b: mod(a, b),  # torch's Mod is for non-negative operands, where % agrees
    "PythonMod": lambda a, b: mod(a, b),
    "Max": lambda *xs: smax(*xs),
    "Min": lambda *xs: smin(*xs),
    "Identity": lambda a: a,
}
#: torch.utils._sympy functions bringing a SymFloat back to an integer
_TO_INT = {"FloorToInt": "floor", "CeilToInt": "ceil", "RoundToInt": "round", "TruncToInt": "trunc"}


def _power(base: Expr, n: int, where) -> Expr:
    if n < 0 or n > 64:
        raise SizeError(f"unsupported power in size expression {where} (exponent {n})")
    out = const(1)
    for _ in range(n):
        out = out * base
    return out


def from_sympy(e, names=None) -> Expr:
    """The normal form of a sympy size expression (or a ``torch.SymInt``, or int).

    Handles Integer, Symbol (its name becomes the variable), Add, Mul (integer
    coefficients), Pow/PowByNatural (non-negative integer exponent) and the
    torch.utils._sympy functions FloorDiv, CleanDiv, Mod, PythonMod, Max, Min,
    Identity, and FloorToInt, CeilToInt, RoundToInt (half to even), TruncToInt of a
    SymFloat built from sizes by ToFloat, IntTrueDiv, FloatTrueDiv, ``+ - *`` and
    float constants (:mod:`.rational`). Anything else (RoundDecimal, FloatPow, a
    float that is no short fraction, ...) raises :class:`SizeError` naming it. ``names`` restricts the symbols as in
    :func:`parse`.
    """
    node = getattr(e, "node", None)
    if node is not None and hasattr(node, "expr"):  # torch.SymInt
        e = node.expr
    if isinstance(e, (int, Expr)) and not isinstance(e, bool):
        return as_expr(e)
    import sympy

    if not isinstance(e, sympy.Basic):
        raise SizeError(f"not a size expression: {e!r} ({type(e).__name__})")
    known = None if names is None else frozenset(names)
    memo: dict = {}

    def walk(x):
        if x in memo:
            return memo[x]
        if x.is_Integer:
            r = const(int(x))
        elif x.is_Symbol:
            if known is not None and x.name not in known:
                raise missing(x.name, known)
            r = var(x.name)
        elif x.is_Add:
            r = const(0)
            for t in x.args:
                r = r + walk(t)
        elif x.is_Mul:
            r = const(1)
            for t in x.args:
                if t.is_Number and not t.is_Integer:
                    raise SizeError(f"non-integer coefficient {t} in size expression {e}")
                r = r * walk(t)
        elif x.is_Pow or type(x).__name__ == "PowByNatural":
            base, n = x.args
            if not n.is_Integer:
                raise SizeError(f"unsupported power in size expression {e} (exponent {n})")
            r = _power(walk(base), int(n), e)
        elif type(x).__name__ in _SYMPY_FUNCS:
            r = _SYMPY_FUNCS[type(x).__name__](*(walk(a) for a in x.args))
        elif type(x).__name__ in _TO_INT:
            r = ratio(x.args[0]).round(_TO_INT[type(x).__name__])
        else:
            raise SizeError(f"unsupported size function {type(x).__name__} in {e}")
        memo[x] = r
        return r

    def ratio(x) -> Ratio:
        """A SymFloat's sympy expression as a :class:`Ratio` of sizes."""
        name = type(x).__name__
        if x.is_Number:
            return Ratio.of(Fraction(int(x.p), int(x.q)) if x.is_Rational else fraction(float(x)))
        if name == "ToFloat":
            return Ratio(walk(x.args[0]))
        if name in ("IntTrueDiv", "FloatTrueDiv"):
            return ratio(x.args[0]) / ratio(x.args[1])
        if x.is_Add or x.is_Mul:
            out = ratio(x.args[0])
            for t in x.args[1:]:
                out = out + ratio(t) if x.is_Add else out * ratio(t)
            return out
        if x.is_Symbol or name in _SYMPY_FUNCS or name in _TO_INT or x.is_Integer:
            return Ratio(walk(x))
        raise SizeError(f"unsupported float size function {name} in {e}")

    return walk(e)
