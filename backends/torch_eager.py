"""torch eager: the shape-agnostic baseline (never compiles)."""

from __future__ import annotations

from .base import Backend, TorchArrays


class TorchEager(TorchArrays, Backend):
    name = "torch_eager"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)

    def prepare(self, case, mode):
        return case.torch_fn()

    def compile_stats(self):
        return {}
