"""The measurement loop of one job (case, backend, mode); runs inside a worker.

One timing rule for every backend (the worker times ``Backend.startup``
before this loop runs):

- ``prepare_s``: ``backend.prepare(case, mode)``, with the job's compile
  counters reset just before it;
- novel phase: each shape of the sweep is new to the process. ``convert``
  (host → native) is not timed; the first call and ``sync`` are; ``to_numpy``
  is not. The compile counters are read around every call, so each record
  carries its own per-stage ``compile_delta`` (shape 0's includes what
  ``prepare`` compiled) and the reasons the system gave;
- cached phase: each passing shape again, after warm-up, every call synced;
  median and IQR over the samples: ``repeats`` of them, or fewer once the
  samples have taken :data:`CACHED_BUDGET_S` seconds (never fewer than
  :data:`MIN_SAMPLES`), so a slow call (the StableHLO reference interpreter's
  ~0.3 s) is sampled fewer times than a fast one, by the same rule on every
  backend (``cached_repeats`` says how many). A sample times ``number``
  back-to-back calls; the last call's output of every sample is checked
  against the oracle, outside the timer: every k-th call, k =
  ``cached_check_every`` (= ``number``; 1 for calls over a millisecond), and the
  first wrong output makes the record a ``mismatch``. A compile anywhere in
  the cached phase of a shape makes its record ``recompiled``.
"""

from __future__ import annotations

import statistics
import time
import traceback
from typing import Callable

import cases
from backends.base import Unsupported, check_bounds

from . import oracle

#: seconds of samples after which the cached phase of a shape stops taking more
CACHED_BUDGET_S = 0.5
#: samples taken whatever the budget (fewer only when ``repeats`` asks for fewer)
MIN_SAMPLES = 3


def _error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) < 2000 else text[:2000] + " …"


def _delta(after: dict, before: dict) -> dict:
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in dict.fromkeys([*before, *after])}


class _Meter:
    """Reads a backend's compile counters around each call."""

    def __init__(self, backend):
        self.backend = backend
        self.before = backend.compile_stats()

    def take(self) -> dict:
        """Fields for the call(s) since the last ``take``: the cumulative
        counts and times, this span's per-stage delta and the reasons."""
        b = self.backend
        stats = b.compile_stats()
        delta, self.before = _delta(stats, self.before), stats
        times = b.compile_times() or None
        breakdown = getattr(b, "call_breakdown", None)
        return dict(
            compiles=int(sum(stats.values())), compile_stages=stats, compile_delta=delta,
            compile_times=times, compile_time_s=float(sum(times.values())) if times else None,
            compile_reasons=b.compile_reasons() or None, guards=b.guards() or None,
            call_breakdown=breakdown() if callable(breakdown) else None,
        )


