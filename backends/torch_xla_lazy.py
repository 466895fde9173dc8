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

Counts are torch_xla's own ``UncachedCompile`` counter (process-wide,
baselined when the program is made), times its ``CompileTime`` metric; the reason
of each compile is the counter's move with the input shapes of the call that
moved it (torch_xla exposes no cheaper why: its graph hash would cost a hash of
the pending graph on every call).

bucketed
    static on inputs padded on the host to their power-of-two bucket
    (``backends.padding``): one ``UncachedCompile`` per bucket.

See FINDINGS.md beside this file for the per-case record.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, Counter, LeftOut, Program
from .padding import host_padding

COUNTER_UNCACHED = "UncachedCompile"
COUNTER_CACHED = "CachedCompile"
STAGE = "xla"


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


def on_xla_device(fn):
    """``fn`` with the weights it carries on the XLA device (``fn.on_device``, the model
    cases'); a program without weights unchanged. LazyTensor traces only XLA tensors:
    a CPU weight meeting an XLA input fails the op ("Expected XLA tensor. Got:
    torch.FloatTensor"), so a torch_xla user moves the model (``model.to(xla_device)``).

    The move is then synced, in ``prepare``: torch_xla moves a 0-d tensor as a pending
    constant (BatchNorm's ``num_batches_tracked``), which would otherwise ride in the
    first call's graph only, so the next call on the same shape compiled again
    (ResNet-18: shape 0 twice, the second time in its cached phase). The sync's own
    compile, where there is one (ResNet-18's), counts on shape 0."""
    import torch_xla

    on_device = getattr(fn, "on_device", None)
    if on_device is None:
        return fn
    program = on_device(torch_xla.device())
    torch_xla.sync()
    return program


class XlaLazyProgram(Program):
    """The case's torch program on XLA tensors, ``torch_xla.sync()`` after each
    call; torch_xla's counters baselined when it is made (before the weights move,
    whose compile, where there is one, counts on shape 0)."""

    def __init__(self, backend, case, mode):
        #: per input, the axes to mark dynamic (unbounded mode)
        self.axes = [sorted(a) for a in case.dynamic_axes(mode)] if mode == "unbounded" else None
        #: ``CachedCompile`` when made; ``UncachedCompile`` when reasons were last drained
        self.cached_base = 0
        self.reason_base = 0
        #: the last call's inputs (their shapes name a compile)
        self.last_args: tuple = ()
        super().__init__(backend, case, mode)
        self.fn = on_xla_device(case.torch_fn())

    def run(self, *args):
        import torch_xla

        self.last_args = args
        out = self.fn(*args)
        torch_xla.sync()  # cut the graph: compile (or fetch) and launch
        return out

    def convert(self, arrays):
        import torch
        import torch_xla

        dev = torch_xla.device()
        out = [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in arrays]
        if self.axes is not None:
            for t, axes in zip(out, self.axes, strict=False):
                for ax in axes:
                    torch_xla._XLAC._xla_mark_dynamic(t, ax)
        return out

    def sync(self, out):
        import torch_xla.core.xla_model as xm

        xm.wait_device_ops()

    def to_numpy(self, out):
        return out.cpu().numpy()

    # -- compile counting ----------------------------------------------------
    def system_stats(self):
        return {STAGE: counter(COUNTER_UNCACHED)}

    def system_seconds(self):
        total = compile_seconds()
        return {} if total is None else {STAGE: total}

    def reset_counters(self):
        super().reset_counters()
        self.cached_base = counter(COUNTER_CACHED)
        self.reason_base = counter(COUNTER_UNCACHED)

    def compile_reasons(self):
        out = super().compile_reasons()
        now = counter(COUNTER_UNCACHED)
        n, self.reason_base = now - self.reason_base, now
        if n > 0:
            shapes = tuple(tuple(a.shape) for a in self.last_args)
            out += [f"{STAGE}: no cached XLA graph for input shapes {shapes} (UncachedCompile +{n})"] * n
        return out

    def cache_hits(self) -> int:
        """``CachedCompile`` since the program was made: graphs served from torch_xla's cache."""
        return counter(COUNTER_CACHED) - self.cached_base


#: why the quick profile leaves out every torch_xla peer's jobs
XLA_RUNTIME_COST = LeftOut(
    "*", "*", "each job starts a torch_xla runtime (its PJRT client, or the export server for the StableHLO rows)"
)


@host_padding("bucketed")
class TorchXlaLazy(Backend):
    name = "torch_xla_lazy"
    forms = ("torch",)
    modes = ("static", "unbounded")
    env = "xla"
    requires = ("torch", "torch_xla")
    counters = {STAGE: Counter("system", "torch_xla metrics counter UncachedCompile")}
    compile_scope = (
        "torch_xla's CompileTime metric: the XLA compile of each uncached graph (tracing and graph hashing "
        "happen in every call, timed as the call)"
    )
    quick_leaves_out = (XLA_RUNTIME_COST,)

    def startup(self):
        import torch_xla

        torch_xla.device()  # initialise the PJRT client

    def prepare(self, case, mode):
        import torch_xla

        torch_xla.device()  # initialise the PJRT client (startup() did, where the harness ran it)
        return XlaLazyProgram(self, case, mode)
