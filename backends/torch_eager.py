"""torch eager: the shape-agnostic baseline (never compiles)."""

from __future__ import annotations

from .base import Backend, TorchArrays


class TorchEager(TorchArrays, Backend):
    name = "torch_eager"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    counters = {}  # no compile stage: nothing to count

    def startup(self):
        import torch  # noqa: F401

    def prepare(self, case, mode):
        return case.torch_fn()
