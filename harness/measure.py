"""The measurement loop of one job (case, backend, mode); runs inside a worker.

One timing rule for every backend and mode (the worker times
``Backend.startup`` before this loop runs):

- ``prepare_s``: ``backend.prepare(case, mode)``, which makes the job's
  :class:`~backends.base.Program` (its compile counters start when it is made);
- the timed region (``latency_s``, ``cached_latency_s``) is ``program(*args)``
  + ``sync``, on ``args`` already in the backend's native form (padded, on
  the device) and up to outputs computed on the device. What a user pays
  around it is timed apart, per record: ``pad_s`` (host padding, where the
  mode pads on the host; else ``None``), ``h2d_s`` (the rest of ``convert``:
  host → device copy, dtype casts, marking dims dynamic), ``d2h_s``
  (``to_numpy``: device → host copy and slicing a padded output back to
  the live sizes) and their sum with the call, ``end_to_end_s``;
- novel phase: each shape of the sweep is new to the process: ``convert``,
  the first call and ``to_numpy``, each timed once. The compile counters
  are read around every call, so each record carries its own per-stage
  ``compile_delta`` (shape 0's includes what ``prepare`` compiled) and the
  reasons the system gave;
- cached phase: each passing shape again, after warm-up, every call synced;
  median and IQR over the samples: ``repeats`` of them, or fewer once the
  samples have taken :data:`CACHED_BUDGET_S` seconds (never fewer than
  :data:`MIN_SAMPLES`), so a slow call (the StableHLO reference interpreter's
  ~0.3 s) is sampled fewer times than a fast one, by the same rule on every
  backend (``cached_repeats`` says how many). A sample times ``number``
  back-to-back calls; the last call's output of every sample is checked
  against the oracle, outside the timer: every k-th call, k =
  ``cached_check_every`` (= ``number``; 1 for calls over a millisecond), and the
  first wrong output makes the record a ``mismatch``. Then ``convert`` and
  ``to_numpy`` are timed around up to :data:`IO_SAMPLES` further (untimed)
  calls; their medians are the record's ``pad_s``/``h2d_s``/``d2h_s``. A compile
  anywhere in the cached phase of a shape makes its record ``recompiled``.
"""

from __future__ import annotations

import statistics
import time
import traceback
from collections.abc import Callable

import cases
from backends.base import Program, Unsupported, check_bounds, failed_stage

from . import oracle

#: seconds of samples after which the cached phase of a shape stops taking more
CACHED_BUDGET_S = 0.5
#: samples taken whatever the budget (fewer only when ``repeats`` asks for fewer)
MIN_SAMPLES = 3
#: most timings of ``convert``/``to_numpy`` per cached record (fewer once they took :data:`CACHED_BUDGET_S`)
IO_SAMPLES = 5


#: characters of a failure message a record keeps (the system's message whole, but not a megabyte)
MESSAGE_MAX = 20000


def _error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) < MESSAGE_MAX else text[:MESSAGE_MAX] + " …"


def failure(e: Exception, prefix: str = "") -> dict:
    """The record fields of a failure: ``status`` (the refusal's own, ``unsupported`` or
    ``out_of_range``; ``crash`` for an internal error of our engines, :func:`harness.blame.ours`;
    else ``error``), the message whole, the stage it was raised in and the system's diagnosis."""
    from . import blame

    if isinstance(e, Unsupported):
        status, ok, message = e.status, None, str(e)
    else:
        status, ok, message = ("crash" if blame.ours(e) else "error"), False, _error(e)
    return dict(
        status=status,
        ok=ok,
        message=prefix + message,
        stage=failed_stage(e),
        diagnosis=getattr(e, "diagnosis", None),
    )


def _delta(after: dict, before: dict) -> dict:
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in dict.fromkeys([*before, *after])}


