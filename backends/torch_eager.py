"""torch eager: the shape-agnostic baseline (never compiles)."""

from __future__ import annotations

from .base import Backend, TorchArrays, check_bounds


class TorchEager(TorchArrays, Backend):
    name = "torch_eager"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    counters = {}  # no compile stage: nothing to count
    compile_scope = "nothing: eager runs compile nothing"

    def startup(self):
        import torch  # noqa: F401

    def prepare(self, case, mode):
        self._job = (case, mode)
        return case.torch_fn()

    def convert(self, arrays):
        """Bounded mode: an input above its bound is refused (eager itself has no bound)."""
        if getattr(self, "_job", None):
            check_bounds(*self._job, arrays)
        return super().convert(arrays)
