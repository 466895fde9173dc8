"""Incremental runs: a job whose fingerprint is unchanged is taken from the
run that measured it, not run again (``harness run``; ``--fresh`` runs every job).

A job's fingerprint (:mod:`harness.fingerprint`) hashes its case, its
backend's code and the engine packages that code imports, the measuring
harness code, its environment's system versions, the run's settings and the
machine. Before a run, the records of the earlier runs in its output
directory are indexed by (job, fingerprint); a job found there whose run
recorded it to the end (:func:`harness.resume.complete_jobs`) has those
records copied into the new run, each marked ``reused_from`` (the run that
measured it), with the new run's id and commit. Only jobs that ran a worker
(a record names the versions it imported) are reused: a job skipped or found
unsupported up front costs nothing to decide again, and whether a backend is
available is not in the fingerprint. A record without a
fingerprint (from a harness before this one) is never reused: nothing says
what it was measured with.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from backends import envs

from . import results, run_file
from .resume import complete_jobs, job_key

#: how a record line holding a fingerprint starts it (``json.dumps``' separators):
#: lines without one are not parsed (most of an old results directory)
_MARK = '"fingerprint": "'
#: how a line defining shared values starts its key (:mod:`harness.run_file`)
_DEFINES = f'"{run_file.BLOCKS}": {{'


@dataclass
class Reuse:
    """What :func:`split` decided: the jobs to run and those taken from earlier runs."""

    run: list = field(default_factory=list)
    #: ``(combo, records)`` of each reused job, the records as the earlier run wrote them
    reused: list = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(len(recs) for _, recs in self.reused)


def index(out_dir: str | os.PathLike, skip: Path | None = None) -> dict[tuple, list[dict]]:
    """``{(job key, fingerprint): records}`` of every complete job with a fingerprint
    in the runs of ``out_dir`` (the newest run's where several have it), less ``skip``'s."""
    files = sorted(Path(out_dir).glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))
    found: dict[tuple, list[dict]] = {}
    for path in files:
        if skip is not None and path.resolve() == skip.resolve():
            continue
        recs = _fingerprinted(path)
        if not recs:
            continue
        by_job: dict[tuple, list[dict]] = {}
        for r in recs:
            by_job.setdefault((job_key(r), r["fingerprint"]), []).append(r)
        profiles = {r.get("profile") for r in recs}
        done: set = set()
        for profile in filter(None, profiles):
            done |= complete_jobs([r for r in recs if r.get("profile") == profile], profile)
        for (key, fp), job_recs in by_job.items():
            if key in done and any(r.get("versions") is not None for r in job_recs):
                found[(key, fp)] = job_recs  # a later run's records replace an earlier's
    return found


def _fingerprinted(path: Path) -> list[dict]:
    """The records of ``path`` that carry a fingerprint (a torn or corrupt line is skipped, as ``read_records`` does)."""
    out = []
    blocks: dict[str, object] = {}  # the file's shared values by id (harness.run_file)
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if _MARK not in line and _DEFINES not in line:
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    continue
                defined = run_file.definitions(rec)
                if defined is not None:
                    blocks.update(defined)
                    continue
                rec, _lost = run_file.whole(rec, results.FIELDS, blocks)
                results.check_record(rec, f"{path}:{n}")
            except (json.JSONDecodeError, results.ResultsError) as e:
                warnings.warn(results.ResultsWarning(f"{path}:{n}: not reused, not a readable record ({e})"), stacklevel=2)
                continue
            if isinstance(rec, dict) and isinstance(rec.get("fingerprint"), str):
                out.append(rec)
    return out


def split(runner, combos: list, fresh: bool = False) -> Reuse:
    """Which of ``combos`` run and which are taken from earlier runs in
    ``runner``'s output directory (none with ``fresh``)."""
    out = Reuse()
    if fresh:
        out.run = list(combos)
        return out
    found = index(runner.path.parent, skip=runner.path)
    if not found:
        out.run = list(combos)
        return out
    for combo in combos:
        key = (combo.case.name, combo.backend.name, combo.mode, envs.release(combo.env_name))
        recs = found.get((key, runner.fingerprint(combo)))
        if recs:
            out.reused.append((combo, recs))
        else:
            out.run.append(combo)
    return out


def copy(runner, reuse: Reuse) -> int:
    """Append the reused jobs' records to ``runner``'s run file, as records of
    this run (its id, commit, dirty flag) marked ``reused_from`` the run that
    measured them. Returns the records written."""
    if not reuse.reused:
        return 0
    common = {k: runner._common[k] for k in ("run_id", "commit", "dirty")}
    n = 0
    with results.Writer(runner.path) as w:
        for _, recs in reuse.reused:
            for r in recs:
                w.write(dict(r, **common, reused_from=r.get("reused_from") or r["run_id"]))
                n += 1
    return n


def apply(runner, combos: list, fresh: bool = False, say=print) -> list:
    """Before ``runner`` runs ``combos``: write its plan (every job, the reused
    ones too, so ``--resume`` sees them complete), copy the reused jobs'
    records into the run, say how many on ``say``, and return the jobs left to run."""
    runner.write_plan(list(combos))
    reuse = split(runner, combos, fresh=fresh)
    n = copy(runner, reuse)
    if reuse.reused:
        say(
            f"run {runner.run_id}: {len(reuse.reused)} of {len(combos)} jobs unchanged since an earlier run in "
            f"{runner.path.parent}/, taken from it ({n} records, marked reused_from; --fresh runs them); "
            f"{len(reuse.run)} to run"
        )
    return reuse.run
