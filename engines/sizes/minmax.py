"""``max`` and ``min`` of sizes in the normal form (:mod:`engines.sizes.expr`):
nested ones of the same kind flattened, an argument dominated by another that
differs from it by a constant dropped, duplicates dropped, constants folded."""

from __future__ import annotations

from .expr import Expr, SizeError, _atom, as_expr, const


def _undominated(kind: str, args: list) -> list:
    """``args`` less those another argument beats by a constant (no duplicates)."""
    args = list(dict.fromkeys(args))
    keep = []
    for x in args:
        for y in args:
            if y is not x:
                diff = x - y
                if diff.is_const and (diff.value < 0 if kind == "max" else diff.value > 0):
                    break
        else:
            keep.append(x)
    return keep


def _minmax(kind: str, xs) -> Expr:
    args = _undominated(kind, [as_expr(x) for x in xs])
    if not args:
        raise SizeError(f"{kind}() of no sizes")
    flat: list = []
    for x in args:
        a = x.single_atom()
        flat.extend(a.args if a is not None and a.kind == kind else (x,))
    consts = [x.value for x in flat if x.is_const]
    flat = [x for x in flat if not x.is_const]
    if consts:
        flat.append(const((max if kind == "max" else min)(consts)))
    keep = _undominated(kind, flat)
    if len(keep) == 1:
        return keep[0]
    return _atom(kind, tuple(sorted(keep, key=lambda e: e.key)))


def smax(*xs) -> Expr:
    """``max(*xs)`` of sizes, normalised."""
    return _minmax("max", xs)


def smin(*xs) -> Expr:
    """``min(*xs)`` of sizes, normalised."""
    return _minmax("min", xs)
