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

from collections.abc import Callable

LOWERINGS: dict[object, Callable] = {}


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
