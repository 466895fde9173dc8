"""Finish an interrupted run: ``dynshape run --resume RUN_ID``.

A run writes ``<run_id>.plan.json`` beside its records before its first job:
the jobs it will run and the settings they run with. Resuming reads the plan
and the records, keeps every job that ended (its records say so: see
:func:`complete_jobs`), moves the records of jobs cut short to
``<run_id>.incomplete`` (kept, out of the reports' way), and runs the missing
and incomplete jobs again, appending to the same ``<run_id>.jsonl``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cases
from backends import envs

from . import registry, results, run_file
from .runner import PLAN_SUFFIX, SETTINGS, Combo, Runner, atomic_write, plan_path


def job_key(r: dict) -> tuple:
    """A record's job: (case, backend, mode, release environment or ``None``)."""
    return (r.get("case"), r.get("backend"), r.get("mode"), envs.release(r.get("env")))


def complete_jobs(records: list[dict], profile: str) -> set[tuple]:
    """The jobs (:func:`job_key`) whose records show they ended: a
    job-level record (``novel`` null: skipped, unsupported, prepare failed,
    crashed, oom, timeout, worker error), or a novel record for every shape
    of the profile and a cached record for every novel one that passed (what
    :func:`harness.measure.run` writes when it finishes)."""
    by_job: dict[tuple, list[dict]] = {}
    for r in records:
        by_job.setdefault(job_key(r), []).append(r)
    done = set()
    for key, recs in by_job.items():
        if any(r.get("novel") is None for r in recs):
            done.add(key)
            continue
        try:
            n = len(cases.get(key[0]).sizes_for(profile))
        except cases.CaseError:
            continue
        novel = {r["shape_index"] for r in recs if r.get("novel") is True}
        passed = {r["shape_index"] for r in recs if r.get("novel") is True and r.get("status") == "pass"}
        cached = {r["shape_index"] for r in recs if r.get("novel") is False}
        if novel == set(range(n)) and cached == passed:
            done.add(key)
    return done


def resume(out_dir: str | os.PathLike, run_id: str, **overrides):
    """``(runner, pending combos)`` to finish run ``run_id`` in ``out_dir``.

    Raises :class:`harness.results.ResultsError` naming the valid run ids
    when there is no such run or it has no plan.
    """
    out = Path(out_dir)
    path = out / f"{run_id}.jsonl"
    plan_file = plan_path(path)
    if not path.exists() and not plan_file.exists():
        runs = sorted(p.name[: -len(PLAN_SUFFIX)] for p in out.glob(f"*{PLAN_SUFFIX}"))
        raise results.ResultsError(f"no run {run_id!r} in {out}/; resumable runs: {', '.join(runs) or 'none'}")
    if not plan_file.exists():
        raise results.ResultsError(
            f"run {run_id!r} has no plan ({plan_file.name}): it was started by a harness "
            "without --resume support, so its job list is unknown"
        )
    plan = read_plan(plan_file)
    settings = {k: plan[k] for k in SETTINGS if k in plan}
    settings.update(overrides)
    runner = Runner(out, run_id=run_id, **settings)
    catalogue = {c.name: c for c in cases.catalogue()}
    backends = registry.backends()
    combos = []
    for case, backend, mode, *release in plan["jobs"]:
        if case not in catalogue:
            raise cases.CaseError(f"run {run_id!r} planned case {case!r}, which no longer exists; valid: {', '.join(catalogue)}")
        if backend not in backends:
            raise registry.RegistryError(
                f"run {run_id!r} planned backend {backend!r}, which is not registered; valid: {', '.join(backends)}"
            )
        if mode not in catalogue[case].modes:
            raise results.ResultsError(
                f"run {run_id!r} planned {case}[{backend}-{mode}], but case {case!r} has "
                f"no mode {mode!r} (it has {', '.join(catalogue[case].modes)})"
            )
        if release and release[0] not in envs.ENVS:
            raise results.ResultsError(
                f"run {run_id!r} planned environment {release[0]!r}, which backends/envs.py no longer declares"
            )
        combos.append(Combo(catalogue[case], backends[backend], mode, env=release[0] if release else None))
    records = results.read_records(path) if path.exists() else []
    done = complete_jobs(records, runner.profile)
    _set_aside(path, records, done)
    return runner, [c for c in combos if (c.case.name, c.backend.name, c.mode, c.env) not in done]


def read_plan(path: Path) -> dict:
    """A run's ``.plan.json``, checked: :class:`harness.results.ResultsError`
    naming the file and what is wrong when it is not JSON or not a plan."""

    def bad(why: str) -> results.ResultsError:
        return results.ResultsError(f"{path}: {why}; the run cannot be resumed from it (start a new run)")

    try:
        plan = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        raise bad(f"corrupt plan, not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(plan, dict):
        raise bad(f"not a plan (a JSON {type(plan).__name__}, not an object)")
    jobs = plan.get("jobs")
    if not isinstance(jobs, list):
        raise bad("field 'jobs' is missing or not a list")
    for i, job in enumerate(jobs):
        if not (isinstance(job, list) and len(job) in (3, 4) and all(isinstance(x, str) for x in job)):
            raise bad(f"jobs[{i}] is {job!r}, not [case, backend, mode] or [case, backend, mode, release environment]")
    types: dict[str, type | tuple[type, ...]] = {
        "profile": str,
        "repeats": int,
        "warmup": int,
        "timeout_s": (int, float, type(None)),
        "threads": (int, type(None)),
        "max_memory": (int, type(None)),
        "warm_cache": bool,
        "processes": int,
    }
    for k, want in types.items():
        if k in plan and (not isinstance(plan[k], want) or (isinstance(plan[k], bool) and want is not bool)):
            raise bad(f"field {k!r} is {plan[k]!r}, of the wrong type")
    return plan


def _set_aside(path: Path, records: list[dict], done: set) -> None:
    """Keep only the records of ended jobs in ``path`` (and no torn line);
    append the others to ``<run_id>.incomplete``."""
    keep = [r for r in records if job_key(r) in done]
    if not path.exists():
        return
    drop = [r for r in records if job_key(r) not in done]
    if drop:
        with open(path.with_suffix(".incomplete"), "a", encoding="utf-8") as f:
            f.write(run_file.text(drop))
            f.flush()
            os.fsync(f.fileno())
    atomic_write(path, run_file.text(keep))
