"""The gate's judgement of a whole run: ``harness run``'s exit code and ``report --check``'s.

Each job's records are judged against its rule
(:func:`harness.expectations.verdict`); on top of that, what is *missing*
fails too, so a run that was killed half-way, or that lost records, cannot
pass:

- a job the run's plan (``<run_id>.plan.json`` beside its records, written
  before the first job) lists that has no record at all: ``never ran``;
- a job that ran in a worker but whose records do not end it: a shape of the
  profile's sweep with no novel record (in any of the ``processes`` the plan
  asked for), a passing novel shape with no cached record;
- a cached record with fewer samples than the run asked for: ``repeats``, or
  :data:`harness.measure.MIN_SAMPLES` when the cached budget stopped it earlier
  (the measure loop never takes fewer unless ``repeats`` is smaller).

Such jobs get the outcome ``missing`` (not ok), with what is missing in
``problems``. A run without a plan (a merged run, an older harness) is
checked for holes inside the jobs it has; which jobs it never ran is then
unknown and :func:`verdicts` says so once on stderr.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from backends import envs

from . import expectations, frames, results

KEYS = ["case", "backend", "mode"]
#: exit codes, as :mod:`harness.cli` has them
EXIT_OK, EXIT_UNEXPECTED = 0, 1


def plan_of(run_file: str | Path) -> dict | None:
    """The plan beside a run's records (``<run_id>.plan.json``), or ``None``.
    A plan that cannot be read raises :class:`harness.results.ResultsError` naming it."""
    from .runner import plan_path

    path = plan_path(Path(run_file))
    if not path.exists():
        return None
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
        jobs = plan["jobs"]
        if not isinstance(plan, dict) or not all(isinstance(j, list) and len(j) in (3, 4) for j in jobs):
            raise ValueError("'jobs' is not a list of [case, backend, mode] (and the release environment, with --versions)")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise results.ResultsError(f"{path}: not a run plan ({type(e).__name__}: {e})") from None
    return plan


def plans(files) -> dict[str, dict]:
    """The plans of the run files that have one, by run id."""
    out = {}
    for f in files:
        plan = plan_of(f)
        if plan is not None:
            out[str(plan.get("run_id") or Path(f).stem)] = plan
    return out


def _sweep_length(case: str | None, profile) -> int | None:
    import cases

    if case is None:  # a record without its case: no sweep to measure it against
        return None
    try:
        return len(cases.get(case, checked=False).sizes_for(profile or "quick"))
    except (cases.CaseError, TypeError):
        return None


def _int(v) -> int | None:
    try:
        return None if v is None or v != v else int(v)
    except (TypeError, ValueError):
        return None


def holes(records: list[dict], plan: dict | None = None) -> list[str]:
    """What one job's records lack (empty when they are whole): see the module doc.
    ``plan``: the run's plan, for the samples and processes it asked for."""
    if not records or any(r.get("novel") is None or r.get("novel") != r.get("novel") for r in records):
        return []  # a job-level record ends the job (skipped, unsupported, failed, crashed, timed out)
    first = records[0]
    profile = first.get("profile") if isinstance(first.get("profile"), str) else (plan or {}).get("profile")
    n = _sweep_length(first.get("case"), profile)
    processes = _int((plan or {}).get("processes")) or 1
    out = []
    by_process: dict[int, dict[int | None, dict]] = {}
    cached: dict[int | None, dict] = {}  # None: a record without its shape index
    for r in records:
        i = _int(r.get("shape_index"))
        if r.get("novel") is True:
            by_process.setdefault(_int(r.get("process")) or 0, {})[i] = r
        else:
            cached[i] = r
    for p in range(processes):
        seen = by_process.get(p, {})
        if n is not None:
            gone = [i for i in range(n) if i not in seen]
            if gone:
                who = f" (process {p})" if processes > 1 else ""
                out.append(f"{len(gone)} of {n} shapes have no record{who}: shape {_list(gone)}")
    passed = [i for i, r in sorted(by_process.get(0, {}).items()) if r.get("status") == "pass"]
    no_cached = [i for i in passed if i not in cached]
    if no_cached:
        out.append(f"{len(no_cached)} of {len(passed)} passing shapes have no cached record: shape {_list(no_cached)}")
    asked = _int((plan or {}).get("repeats"))
    for i, r in sorted(cached.items()):
        got = _int(r.get("cached_repeats"))
        samples = r.get("cached_samples_s")
        if isinstance(samples, list) and got is not None and len(samples) != got:
            out.append(f"shape {i} (cached): {len(samples)} samples kept of the {got} it says it took")
        if asked is not None and got is not None and got < _least(asked) and r.get("status") == "pass":
            out.append(f"shape {i} (cached): {got} of {asked} samples (at least {_least(asked)} are always taken)")
    return out


def _least(asked: int) -> int:
    """The fewest cached samples a shape gets when ``asked`` were (the measure loop's budget rule)."""
    from .measure import MIN_SAMPLES

    return min(asked, MIN_SAMPLES)


def _list(ix: Sequence[int | None]) -> str:
    return ", ".join(map(str, ix[:8])) + (", …" if len(ix) > 8 else "")


