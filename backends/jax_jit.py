"""jax.jit: static = XLA compiles once per input shape; bounded = pad every
bounded axis to its maximum on the host (with each input's neutral ``pad``
value), so one executable serves every size, and slice the result back;
bucketed = pad every dynamic axis to its power-of-two bucket the same way,
one executable per bucket (both ``backends.padding``).

Counts come from jax.monitoring's backend-compile events: every XLA compile
in the process, including any the padding or slicing would cause. Times come
from the same events and from jax's two before them, one stage each in
``compile_times`` (only ``xla`` is counted): ``trace`` (jaxpr tracing,
``/jax/core/compile/jaxpr_trace_duration``), ``lowering`` (jaxpr to the MLIR
module, ``/jax/core/compile/jaxpr_to_mlir_module_duration``) and ``xla`` (the
backend compile). A tracing-cache hit that still lowers (or a lowering-cache
hit) shows as trace or lowering time with no compile.

Reasons come from jax itself: with ``jax_explain_cache_misses`` on, a miss of
jit's tracing cache logs "TRACING CACHE MISS ... never seen function" or "...
different input types: * at d, now f32[1001,8] and before f32[1000,8]" on the
``jax._src.interpreters.partial_eval`` logger. That is a different event from
the backend compile we count: a tracing miss is what leads to a lowering and
a backend compile, but jax explains only misses of user functions (a compile of
a jax-internal computation has no explanation), and a miss need not end in a
backend compile. We capture the explanations (a logging filter on that
logger, which also keeps them off stderr) and give each backend-compile event
the last explanation logged since the previous compile event (a nested jit's
miss is logged before its caller's); a compile with none gets a reason saying
so. jax computes the explanation inside the call, on misses only: a diff of
the new key against every key in its tracing cache, so a novel call's latency
grows with the shapes already seen (about 0.06 ms of CPU per cached key
measured here: ~1 ms per novel call at 10 keys, ~4 ms at 70) -- on for every jax_jit job.
"""

from __future__ import annotations

import logging
import re

from .base import Backend, Counter, JaxArrays, Program
from .padding import host_padding

STAGE = "xla"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: jax's events before the backend compile, and the ``compile_times`` stage each is timed under
TIMED_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace", "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowering"}
MISS_LOGGER = "jax._src.interpreters.partial_eval"


class _Xla:
    """Process-wide: backend compiles, their seconds, and one reason each."""

    compiles = 0
    seconds = 0.0
    stage_seconds = {stage: 0.0 for stage in TIMED_EVENTS.values()}  # trace, lowering
    reasons: list[str] = []
    pending: list[str] = []  # tracing-cache-miss explanations not yet paired with a compile
    listening = False


def _condense(msg: str) -> str:
    """jax's multi-line miss explanation on one line, in jax's words less the
    call site (the harness), file paths, object ids and boilerplate:
    ``tracing cache miss for edge_divide: different input types: at d, now
    f32[1001,8] and before f32[1000,8]; at c, ...`` (against the closest key
    jax has), or ``tracing cache miss: never seen function edge_divide``."""
    lines = [ln.strip() for ln in msg.splitlines()]
    if lines and lines[0].startswith("TRACING CACHE MISS"):
        lines = lines[1:]
    text = " ".join(ln for ln in lines if ln).replace(": * ", ": ").replace(" * ", "; ")
    text = re.sub(r" id=\d+", "", text)
    text = re.sub(r" defined at \S+", "", text)
    text = text.replace("never seen function: ", "never seen function ")
    text = text.replace(" all previously seen cache keys differ. For the closest previous key: ", ": ")
    if text.startswith("for "):
        return "tracing cache miss " + text
    return "tracing cache miss: " + text


class _CaptureMisses(logging.Filter):
    """Keeps jax's tracing-cache-miss explanations (and stops them there: the
    worker's stderr would get one multi-line warning per compile)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if "TRACING CACHE MISS" not in msg:
            return True
        _Xla.pending.append(_condense(msg))
        return False


def _on_event(event, duration, **kwargs):
    stage = TIMED_EVENTS.get(event)
    if stage is not None:
        _Xla.stage_seconds[stage] += duration
        return
    if event != COMPILE_EVENT:
        return
    _Xla.compiles += 1
    _Xla.seconds += duration
    if _Xla.pending:
        reason = _Xla.pending[-1]
    else:
        reason = "no tracing cache miss explained by jax before this compile (a jax-internal computation)"
    _Xla.pending = []
    _Xla.reasons.append(reason)


def _listen() -> None:
    if _Xla.listening:
        return
    import jax
    import jax.monitoring

    jax.config.update("jax_explain_cache_misses", True)
    log = logging.getLogger(MISS_LOGGER)
    if not log.isEnabledFor(logging.WARNING):
        log.setLevel(logging.WARNING)
    log.addFilter(_CaptureMisses())
    jax.monitoring.register_event_duration_secs_listener(_on_event)
    _Xla.listening = True


class JitProgram(JaxArrays, Program):
    """``jax.jit`` of the case's jax form; jax.monitoring's compiles, baselined when it is made."""

    def reset_counters(self):
        _Xla.pending = []  # a miss explained before this job is not this job's
        super().reset_counters()

    def system_stats(self):
        return {STAGE: _Xla.compiles}

    def system_seconds(self):
        return {**_Xla.stage_seconds, STAGE: _Xla.seconds}

    def system_reason_logs(self):
        return {STAGE: _Xla.reasons}


@host_padding("bounded", "bucketed")
class JaxJit(Backend):
    name = "jax_jit"
    forms = ("jax",)
    modes = ("static",)
    requires = ("jax",)
    preload = ("jax", "jax.numpy")
    counters = {STAGE: Counter("system", f"jax.monitoring {COMPILE_EVENT!r} events: XLA backend compiles")}
    compile_scope = (
        "jax.monitoring events of every compile in the process: jaxpr trace ('trace') + lowering "
        "to StableHLO ('lowering') + XLA backend compile ('xla'); padded modes: the static program's, "
        "at each bucket/bound"
    )

    def startup(self):
        import jax

        jax.devices()  # initialise the CPU client
        _listen()

    def prepare(self, case, mode):
        import jax

        _listen()
        return JitProgram(self, case, mode, jax.jit(case.jax_fn()))
