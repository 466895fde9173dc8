"""jax.jit: static = XLA compiles once per input shape; bounded = pad every
bounded axis to its maximum on the host (with each input's neutral ``pad``
value), so one executable serves every size, and slice the result back.

Counts come from jax.monitoring's backend-compile events: every XLA compile
in the process, including any the padding or slicing would cause.

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

import numpy as np

from .base import Backend, Counter, JaxArrays

STAGE = "xla"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
MISS_LOGGER = "jax._src.interpreters.partial_eval"


class _Xla:
    """Process-wide: backend compiles, their seconds, and one reason each."""

    compiles = 0
    seconds = 0.0
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


class Padded:
    """A padded device result and the valid region to read back."""

    def __init__(self, value, shape):
        self.value, self.shape = value, shape

    def block_until_ready(self):
        self.value.block_until_ready()
        return self


class JaxJit(JaxArrays, Backend):
    name = "jax_jit"
    forms = ("jax",)
    modes = ("static", "bounded")
    requires = ("jax",)
    counters = {STAGE: Counter("system", f"jax.monitoring {COMPILE_EVENT!r} events: XLA backend compiles")}

    def unsupported_reason(self, case, mode):
        """Bounded mode pads inputs to the bound: unsupported where no pad is
        neutral for the case (``Case.bucket_unsupported`` says why)."""
        reason = super().unsupported_reason(case, mode)
        if reason is None and mode == "bounded" and getattr(case, "bucket_unsupported", None):
            return f"bounded mode pads every dynamic dim to its bound, which is not neutral here: " \
                   f"{case.bucket_unsupported}"
        return reason

    def startup(self):
        import jax

        jax.devices()  # initialise the CPU client
        _listen()

    def prepare(self, case, mode):
        import jax

        _listen()
        jitted = jax.jit(case.jax_fn())
        # bounded mode pads NumPy inputs on the host before moving them
        self._host_inputs = mode != "static"
        if mode == "static":
            return jitted
        axes = case.dynamic_axes(mode)
        pads = [inp.pad for inp in case.inputs]

        def program(*arrays):
            sizes = {}
            padded = []
            for a, spec, pad in zip(arrays, axes, pads):
                widths = [(0, 0)] * a.ndim
                for axis, dim in spec.items():
                    sizes[dim.name] = a.shape[axis]
                    if dim.max is None:
                        raise ValueError(f"{case.name}: dim {dim.name!r} has no bound to pad to")
                    if a.shape[axis] > dim.max:
                        raise ValueError(
                            f"{case.name}: dim {dim.name!r} = {a.shape[axis]} exceeds its bound {dim.max}"
                        )
                    widths[axis] = (0, dim.max - a.shape[axis])
                padded.append(jax.device_put(np.pad(a, widths, constant_values=pad)))
            return Padded(jitted(*padded), case.out_shape_for(sizes))

        return program

    def convert(self, arrays):
        if getattr(self, "_host_inputs", False):
            return list(arrays)
        return super().convert(arrays)

    def to_numpy(self, out):
        if isinstance(out, Padded):
            return np.asarray(out.value)[tuple(slice(0, n) for n in out.shape)]
        return np.asarray(out)

    # -- compile counting ----------------------------------------------------
    def system_stats(self):
        return {STAGE: _Xla.compiles}

    def system_seconds(self):
        return {STAGE: _Xla.seconds}

    def reset_counters(self):
        _Xla.pending = []  # a miss explained before this job is not this job's
        super().reset_counters()

    def system_reason_logs(self):
        return {STAGE: _Xla.reasons}