def verdicts(
    df: pd.DataFrame, files=(), rules=None, by=None, ci: bool | None = None, warn=True
) -> dict[tuple, expectations.Verdict]:
    """Each job's :class:`~harness.expectations.Verdict`, keyed by (case, backend,
    mode) plus the ``by`` columns (``run_id``, ``host``: as
    :func:`harness.report.job_by` gives them; default ``run_id`` when ``df``
    holds several runs): the rule's judgement, turned ``missing`` where the
    job has holes, and a ``missing`` verdict for every job a plan of ``files``
    lists that ``df`` has no record of."""
    rules = expectations.load() if rules is None else rules
    by = (["run_id"] if df["run_id"].nunique() > 1 else []) if by is None else list(by)
    found = plans(files)

    def with_holes(recs: list[dict], v: expectations.Verdict) -> expectations.Verdict:
        gaps = holes(recs, found.get(str(recs[0].get("run_id"))))
        return expectations.Verdict("missing" if v.ok else v.outcome, [*gaps, *v.problems], v.rule) if gaps else v

    out = frames.verdicts(df, rules, by, ci=ci, then=with_holes)
    env = df["env"] if "env" in df.columns else pd.Series(None, index=df.index, dtype=object)
    release = env.map(envs.release)
    ran = set(zip(df["case"], df["backend"], df["mode"], release, df["run_id"], strict=True))
    for run_id, plan in found.items():
        for case, backend, mode, *rel in plan["jobs"]:  # a 4th: the release environment (--versions)
            if (case, backend, mode, rel[0] if rel else None, run_id) in ran:
                continue
            key = (case, backend, mode, *({"run_id": run_id, "env": rel[0] if rel else "?"}.get(b, "?") for b in by))
            out[key] = expectations.Verdict(
                "missing",
                [f"planned by run {run_id}, never ran (no record: was the run killed?)"],
                expectations.lookup(rules, case, backend, mode),
            )
    unplanned = sorted(set(df["run_id"].dropna().astype(str)) - set(found))
    if warn and unplanned and len(files):
        print(
            f"dynshape: warning: run {', '.join(unplanned)} has no plan (.plan.json): jobs it never ran cannot be "
            "told apart from jobs it did not select",
            file=sys.stderr,
        )
    return out


def exit_code(judged: dict, out=None) -> int:
    """EXIT_UNEXPECTED (listing them on stderr) when jobs ended otherwise than
    the expectations say (failed, crashed, recompiled, ``≠`` counts, xpass, no
    rule, or missing: see the module doc), else EXIT_OK: the exit code of
    ``run`` and of ``report --check``."""
    out = sys.stderr if out is None else out
    bad = {k: v for k, v in judged.items() if not v.ok}
    if not bad:
        return EXIT_OK
    print(f"dynshape: {len(bad)} of {len(judged)} jobs ended otherwise than cases/expectations.toml says:", file=out)
    for (case, backend, mode, *rest), v in bad.items():
        at = "".join(f"@{e}" for e in rest if envs.release(e))  # the release, with run --versions
        print(f"  {case}[{backend}-{mode}{at}]: {v.outcome}: {v.problems[0] if v.problems else v.outcome}", file=out)
    return EXIT_UNEXPECTED


@dataclasses.dataclass
class Gaps:
    """What ``compare`` could not compare: ``lines`` to print, and how many
    of them are ``failures`` (B lost a job or has holes)."""

    lines: list[str]
    failures: int


def compare_gaps(a: pd.DataFrame, b: pd.DataFrame, file_a=None, file_b=None) -> Gaps:
    """For ``compare``: every job with records in one run only, and the
    holes (:func:`holes`) of either run's jobs. A job of A that B lacks fails
    unless B's plan shows B did not select it; holes in B fail; A's are listed."""
    plan_a = plan_of(file_a) if file_a is not None else None
    plan_b = plan_of(file_b) if file_b is not None else None
    jobs_a, jobs_b = _jobs(a), _jobs(b)
    planned_b = {tuple(j[:3]) for j in plan_b["jobs"]} if plan_b else None
    lines, failures = [], 0
    for job in sorted(set(jobs_a) - set(jobs_b)):
        if planned_b is not None and job not in planned_b:
            lines.append(f"{_id(job)}: only in A (B did not select it)")
            continue
        failures += 1
        lines.append(f"{_id(job)}: only in A ({'planned by B, never ran' if planned_b else 'B has no record of it'})")
    lines += [f"{_id(job)}: only in B" for job in sorted(set(jobs_b) - set(jobs_a))]
    for side, jobs, plan in (("A", jobs_a, plan_a), ("B", jobs_b, plan_b)):
        for job, recs in sorted(jobs.items()):
            gaps = holes(recs, plan)
            if gaps:
                failures += side == "B"
                lines.append(f"{_id(job)}: holes in {side}: {'; '.join(gaps)}")
    return Gaps(lines, failures)


def _jobs(df: pd.DataFrame) -> dict[tuple, list[dict]]:
    return {k: g.to_dict("records") for k, g in df.groupby(KEYS, sort=True, dropna=False)}


def _id(job: tuple) -> str:
    return f"{job[0]}[{job[1]}-{job[2]}]"
