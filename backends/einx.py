"""Real einx 0.4.3 on torch tensors: one graph build per new input shape.

einx caches a generated Python function per call signature, and the
signature holds concrete shapes. ``bucketed``: the same per-shape einx call on
inputs padded on the host to their power-of-two bucket (``backends.padding``):
one build per bucket. Every graph construction passes through
``einx._src.tracer.optimize`` exactly once; we count calls to it, on the call
of the program that made them (so the count is this job's, through the
backend's ledger). The build's time runs from einx entering
``tracer.depend_on`` (the start of tracing, after its cache missed) to the
return of ``tracer.compiler.python.compile`` (the generated function): trace,
optimize and codegen, not the run.
"""

from __future__ import annotations

import time

from .base import Backend, Counter, Program, TorchArrays
from .padding import host_padding

STAGE = "einx_graph"


class _Builds:
    """Process-wide tallies of the instrumented einx entry points."""

    count = 0  # calls to tracer.optimize
    seconds = 0.0  # depend_on entry -> compiler.python.compile return
    t0: float | None = None


def _install_counter() -> None:
    import einx._src.tracer as tracer
    import einx._src.tracer.compiler.python as codegen

    if getattr(tracer.optimize, "_dynshape_counted", False):
        return
    optimize_inner, depend_on_inner, compile_inner = tracer.optimize, tracer.depend_on, codegen.compile

    def optimize(*args, **kwargs):
        _Builds.count += 1
        return optimize_inner(*args, **kwargs)

    def depend_on(*args, **kwargs):  # einx's graph construction starts here
        _Builds.t0 = time.perf_counter()
        return depend_on_inner(*args, **kwargs)

    def compile(*args, **kwargs):  # ... and ends with the generated function
        try:
            return compile_inner(*args, **kwargs)
        finally:
            if _Builds.t0 is not None:
                _Builds.seconds += time.perf_counter() - _Builds.t0
                _Builds.t0 = None

    for f in (optimize, depend_on, compile):
        f._dynshape_counted = True
    tracer.optimize, tracer.depend_on, codegen.compile = optimize, depend_on, compile


def graph_builds() -> int:
    """einx graph constructions in this process since the counter was installed."""
    return _Builds.count


def _shapes(args) -> tuple:
    return tuple(tuple(getattr(a, "shape", ())) for a in args)


class EinxProgram(TorchArrays, Program):
    """The case's einx call; the graphs einx builds in a call are counted on that call."""

    def __init__(self, backend, case, mode, call):
        #: the einx call bound to einx
        self.einx_call = call
        super().__init__(backend, case, mode)

    def run(self, *args):
        n0, s0 = _Builds.count, _Builds.seconds
        try:
            return self.einx_call(*args)
        finally:
            if _Builds.count != n0:
                # einx's cache key holds the concrete shapes: a new shape is a new graph
                self.count(STAGE, _Builds.count - n0, _Builds.seconds - s0, f"new input shapes {_shapes(args)}")


@host_padding("bucketed")
class Einx(Backend):
    name = "einx"
    forms = ("einx",)
    modes = ("static",)
    requires = ("einx", "torch")
    warmup = ("torch._dynamo",)  # einx 0.4.3 imports it (einx itself is no zygote's: harness.forkserver)
    counters = {STAGE: Counter("instrumented", "calls to einx._src.tracer.optimize: one per graph einx builds")}
    compile_scope = (
        "einx's graph build per new call signature: trace + optimize + Python codegen (tracer.depend_on entry to "
        "compiler.python.compile return), not the run"
    )

    def startup(self):
        import einx  # noqa: F401
        import torch  # noqa: F401

        _install_counter()

    def prepare(self, case, mode):
        import einx

        _install_counter()
        return EinxProgram(self, case, mode, case.einx.bind(einx))