class _Meter:
    """Reads a program's compile counters around each call."""

    def __init__(self, program: Program, since_made: bool = False):
        self.program = program
        self.before = program.compile_stats()
        self.work_before = program.work_stats()
        if since_made:  # the first span counts from the program's making: shape 0 carries what prepare compiled
            self.before = {stage: 0 for stage in self.before}
            self.work_before = {stage: 0 for stage in self.work_before}

    @classmethod
    def unmade(cls, backend, case, mode) -> dict:
        """The fields of a job whose ``prepare`` raised: its stages, at 0 (the
        program that counted what it did was never returned)."""
        return cls(Program(backend, case, mode)).take()

    def take(self) -> dict:
        """Fields for the call(s) since the last ``take``: the cumulative
        counts and times, this span's per-stage delta and the reasons."""
        p = self.program
        stats = p.compile_stats()
        delta, self.before = _delta(stats, self.before), stats
        times = p.compile_times() or None
        work = p.work_stats()
        work_delta, self.work_before = _delta(work, self.work_before), work
        return dict(
            work_delta=work_delta or None,
            work_times=p.work_times() or None,
            compiles=int(sum(stats.values())),
            compile_stages=stats,
            compile_delta=delta,
            compile_times=times,
            compile_time_s=float(sum(times.values())) if times else None,
            compile_reasons=p.compile_reasons() or None,
            guards=p.guards() or None,
            call_breakdown=p.call_breakdown(),
            narrowed=p.narrowed(),
        )


def run(job: dict, backend, emit: Callable[[dict], None]) -> None:
    """Measure ``job`` (keys: case, mode, profile, repeats, warmup; the runner
    fills them, with its defaults; ``novel_only``: stop after the novel phase) on ``backend``,
    calling ``emit(fields)`` once per measured call (and once for a job that
    cannot start): ``prepare``, then the novel phase, then the cached phase."""
    # the runner checked every oracle when it planned the job; ``source`` is where the plan
    # found the case (a pack that breaks later fails its own cases' jobs, no other)
    case = cases.get(job["case"], checked=False, source=job.get("source"))
    made = _prepare(case, job["mode"], backend, emit)
    if made is None:
        return
    program, base, meter = made
    runnable = _novel_phase(case, job, program, base, meter, emit)
    if job.get("novel_only"):  # a repeat of the novel phase (``harness run --processes``)
        return
    _cached_phase(case, job, program, runnable, meter, emit)


def _prepare(case, mode: str, backend, emit) -> tuple | None:
    """``(program, the job's base fields with prepare_s, its meter)``; None when ``prepare``
    raised (the job's one record emitted)."""
    base = {"case": case.name, "backend": backend.name, "mode": mode}
    t0 = time.perf_counter()
    try:
        program = backend.prepare(case, mode)
    except MemoryError:
        raise  # the worker reports it as ``oom``: the process may not recover
    except Exception as e:
        prefix = "" if isinstance(e, Unsupported) else "prepare failed: "
        emit(dict(base, **_Meter.unmade(backend, case, mode), **failure(e, prefix)))
        return None
    base["prepare_s"] = time.perf_counter() - t0
    return program, base, _Meter(program, since_made=True)


def _novel_phase(case, job: dict, program: Program, base: dict, meter: _Meter, emit) -> list:
    """Each shape of the profile's sweep once, new to the process (one record each); returns
    ``(inputs, expected, record fields)`` of the shapes that passed, for the cached phase."""
    mode, tol = job["mode"], case.tol()
    runnable = []
    for index, sizes in enumerate(case.sizes_for(job["profile"])):
        inputs = case.make_inputs(sizes, seed=index)
        expected = case.expected(inputs)
        shape = dict(base, shape_index=index, sizes=sizes, shapes=[list(a.shape) for a in inputs], novel=True)
        try:
            check_bounds(case, mode, inputs)  # no system sees a size above its bound
            args, io = _convert(program, inputs)
            t0 = time.perf_counter()
            out = program(*args)
            program.sync(out)
            latency = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = program.to_numpy(out)
            io["d2h_s"] = time.perf_counter() - t0
        except MemoryError:
            raise
        except Exception as e:
            emit(dict(shape, **meter.take(), **failure(e)))
            continue
        verdict = oracle.compare(got, expected, case.out_dtype, tol.rtol, tol.atol)
        emit(
            dict(
                shape,
                **meter.take(),
                **_io_fields(io, latency),
                latency_s=latency,
                max_abs_err=verdict.max_abs_err,
                max_rel_err=verdict.max_rel_err,
                ok=verdict.ok,
                status="pass" if verdict.ok else "mismatch",
                message=verdict.message or None,
            )
        )
        if verdict.ok:
            runnable.append((inputs, expected, dict(shape, novel=False)))
    return runnable


