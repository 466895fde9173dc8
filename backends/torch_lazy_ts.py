"""torch_lazy_ts: PyTorch's own lazy tensor (``torch._lazy``) on its TorchScript backend.

The main-environment peer of ``torch_xla_lazy``: the same LazyTensor core
(``torch/csrc/lazy``), lowered to TorchScript graphs run by the JIT on CPU.
Every call traces the program on ``device("lazy")`` tensors and
``torch._lazy.mark_step()`` cuts the graph: a graph hash seen before is a
``CachedCompile``, a new one an ``UncachedCompile`` (TorchScript lowering +
JIT compile).

static
    sizes are part of the graph hash: one compile per novel input shape.
unbounded
    the symbolic-shape mode: ``LTC_ENABLE_DYNAMIC_SHAPES=1`` plus
    ``torch._C._lazy._set_symbolic_shape_mode(True)``. The IR hash leaves
    input sizes out, so the edge divide compiles once; but ``x.shape[0] * 2``
    is a Python int by the time it reaches ``expand`` (the size arithmetic
    collapses), so expand_over_batch still compiles once per shape -- the
    torch_xla report, in PyTorch's own lazy backend.

``LTC_ENABLE_DYNAMIC_SHAPES`` is read once per process, at the first lazy
trace (after import and ``ts_backend.init()`` is fine): ``prepare`` sets or
clears it before that, and refuses a second job in the same process that
would need the other setting.

Counts are the system's ``UncachedCompile`` counter (process-wide, baselined
when the program is made); ``cache_hits()`` reads ``CachedCompile``. torch._lazy
keeps no compile-time metric, so no compile seconds are reported.
"""

from __future__ import annotations

import os

import numpy as np

from .base import MODEL_COST, Backend, Counter, LeftOut, Program

ENV_DYNAMIC = "LTC_ENABLE_DYNAMIC_SHAPES"
COUNTER_UNCACHED = "UncachedCompile"
COUNTER_CACHED = "CachedCompile"
STAGE = "ts"

_initialised = False
_process_dynamic: bool | None = None  # the LTC_ENABLE_DYNAMIC_SHAPES setting this process traced with


def counter(name: str) -> int:
    """A ``torch._lazy.metrics`` counter; a counter never bumped reads ``None``: 0."""
    import torch._lazy.metrics as met

    return int(met.counter_value(name) or 0)


def init() -> None:
    """Start the TorchScript lazy backend once per process (``ts_backend.init`` is not idempotent)."""
    global _initialised
    if not _initialised:
        import torch._lazy
        import torch._lazy.ts_backend

        torch._lazy.ts_backend.init()
        _initialised = True


def set_shape_mode(dynamic: bool) -> None:
    """Symbolic-shape mode on or off, before this process's first lazy trace.

    Raises ``RuntimeError`` when the process already traced in the other
    setting (torch._lazy reads the environment variable once)."""
    import torch

    global _process_dynamic
    if _process_dynamic is not None and _process_dynamic != dynamic:
        want, had = ("unbounded", "static") if dynamic else ("static", "unbounded")
        raise RuntimeError(
            f"torch_lazy_ts: {want} mode needs a fresh process: this one already traced in "
            f"{had} mode, and torch._lazy reads {ENV_DYNAMIC} once per process"
        )
    if dynamic:
        os.environ[ENV_DYNAMIC] = "1"
    else:
        os.environ.pop(ENV_DYNAMIC, None)
    torch._C._lazy._set_symbolic_shape_mode(dynamic)
    _process_dynamic = dynamic


class LazyTsProgram(Program):
    """The case's torch program on ``device("lazy")`` tensors, ``mark_step`` after
    each call; torch._lazy's counters baselined when it is made."""

    def __init__(self, backend, case, mode):
        import torch
        import torch._lazy

        #: ``UncachedCompile`` made settling inputs and weights (not the program's)
        self.transfer = 0
        #: ``CachedCompile`` when made; ``UncachedCompile`` when reasons were last drained
        self.cached_base = 0
        self.reason_base = 0
        #: the last call's inputs (their shapes name a compile)
        self.last_args: tuple = ()
        super().__init__(backend, case, mode)
        fn = case.torch_fn()
        on_device = getattr(fn, "on_device", None)
        if on_device is not None:
            # a model case's weights, moved as a torch._lazy user moves the model
            # (``model.to("lazy")``): a CPU weight meeting a lazy input fails the op
            # ("Input tensor is not a lazy tensor"); the move settled and counted
            # apart, as convert() settles the inputs
            before = counter(COUNTER_UNCACHED)
            fn = on_device(torch.device("lazy"))
            torch._lazy.mark_step()
            self.transfer += counter(COUNTER_UNCACHED) - before
        self.fn = fn

    def run(self, *args):
        import torch._lazy

        self.last_args = args
        out = self.fn(*args)
        torch._lazy.mark_step()  # cut the graph: compile (or fetch) and run
        return out

    def convert(self, arrays):
        """Lazy device tensors, settled by a ``mark_step`` (not timed): else the
        first ``mark_step`` after a transfer syncs the new tensors along with
        the program, and that graph differs from every later call's (one extra
        compile per shape in the cached phase). Settling compiles nothing on
        torch 2.13; were it to, it would be counted apart (``transfer_compiles``)."""
        import torch
        import torch._lazy

        dev = torch.device("lazy")
        out = [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in arrays]
        before = counter(COUNTER_UNCACHED)
        torch._lazy.mark_step()
        self.transfer += counter(COUNTER_UNCACHED) - before
        return out

    def sync(self, out):
        import torch._lazy

        torch._lazy.wait_device_ops()

    def to_numpy(self, out):
        return out.cpu().numpy()

    # -- compile counting ----------------------------------------------------
    def system_stats(self):
        return {STAGE: counter(COUNTER_UNCACHED) - self.transfer}

    def reset_counters(self):
        self.transfer = 0
        super().reset_counters()
        self.cached_base = counter(COUNTER_CACHED)
        self.reason_base = self.system_stats()[STAGE]

    def compile_reasons(self):
        out = super().compile_reasons()
        now = self.system_stats()[STAGE]
        n, self.reason_base = now - self.reason_base, now
        if n > 0:
            shapes = tuple(tuple(a.shape) for a in self.last_args)
            out += [f"{STAGE}: no cached graph for input shapes {shapes} (UncachedCompile +{n})"] * n
        return out

    def transfer_compiles(self) -> int:
        """``UncachedCompile`` of the graphs that settled converted inputs (not the program's)."""
        return self.transfer

    def cache_hits(self) -> int:
        """``CachedCompile`` since the program was made: graphs served from torch._lazy's cache."""
        return counter(COUNTER_CACHED) - self.cached_base


class TorchLazyTs(Backend):
    name = "torch_lazy_ts"
    forms = ("torch",)
    modes = ("static", "unbounded")
    requires = ("torch",)
    counters = {
        STAGE: Counter(
            "system",
            "torch._lazy metrics counter UncachedCompile (a new graph hash at mark_step, lowered to TorchScript and compiled)",
        )
    }
    mode_notes = {"unbounded": f"torch._lazy symbolic-shape mode ({ENV_DYNAMIC}=1)"}
    compile_scope = "none reported: torch._lazy keeps no compile-time metric (counts only)"
    quick_leaves_out = (LeftOut("model_*", "*", MODEL_COST),)

    def startup(self):
        init()

    def prepare(self, case, mode):
        init()  # startup() did, where the harness ran it
        set_shape_mode(mode == "unbounded")
        return LazyTsProgram(self, case, mode)
