"""The measurement loop of one job (case, backend, mode); runs inside a worker.

Novel phase: each shape of the sweep is new to the process; its first call
is timed (compiles included), the compile-count delta read, and the output
checked against the oracle. Cached phase: each passing shape again, after
warm-up, median and IQR over repeats.
"""

from __future__ import annotations

import statistics
import time
import traceback
from typing import Callable

import cases
from backends.base import Unsupported

from . import oracle


def _total(stats: dict) -> int:
    return int(sum(stats.values()))


def _error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) < 2000 else text[:2000] + " …"


def run(job: dict, backend, emit: Callable[[dict], None]) -> None:
    """Measure ``job`` (keys: case, mode, profile, repeats, warmup) on ``backend``,
    calling ``emit(fields)`` once per measured call."""
    case = cases.get(job["case"])
    mode = job["mode"]
    base = {"case": case.name, "backend": backend.name, "mode": mode}

    def fields(**kw):
        stats = backend.compile_stats()
        out = dict(base, compiles=_total(stats), compile_stages=stats, compile_time_s=backend.compile_time_s(),
                   guards=backend.guards() or None)
        out.update(kw)
        return out

    try:
        program = backend.prepare(case, mode)
    except Unsupported as e:
        emit(fields(status="unsupported", ok=None, message=str(e)))
        return
    except Exception as e:
        emit(fields(status="error", ok=False, message=f"prepare failed: {_error(e)}"))
        return

    tol = case.tol()
    runnable = []
    for index, sizes in enumerate(case.sizes_for(job["profile"])):
        inputs = case.make_inputs(sizes, seed=index)
        expected = case.expected(inputs)
        args = backend.convert(inputs)
        shape_fields = dict(shape_index=index, sizes=sizes, shapes=[list(a.shape) for a in inputs], novel=True)
        t0 = time.perf_counter()
        try:
            out = program(*args)
            backend.sync(out)
            latency = time.perf_counter() - t0
            got = backend.to_numpy(out)
        except Unsupported as e:
            emit(fields(**shape_fields, status="unsupported", ok=None, message=str(e)))
            continue
        except Exception as e:
            emit(fields(**shape_fields, status="error", ok=False, message=_error(e)))
            continue
        verdict = oracle.compare(got, expected, case.out_dtype, tol.rtol, tol.atol)
        emit(fields(**shape_fields, latency_s=latency, max_abs_err=verdict.max_abs_err,
                    max_rel_err=verdict.max_rel_err, ok=verdict.ok,
                    status="pass" if verdict.ok else "mismatch", message=verdict.message or None))
        if verdict.ok:
            runnable.append((index, sizes, inputs, args, shape_fields))

    for index, sizes, inputs, args, shape_fields in runnable:
        try:
            samples = _time_cached(program, backend, args, job.get("warmup", 2), job.get("repeats", 7))
        except Exception as e:
            emit(fields(**dict(shape_fields, novel=False), status="error", ok=False,
                        message=f"cached call failed: {_error(e)}"))
            continue
        med = statistics.median(samples)
        q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [med, med, med]
        emit(fields(**dict(shape_fields, novel=False), latency_s=med, cached_latency_s=med,
                    cached_iqr_s=q[2] - q[0], cached_repeats=len(samples), ok=True, status="pass"))


def _time_cached(program, backend, args, warmup: int, repeats: int) -> list[float]:
    """Per-call seconds: each sample times ``number`` back-to-back calls, with
    ``number`` chosen so a sample lasts about a millisecond."""
    for _ in range(max(warmup, 1)):
        backend.sync(program(*args))
    t0 = time.perf_counter()
    backend.sync(program(*args))
    single = max(time.perf_counter() - t0, 1e-7)
    number = max(1, min(1000, int(1e-3 / single)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            out = program(*args)
        backend.sync(out)
        samples.append((time.perf_counter() - t0) / number)
    return samples


def describe_exception() -> str:
    return traceback.format_exc(limit=8)
