"""torch.compile: static = ``dynamic=False`` (one graph per shape); unbounded
and bounded = the case's dynamic axes marked with ``mark_dynamic`` (with
``max`` when bounded) by ``convert``, once per input tensor as a user would,
every other axis static; bucketed = the static program
on inputs padded on the host to their bucket (``backends.padding``): one graph
per bucket.

Counts: dynamo's ``unique_graphs`` (each graph is compiled once by the
chosen compiler backend, inductor by default). The recompile limit is lifted
and hitting it is an error, so a cache thrash is never silently run eagerly.

Times and reasons come from dynamo's compilation metrics, one record per
frame compile: ``entire_frame_compile_time_s`` (dynamo + the compiler backend)
and ``recompile_reason`` (the first guard that failed, e.g. "0/0: tensor 'c'
size mismatch at index 0. expected 1000, actual 1001"; ``None`` on a frame's
first compile, reported as "first call"). New graph breaks
(``counters["graph_break"]``) are added to the reason of the compile that hit
them.
"""

from __future__ import annotations

import os

from .base import MODEL_COST, Backend, BoundsChecked, Counter, LeftOut, Program, TorchArrays, export_range
from .padding import host_padding

STAGE = "dynamo_graph"
#: the model cases' jobs on an inductor backend, left out of the quick profile
MODEL_COST_INDUCTOR = LeftOut("model_*", "*", MODEL_COST + " (inductor: 60-110 s a model)")


def warm_inductor() -> str:
    """What inductor's first compile in a process does before it looks at the
    program, done in ``Backend.startup`` (timed as ``startup_s``) so that no
    compile time includes it: import dynamo, inductor's lowering and its C++
    build machinery (seconds), and probe the machine's vector ISAs
    (``cpu_vec_isa.pick_vec_isa``: one g++ build of the ATen vector header and
    one ``dlopen`` per ISA, ~9 CPU-s on the 2-core machine). The probe's result
    is a property of the machine: a user's persistent inductor cache keeps it
    across processes, while the harness gives every job a fresh cache directory
    (so the program's compile is novel) and would pay it again per job. The
    fork server runs this once per run (:mod:`harness.zygote_warm`); its
    children inherit the result. Returns the ISA picked (e.g. ``avx512``)."""
    import torch._dynamo.backends.inductor
    import torch._inductor.codecache
    import torch._inductor.compile_fx
    import torch._inductor.graph
    import torch.utils.cpp_extension  # noqa: F401
    from torch._inductor import cpu_vec_isa

    return str(cpu_vec_isa.pick_vec_isa())


class _Dynamo:
    """Process-wide: dynamo's frame compiles read so far (compilation metrics are
    a bounded deque, so they are consumed as they come and marked)."""

    seconds = 0.0
    frames: list[str] = []  # one reason per frame compile that captured a graph


def _drain() -> None:
    from torch._dynamo.utils import get_compilation_metrics

    for m in get_compilation_metrics():
        if getattr(m, "_dynshape_seen", False):
            continue
        m._dynshape_seen = True
        _Dynamo.seconds += m.entire_frame_compile_time_s or 0.0
        if not m.graph_op_count:  # no graph captured (nothing to compile, or it failed)
            continue
        where = f"{m.co_name} ({os.path.basename(m.co_filename or '?')}:{m.co_firstlineno})"
        if m.recompile_reason:
            reason = f"recompile of {where}: guard failed: {m.recompile_reason}"
        else:
            reason = f"first call: no compiled code for {where} yet"
        _Dynamo.frames.append(reason)


def _graph_breaks() -> tuple[int, list[str]]:
    from torch._dynamo.utils import counters

    gb = counters["graph_break"]
    return sum(gb.values()), list(gb)


