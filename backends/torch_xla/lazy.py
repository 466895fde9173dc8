"""torch_xla LazyTensor on the PJRT CPU device (runs in the ``xla`` environment).

static
    What LazyTensor does: every call traces the program, ``torch_xla.sync()``
    cuts the graph and XLA compiles it once per novel input shape
    (``UncachedCompile``); a shape seen before hits the graph cache
    (``CachedCompile``).
unbounded
    The only unbounded-dynamism knob LazyTensor has: the case's dynamic axes
    are marked with ``torch_xla._XLAC._xla_mark_dynamic`` before the call
    (``EXPERIMENTAL_XLA_UNBOUNDED_DYNAMISM=1`` is set for the xla environment
    by ``harness.envs``). With torch_xla 2.9.0 on CPU the graph traces, but
    XLA's HLO verifier rejects it at compile time ("Unbounded dynamism is
    disabled for instruction: ..."; each failed attempt still counts one
    ``UncachedCompile``): the mode exists to record that. Where no marked
    tensor enters the graph (expand_over_batch reads only ``x.shape[0]``, a
    Python int here) it behaves like static.

See FINDINGS.md beside this file for the per-case record.
"""

from __future__ import annotations

import numpy as np

from ..base import Backend

COUNTER_UNCACHED = "UncachedCompile"
COUNTER_CACHED = "CachedCompile"


def counter(name: str) -> int:
    """A ``torch_xla.debug.metrics`` counter; a counter never bumped reads ``None``: 0."""
    import torch_xla.debug.metrics as met

    return int(met.counter_value(name) or 0)


def compile_seconds() -> float | None:
    """Total of the ``CompileTime`` metric (nanoseconds in torch_xla), in seconds."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    if not data:
        return None
    return float(data[1]) / 1e9


class TorchXlaLazy(Backend):
    name = "torch_xla_lazy"
    forms = ("torch",)
    modes = ("static", "unbounded")
    env = "xla"
    requires = ("torch", "torch_xla")

    def __init__(self):
        self._axes = None  # per input, the axes to mark dynamic (unbounded mode)
        self._base = None  # counters when prepare() ran

    def prepare(self, case, mode):
        import torch_xla

        fn = case.torch_fn()
        self._axes = [sorted(a) for a in case.dynamic_axes(mode)] if mode == "unbounded" else None
        torch_xla.device()  # initialise the PJRT client before reading counters
        self._base = (counter(COUNTER_UNCACHED), counter(COUNTER_CACHED), compile_seconds() or 0.0)

        def program(*args):
            out = fn(*args)
            torch_xla.sync()  # cut the graph: compile (or fetch) and launch
            return out

        return program

    def convert(self, arrays):
        import torch
        import torch_xla

        dev = torch_xla.device()
        out = [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in arrays]
        if self._axes is not None:
            for t, axes in zip(out, self._axes):
                for ax in axes:
                    torch_xla._XLAC._xla_mark_dynamic(t, ax)
        return out

    def sync(self, out):
        import torch_xla.core.xla_model as xm

        xm.wait_device_ops()

    def to_numpy(self, out):
        return out.cpu().numpy()

    def compile_stats(self):
        if self._base is None:
            return {}
        return {"xla": counter(COUNTER_UNCACHED) - self._base[0]}

    def cache_hits(self) -> int:
        """``CachedCompile`` since prepare(): graphs served from torch_xla's cache."""
        return 0 if self._base is None else counter(COUNTER_CACHED) - self._base[1]

    def compile_time_s(self):
        if self._base is None:
            return None
        total = compile_seconds()
        return None if total is None else total - self._base[2]
