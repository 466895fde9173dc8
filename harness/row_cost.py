"""What each row of a run cost: wall time per (backend, mode), from its records.

A job's wall time is its last record's ``timestamp`` less its ``started``
(when the runner began the job: the worker's start, the sweep, the report of
a crash or timeout included). A record from before ``started`` was written
has only its timestamps: its job is taken to start when the run's previous job
ended, which is exact for a ``--jobs 1`` run (jobs run back to back) and an
under-estimate beside other jobs; such rows say ``estimated``.

Per (backend, mode): the jobs, how many were measured by this run and how
many taken from an earlier one (``reused_from``: their cost is the earlier
measurement's, and reusing them cost nothing), the sum of the jobs' wall
times (``job_s``, the row's cost in worker-seconds: its wall time with
``--jobs N`` is about ``job_s / N``), and ``span_s``, the row's first start to
its last record, which is the row's wall time when it ran alone in its run.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import results

COLUMNS = ("backend", "mode", "jobs", "measured", "reused", "job_s", "span_s", "estimated")


def job_walls(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job of ``df`` (raw records, :func:`harness.results.load`): run, backend,
    mode, case, its start and end, ``wall_s``, whether it was ``reused`` and whether its
    start was ``estimated``. Jobs that ran no worker (no record names the versions a
    worker imported) are left out; an export refused in the worker is a job that ran."""
    if not len(df):
        return pd.DataFrame(columns=["run_id", "backend", "mode", "case", "start", "end", "wall_s", "reused", "estimated"])
    d = df.assign(
        ts=pd.to_datetime(df["timestamp"], utc=True, format="ISO8601"),
        st=pd.to_datetime(df["started"], utc=True, format="ISO8601"),
        reused=df["reused_from"].notna(),
    )
    rows: list[dict[str, Any]] = []
    for (run, backend, mode, case, env), g in d.groupby(["run_id", "backend", "mode", "case", "env"], dropna=False, sort=False):
        if not g["versions"].notna().any():  # decided without a worker (skipped, unsupported up front)
            continue
        rows.append(
            {
                "run_id": run,
                "backend": backend,
                "mode": mode,
                "case": case,
                "env": env,
                "first": g["ts"].min(),
                "start": g["st"].min(),
                "end": g["ts"].max(),
                "reused": bool(g["reused"].all()),
            }
        )
    jobs = pd.DataFrame(rows)
    if not len(jobs):
        return jobs
    jobs["estimated"] = jobs["start"].isna()
    starts = dict(jobs["start"].items())
    # a job without ``started``: it began when the run's job before it ended (back to back, --jobs 1)
    for run, g in jobs[jobs["estimated"]].groupby("run_id", sort=False):
        ends = jobs.loc[jobs["run_id"] == run, "end"].sort_values()
        for i, first in g["first"].items():
            before = ends[ends < first]
            starts[i] = before.iloc[-1] if len(before) else pd.NaT
    jobs["start"] = pd.to_datetime(pd.Series(starts), utc=True)
    jobs["wall_s"] = (jobs["end"] - jobs["start"]).dt.total_seconds()
    return jobs


def costs(df: pd.DataFrame) -> pd.DataFrame:
    """:data:`COLUMNS`, one row per (backend, mode) of ``df``'s jobs that ran a worker."""
    jobs = job_walls(df)
    out = []
    for (backend, mode), g in jobs.groupby(["backend", "mode"], sort=True) if len(jobs) else ():
        measured = g[~g["reused"]]
        out.append(
            {
                "backend": backend,
                "mode": mode,
                "jobs": len(g),
                "measured": len(measured),
                "reused": int(g["reused"].sum()),
                "job_s": float(g["wall_s"].sum(min_count=1)) if g["wall_s"].notna().any() else None,
                "span_s": (measured["end"].max() - measured["start"].min()).total_seconds()
                if len(measured) and measured["start"].notna().any()
                else None,
                "estimated": int(g["estimated"].sum()),
            }
        )
    return pd.DataFrame(out, columns=list(COLUMNS))


def _hms(s) -> str:
    if s is None or s != s:
        return "-"
    s = round(float(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def markdown(frame: pd.DataFrame, jobs: int = 2) -> str:
    """The cost table as Markdown, with the row's wall time at ``--jobs jobs`` (``job_s / jobs``)."""
    lines = [
        f"| backend | mode | jobs | measured | reused | job time | ≈ wall at --jobs {jobs} | span | estimated starts |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in frame.to_dict("records"):
        per = r["job_s"] / jobs if r["job_s"] is not None and r["job_s"] == r["job_s"] else None
        lines.append(
            f"| {r['backend']} | {r['mode']} | {r['jobs']} | {r['measured']} | {r['reused']} | {_hms(r['job_s'])} | "
            f"{_hms(per)} | {_hms(r['span_s'])} | {r['estimated']} |"
        )
    return "\n".join(lines)


def of_runs(paths) -> pd.DataFrame:
    """:func:`costs` of the runs at ``paths``."""
    return costs(results.load(paths))
