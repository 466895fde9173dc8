"""What the peer backends share: the torch.export of a case's torch form at the
first call's sizes, and a program that builds once (symbolic dims) or once per
input shape (static mode), counting each stage in the system's own entry point.

Every peer exports through :func:`backends.torch_export.export` (the one place
torch.export is called) from a sample whose dynamic dims are at least 2
(:func:`engines.torch_export_tools.export_sample`), so a sweep starting at size 0 or 1
does not fix that size."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np

from ..base import Backend, BoundsChecked, Counter, Program, torch_dims

#: the torch.export stage every peer but ONNX Runtime counts (torch.onnx.export runs its own)
EXPORT = Counter("instrumented", "torch.export.export calls (the case's torch form, dims as Dim ranges or static)")


def threads() -> int | None:
    """The worker's thread count (``harness run --threads``: ``OMP_NUM_THREADS``), for
    systems that keep a pool of their own and read no OpenMP variable; ``None``: theirs."""
    n = os.environ.get("OMP_NUM_THREADS", "")
    return int(n) if n.isdigit() and int(n) > 0 else None


def dim_spec(case, mode: str) -> list[dict[int, tuple[str, int, int | None]]]:
    """Per input ``{axis: (dim name, least exported size, bound or None)}`` of ``case`` in ``mode``."""
    from engines.torch_export_tools import export_spec

    return export_spec(case.dynamic_axes(mode))


def shapes_of(args) -> tuple[tuple[int, ...], ...]:
    """The arguments' shapes: a static program's cache key."""
    return tuple(tuple(int(n) for n in a.shape) for a in args)


def export_program(case, mode: str, fn, host: list[np.ndarray]):
    """``torch.export`` of ``fn`` (the case's torch form) at the sizes of ``host``
    (NumPy arrays): static in static mode, else with the case's ``Dim`` ranges
    (``max`` in bounded mode). Raises ``Unsupported`` where torch.export cannot
    keep the dims dynamic."""
    import torch

    from engines.torch_export_tools import export_sample

    from ..torch_export import export

    args = [torch.from_numpy(np.ascontiguousarray(a)) for a in host]
    if mode == "static":
        return export(fn, args, None, case.name)
    sample = export_sample(args, dim_spec(case, mode))
    return export(fn, sample, tuple(torch_dims(case, mode)), case.name)


def export_reason(case, mode: str, host) -> str:
    """Why the export ran, in words: the shapes (static) or the dims it keeps symbolic."""
    if mode == "static":
        return f"new input shapes {shapes_of(host)}"
    from engines.torch_export_tools import interval_text

    ranges = sorted({f"{n} in {interval_text(lo, hi)}" for s in dim_spec(case, mode) for n, lo, hi in s.values()})
    return f"first call at {shapes_of(host)}: one export with dynamic dims {', '.join(ranges)}"


class PeerProgram(BoundsChecked, Program):
    """One peer job: the system's program built at the first call's sizes (in
    static mode, at each new input shape). Subclasses give ``build(host)``: the
    system's callable for the NumPy inputs ``host``, counting its stages with
    ``self.counting``; ``shared`` keeps what the job's builds share (a model made
    once for every shape); ``host_arrays(args)``: the call's native inputs back
    as NumPy arrays. Inputs are NumPy arrays unless a subclass converts them;
    bounded mode refuses an input above its bound naming the case's dim."""

    def __init__(self, backend, case, mode):
        self.fn = case.torch_fn()  # built here: a model case's build is not its first call's
        #: the system's callables, by input shapes (static) or ``None`` (one for every shape)
        self.built: dict = {}
        self.shared: dict = {}
        #: a failed build of the one program for every shape, raised again instead of rebuilt
        self.failed: Exception | None = None
        super().__init__(backend, case, mode)

    def run(self, *args):
        key = shapes_of(args) if self.mode == "static" else None
        call = self.built.get(key)
        if call is None:
            if self.failed is not None:
                raise self.failed
            try:
                call = self.built[key] = self.build(self.host_arrays(args))
            except Exception as e:
                if self.mode != "static":
                    self.failed = e
                raise
        return call(*args)

    def build(self, host: list[np.ndarray]):
        raise NotImplementedError

    def host_arrays(self, args) -> list[np.ndarray]:
        return [np.asarray(a) for a in args]

    def convert(self, arrays):
        return [np.ascontiguousarray(a) for a in super().convert(arrays)]

    def to_numpy(self, out):
        return np.array(out)  # a copy: the system may reuse its output buffer on the next call


class Peer(Backend):
    """A torch-form peer's descriptor: its jobs are ``program`` (a :class:`PeerProgram`)."""

    forms = ("torch",)
    warmup = ("torch._dynamo", "torch.export._trace")
    # each job exports through torch.export (seconds) and compiles in the system (seconds): over the
    # quick profile's torch-form jobs that is minutes per peer, more than `make test`'s gate can add
    opt_in = "a torch.export + a system compile per job (seconds each): minutes per peer over the quick profile"
    program: ClassVar[type[PeerProgram]] = PeerProgram

    def prepare(self, case, mode):
        return self.program(self, case, mode)