class DynamoProgram(BoundsChecked, TorchArrays, Program):
    """A ``torch.compile``d program: dynamo's counters, baselined when it is
    made; ``marks`` (per input, ``(axis, min, max)``) marked dynamic by ``convert``."""

    def __init__(self, backend, case, mode, call, marks):
        #: per input, the axes ``convert`` marks dynamic
        self.marks: list[list[tuple[int, int, int | None]]] = marks
        #: where this job's reasons start: dynamo's frame records, graphs and graph breaks
        self.frame_pos = 0
        self.graph_pos = 0
        self.break_pos = 0
        self.break_seen: set = set()
        super().__init__(backend, case, mode, call)

    def convert(self, arrays):
        """Torch tensors, the case's dynamic dims marked (``mark_dynamic``, once
        per input, as a user marks the tensors they pass: not in the timed call).
        Bounded mode: an input above its bound is refused naming the dim
        (dynamo's ConstraintViolationError says only "17 not in range [2, 16]")."""
        import torch._dynamo

        args = super().convert(arrays)
        for arg, spec in zip(args, self.marks, strict=False):
            for axis, lo, hi in spec:
                if hi is None:
                    # torch 2.13: min= without max= fails inside dynamo
                    # ("not simple sympy type NoneType"), so unbounded
                    # dims get the default range
                    torch._dynamo.mark_dynamic(arg, axis)
                else:
                    torch._dynamo.mark_dynamic(arg, axis, min=lo, max=hi)
        return args

    # -- compile counting ----------------------------------------------------
    def system_stats(self):
        from torch._dynamo.utils import counters

        return {STAGE: int(counters["stats"]["unique_graphs"])}

    def system_seconds(self):
        _drain()
        return {STAGE: _Dynamo.seconds}

    def reset_counters(self):
        super().reset_counters()
        _drain()
        self.frame_pos = len(_Dynamo.frames)
        self.graph_pos = self.system_stats()[STAGE]
        self.break_pos, keys = _graph_breaks()
        self.break_seen = set(keys)

    def compile_reasons(self):
        """One reason per graph captured since the last call: its frame
        compile's recompile reason (a call that captured more graphs than
        frame records repeats the last), the first one also naming the graph
        breaks the call hit (``counters["graph_break"]``)."""
        out = super().compile_reasons()
        _drain()
        frames = _Dynamo.frames[self.frame_pos :]
        self.frame_pos = len(_Dynamo.frames)
        graphs = self.system_stats()[STAGE]
        n, self.graph_pos = graphs - self.graph_pos, graphs
        breaks, keys = _graph_breaks()
        nb, self.break_pos = breaks - self.break_pos, breaks
        new = [str(k).splitlines()[0] for k in keys if k not in self.break_seen]
        self.break_seen = set(keys)
        if n > 0:
            frames = frames or ["graph captured without a compilation-metrics record"]
            reasons = [frames[min(i, len(frames) - 1)] for i in range(n)]
            if nb:  # the graph breaks this call's compiles hit, on its first reason
                reasons[0] += f"; {nb} graph break{'s' if nb != 1 else ''}" + (f": {' | '.join(new)}" if new else "")
            out += [f"{STAGE}: {r}" for r in reasons]
        return out


@host_padding("bucketed")
class TorchCompile(Backend):
    name = "torch_compile"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    warmup = ("torch._dynamo", "torch.export._trace", "backends.torch_compile:warm_inductor")
    counters = {
        STAGE: Counter(
            "system",
            "torch._dynamo counters['stats']['unique_graphs']: graphs dynamo captured, each compiled by inductor",
        )
    }
    compile_scope = (
        "dynamo's entire_frame_compile_time_s per frame compile: dynamo tracing + AOT autograd + the "
        "compiler backend (inductor codegen and C++ build, or none with 'eager')"
    )
    quick_leaves_out = (LeftOut("*", "bounded", "the unbounded row's dynamo graph, with a range on the dim"), MODEL_COST_INDUCTOR)
    #: the torch.compile backend; DYNSHAPE_TORCH_COMPILE_BACKEND overrides
    #: (``eager`` keeps dynamo's graph capture but skips inductor's C++ build)
    compiler = "inductor"

    def __init__(self, compiler: str | None = None):
        self.compiler = compiler or os.environ.get("DYNSHAPE_TORCH_COMPILE_BACKEND") or self.compiler

    def startup(self):
        import torch
        import torch._dynamo  # noqa: F401

        if self.compiler == "inductor":
            warm_inductor()

    def prepare(self, case, mode):
        import torch
        import torch._dynamo

        cfg = torch._dynamo.config
        cfg.recompile_limit = 10**6
        cfg.accumulated_recompile_limit = 10**6
        cfg.fail_on_recompile_limit_hit = True
        fn = case.torch_fn()
        if mode == "static":
            return DynamoProgram(self, case, mode, torch.compile(fn, dynamic=False, backend=self.compiler), [])
        marks = [[(axis, *export_range(dim)) for axis, dim in axes.items()] for axes in case.dynamic_axes(mode)]
        return DynamoProgram(self, case, mode, torch.compile(fn, backend=self.compiler), marks)