def run(job: dict, backend, emit: Callable[[dict], None]) -> None:
    """Measure ``job`` (keys: case, mode, profile, repeats, warmup; the runner
    fills them, with its defaults; ``novel_only``: stop after the novel phase) on ``backend``,
    calling ``emit(fields)`` once per measured call (and once for a job that
    cannot start)."""
    case = cases.get(job["case"], checked=False)  # the runner checked every oracle when it planned the job
    mode = job["mode"]
    base = {"case": case.name, "backend": backend.name, "mode": mode}

    t0 = time.perf_counter()
    backend.reset_counters()
    meter = _Meter(backend)
    try:
        program = backend.prepare(case, mode)
    except Unsupported as e:
        emit(dict(base, **meter.take(), status="unsupported", ok=None, message=str(e)))
        return
    except MemoryError:
        raise  # the worker reports it as ``oom``: the process may not recover
    except Exception as e:
        emit(dict(base, **meter.take(), status="error", ok=False, message=f"prepare failed: {_error(e)}"))
        return
    base["prepare_s"] = time.perf_counter() - t0

    tol = case.tol()
    runnable = []
    for index, sizes in enumerate(case.sizes_for(job["profile"])):
        inputs = case.make_inputs(sizes, seed=index)
        expected = case.expected(inputs)
        shape = dict(base, shape_index=index, sizes=sizes, shapes=[list(a.shape) for a in inputs], novel=True)
        try:
            check_bounds(case, mode, inputs)  # no system sees a size above its bound
            args = backend.convert(inputs)
            t0 = time.perf_counter()
            out = program(*args)
            backend.sync(out)
            latency = time.perf_counter() - t0
            got = backend.to_numpy(out)
        except Unsupported as e:
            emit(dict(shape, **meter.take(), status="unsupported", ok=None, message=str(e)))
            continue
        except MemoryError:
            raise
        except Exception as e:
            emit(dict(shape, **meter.take(), status="error", ok=False, message=_error(e)))
            continue
        verdict = oracle.compare(got, expected, case.out_dtype, tol.rtol, tol.atol)
        emit(dict(shape, **meter.take(), latency_s=latency, max_abs_err=verdict.max_abs_err,
                  max_rel_err=verdict.max_rel_err, ok=verdict.ok,
                  status="pass" if verdict.ok else "mismatch", message=verdict.message or None))
        if verdict.ok:
            runnable.append((args, expected, dict(shape, novel=False)))

    if job.get("novel_only"):  # a repeat of the novel phase (``harness run --processes``)
        return
    for args, expected, shape in runnable:
        verdicts: list = []

        def check(out, expected=expected) -> None:  # between samples, outside the timer
            verdicts.append(oracle.compare(backend.to_numpy(out), expected, case.out_dtype, tol.rtol, tol.atol))

        try:
            samples, every = _time_cached(program, backend, args, job["warmup"], job["repeats"], check=check)
            verdict = next((v for v in verdicts if not v.ok), verdicts[-1])
        except MemoryError:
            raise
        except Exception as e:
            emit(dict(shape, **meter.take(), status="error", ok=False, message=f"cached call failed: {_error(e)}"))
            continue
        fields = meter.take()
        med = statistics.median(samples)
        q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [med, med, med]
        recompiles = sum(fields["compile_delta"].values())
        if not verdict.ok:
            status, message = "mismatch", f"cached call: {verdict.message}"
        elif recompiles:
            status = "recompiled"
            why = "; ".join(fields["compile_reasons"] or ["the system gave no reason"])
            message = f"{recompiles} compile(s) in the cached phase of a shape seen before ({why})"
        else:
            status, message = "pass", None
        emit(dict(shape, **fields, latency_s=med, cached_latency_s=med, cached_iqr_s=q[2] - q[0],
                  cached_repeats=len(samples), cached_samples_s=samples, cached_check_every=every,
                  max_abs_err=verdict.max_abs_err, max_rel_err=verdict.max_rel_err,
                  ok=status == "pass", status=status, message=message))


def _time_cached(program, backend, args, warmup: int, repeats: int,
                 budget_s: float = CACHED_BUDGET_S, check=None) -> tuple[list[float], int]:
    """Per-call seconds, and ``number``: each sample times ``number``
    back-to-back calls, every call synced (so a framework with asynchronous
    dispatch is timed like one without), with ``number`` chosen from the last
    warm-up call so a sample lasts about a millisecond; ``check`` gets each
    sample's last (synced) output, after the sample's timer stops. Samples
    stop at ``repeats``, or earlier once they have taken ``budget_s`` in all and
    there are at least :data:`MIN_SAMPLES`."""
    single = 1e-7
    for _ in range(max(warmup, 1)):
        t0 = time.perf_counter()
        backend.sync(program(*args))
        single = max(time.perf_counter() - t0, 1e-7)
    number = max(1, min(1000, int(1e-3 / single)))
    samples, spent, out = [], 0.0, None
    while len(samples) < repeats and (spent < budget_s or len(samples) < MIN_SAMPLES):
        t0 = time.perf_counter()
        for _ in range(number):
            out = program(*args)
            backend.sync(out)
        took = time.perf_counter() - t0
        spent += took
        samples.append(took / number)
        if check is not None:
            check(out)
    return samples, number


def describe_exception() -> str:
    return traceback.format_exc(limit=8)
