"""torch eager: the shape-agnostic baseline (never compiles)."""

from __future__ import annotations

from .base import MODEL_COST, Backend, BoundsChecked, LeftOut, Program, TorchArrays


class EagerProgram(BoundsChecked, TorchArrays, Program):
    """The case's torch program as it is. Bounded mode: an input above its bound
    is refused (eager itself has no bound)."""


class TorchEager(Backend):
    name = "torch_eager"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    counters = {}  # no compile stage: nothing to count
    compile_scope = "nothing: eager runs compile nothing"
    quick_leaves_out = (LeftOut("model_*", "bounded", MODEL_COST + " (eager ignores the bound)"),)

    def startup(self):
        import torch  # noqa: F401

    def prepare(self, case, mode):
        return EagerProgram(self, case, mode, case.torch_fn())
