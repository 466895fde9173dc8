"""Dispatch table: one small lowering function per aten op.

    @lowers(aten.view.default, aten._unsafe_view.default)
    def _view(ctx, node, x, size):
        return ctx.reshape(x, ctx.out_shape(node))

A lowering function receives the :class:`LoweringContext`, the fx node, and the
node's args with every fx-node argument replaced by its lowered value
(:class:`Value`, a list of them, or a SymInt's ``tensor<i32>`` value); kwargs
are passed as keyword arguments.  It returns a Value, a list/tuple of Values
(multi-result ops), or ``None`` (no-op nodes such as assertions).  The registry
*is* the coverage list: ``lower.covered_ops()``. Imports nothing of the package.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

LOWERINGS: dict[object, Callable] = {}
#: the sets of :func:`reaching` blocks open now: each lowering function that runs adds its target
_REACHING: list[set[str]] = []


def lowers(*targets):
    def deco(fn):
        for t in targets:
            if t in LOWERINGS:
                raise ValueError(f"duplicate lowering for {t}")
            LOWERINGS[t] = fn
        return fn

    return deco


def target_name(target) -> str:
    if hasattr(target, "name") and callable(target.name):
        try:
            return target.name()  # OpOverload: "aten::view"
        except Exception:
            pass
    mod = getattr(target, "__module__", None) or ""
    return f"{mod}.{getattr(target, '__name__', str(target))}".lstrip(".")


def label(target) -> str:
    """The coverage list's name of a registry key: ``aten.add.Tensor``, ``operator.mul``,
    ``torch.sym_min`` (what :func:`.lower.covered_ops` lists)."""
    s = str(target)
    if s.startswith("<built-in function"):
        return "operator." + s[len("<built-in function ") : -1]
    if s.startswith("<function"):
        return f"{target.__module__}.{target.__name__}"
    return s


@contextlib.contextmanager
def reaching() -> Iterator[set[str]]:
    """The :func:`label` of every registry target whose lowering function runs inside the
    block (an op lowered as a zero of its shape reaches none): what a program exercises
    of the registry, for the coverage tests."""
    seen: set[str] = set()
    _REACHING.append(seen)
    try:
        yield seen
    finally:
        _REACHING.remove(seen)


def reached(target) -> None:
    """Note that ``target``'s lowering ran (cheap when no :func:`reaching` block is open)."""
    for seen in _REACHING:
        seen.add(label(target))
