"""The ``xla`` executor: one program per module text, the kind chosen by its bounds
(per shape, compile-once bounded, or per bucket)."""

from __future__ import annotations

import numpy as np

from .module import Module
from .xla import XlaProgram, XlaStats
from .xla_padded import BoundedXlaProgram, BucketedXlaProgram


def bound_kinds(module: Module) -> set:
    """``{"bounded", "unbounded"}``: the kinds of @main's `?` argument dims."""
    out = set()
    for shape, _, bounds in module.inputs:
        for d, s in enumerate(shape):
            if s is None:
                out.add("bounded" if bounds is not None and bounds[d] is not None else "unbounded")
    return out


class XlaExecutor:
    """One program per module text, NumPy in and out (:func:`execute`).

    A module with ``#stablehlo.bounds`` runs on the compile-once
    :class:`~.xla_padded.BoundedXlaProgram` (``on_unsupported="per_shape"`` lets
    it fall back to a compile per shape); ``bucketed=True`` runs a `?` module
    on :class:`~.xla_padded.BucketedXlaProgram`, and so does a module with both
    bounded and unbounded argument dims (bounded ones at their bound, once
    per bucket of the others); else :class:`XlaProgram`."""

    def __init__(self):
        self._programs: dict[tuple, object] = {}
        self.stats = XlaStats()

    def compile_count(self) -> int:
        return self.stats.compiles

    def clear(self) -> None:
        self._programs.clear()

    def program(self, text: str, on_unsupported: str = "error", bucketed: bool = False):
        key = (text, on_unsupported, bucketed)
        p = self._programs.get(key)
        if p is None:
            module = Module(text)
            kinds = bound_kinds(module)
            if bucketed or kinds == {"bounded", "unbounded"}:
                p = BucketedXlaProgram(module, stats=self.stats, on_unsupported=on_unsupported)
            elif kinds == {"bounded"}:
                p = BoundedXlaProgram(module, stats=self.stats, on_unsupported=on_unsupported)
            else:
                p = XlaProgram(module, stats=self.stats)
            self._programs[key] = p
        return p

    def run(self, text: str, args, on_unsupported: str = "error", bucketed: bool = False) -> list[np.ndarray]:
        p = self.program(text, on_unsupported, bucketed)
        before = self.stats.compiles
        outs = p(*p.convert(args))
        if self.stats.compiles == before:
            self.stats.cache_hits += 1
        return [np.asarray(o) for o in outs]