def _cached_phase(case, job: dict, program: Program, runnable: list, meter: _Meter, emit) -> None:
    """Each shape that passed its novel call again, warmed up and sampled (one record each)."""
    tol = case.tol()
    for inputs, expected, shape in runnable:
        verdicts: list = []

        def check(out, expected=expected) -> None:  # between samples, outside the timer
            verdicts.append(oracle.compare(program.to_numpy(out), expected, case.out_dtype, tol.rtol, tol.atol))

        try:
            # converted again: a program made by its first call may take another form than the host
            # arrays that call got (stablehlo_xla's padded executors stage them in convert once they exist)
            args = program.convert(inputs)
            samples, every = _time_cached(program, args, job["warmup"], job["repeats"], check=check)
            verdict = next((v for v in verdicts if not v.ok), verdicts[-1])
            io = _time_io(program, inputs, min(IO_SAMPLES, job["repeats"]))
        except MemoryError:
            raise
        except Exception as e:
            emit(dict(shape, **meter.take(), **failure(e, "cached call failed: ")))
            continue
        emit(_cached_record(shape, meter.take(), samples, every, verdict, io))


def _cached_record(shape: dict, fields: dict, samples: list, every: int, verdict, io: dict) -> dict:
    """A cached record: the samples' median and IQR, and its status (a wrong output: ``mismatch``;
    a compile in the phase: ``recompiled``)."""
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
    return dict(
        shape,
        **fields,
        **_io_fields(io, med),
        latency_s=med,
        cached_latency_s=med,
        cached_iqr_s=q[2] - q[0],
        cached_repeats=len(samples),
        cached_samples_s=samples,
        cached_check_every=every,
        max_abs_err=verdict.max_abs_err,
        max_rel_err=verdict.max_rel_err,
        ok=status == "pass",
        status=status,
        message=message,
    )


def _convert(program: Program, inputs) -> tuple[list, dict]:
    """``program.convert(inputs)`` and its seconds: ``pad_s`` (what the program
    recorded as host padding, ``None`` where it pads nothing) and ``h2d_s`` (the rest)."""
    program.take_io()
    t0 = time.perf_counter()
    args = program.convert(inputs)
    took = time.perf_counter() - t0
    pad = program.take_io().get("pad_s")
    return args, {"pad_s": pad, "h2d_s": took - (pad or 0.0)}


def _time_io(program: Program, inputs, n: int, budget_s: float = CACHED_BUDGET_S) -> dict:
    """Medians of ``pad_s``/``h2d_s``/``d2h_s`` over ``n`` conversions (fewer
    once they took ``budget_s``, at least one), each followed by an untimed,
    synced call whose output ``to_numpy`` copies back (a fresh output each
    time: jax caches an array's host copy)."""
    seen: dict[str, list] = {"pad_s": [], "h2d_s": [], "d2h_s": []}
    t_start = time.perf_counter()
    for _ in range(max(n, 1)):
        args, io = _convert(program, inputs)
        out = program(*args)
        program.sync(out)
        t0 = time.perf_counter()
        program.to_numpy(out)
        io["d2h_s"] = time.perf_counter() - t0
        for k, v in io.items():
            if v is not None:
                seen[k].append(v)
        if time.perf_counter() - t_start > budget_s:
            break
    return {k: statistics.median(v) if v else None for k, v in seen.items()}


def _io_fields(io: dict, call_s: float) -> dict:
    """The record's input/output fields and ``end_to_end_s``: what a user pays
    for host inputs to a host output (padding, copies and the call)."""
    steps = [io.get("pad_s"), io.get("h2d_s"), io.get("d2h_s")]
    return dict(pad_s=steps[0], h2d_s=steps[1], d2h_s=steps[2], end_to_end_s=call_s + sum(v for v in steps if v is not None))


def _time_cached(
    program: Program, args, warmup: int, repeats: int, budget_s: float = CACHED_BUDGET_S, check=None
) -> tuple[list[float], int]:
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
        program.sync(program(*args))
        single = max(time.perf_counter() - t0, 1e-7)
    number = max(1, min(1000, int(1e-3 / single)))
    samples: list[float] = []
    spent, out = 0.0, None
    while len(samples) < repeats and (spent < budget_s or len(samples) < MIN_SAMPLES):
        t0 = time.perf_counter()
        for _ in range(number):
            out = program(*args)
            program.sync(out)
        took = time.perf_counter() - t0
        spent += took
        samples.append(took / number)
        if check is not None:
            check(out)
    return samples, number


def describe_exception() -> str:
    return traceback.format_exc(limit=8)
