"""The leaderboard: one row per (backend, mode) over every case of a run.

The question a user brings is "which stack carries my dynamic shapes, at what
cost?". PyTorch's compile dashboard answers it with pass rate, speedup and
compilation latency on one shape; this table adds what a sweep of novel shapes
shows and that dashboard cannot: whether a system compiled once over the sweep,
and its compiles per novel shape. Its columns, per (backend, mode):

- ``passed`` / ``run``: jobs that ended ``pass`` (every output oracle-equal, no
  error) among the jobs that ran (``unsupported``/``skipped`` are not run);
- ``once``: jobs that compiled once (:func:`harness.sweep.compiled_once`: passing,
  two or more novel shapes, nothing compiled after the first, the cached phase
  included), the zoo table's definition too;
- ``crash``: jobs where our own engines crashed (status ``crash``), apart from the
  system's failures;
- ``compiles/shape``: the run's compiles over its novel shapes, jobs that ran
  without an error or timeout;
- ``novel ×eager`` and ``cached ×eager``: the geometric mean over passing jobs
  of the novel sweep's and the cached call's ratio to torch eager on the same
  case (:func:`harness.frames.relative`), with the interquartile range of those
  ratios across cases as the dispersion.

Rows are ordered by pass rate, then ``once``, then the cached ratio.
"""

from __future__ import annotations

import html
import math

import pandas as pd

from . import frames, sweep
from .columns import IDLE
from .results import Status

#: statuses of jobs whose compile counts say nothing about the sweep
BROKEN = tuple(s.value for s in Status if s.no_output)
COLUMNS = [
    "backend",
    "mode",
    "passed",
    "run",
    "once",
    "crash",
    "compiles_per_shape",
    "novel_vs_eager",
    "novel_q25",
    "novel_q75",
    "cached_vs_eager",
    "cached_q25",
    "cached_q75",
]


def once_per_job(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per job (``keys``), whether it compiled once (:func:`harness.sweep.compiled_once`)."""
    if not len(df):
        return pd.Series(dtype=bool, name="once")
    every = df.groupby(keys, dropna=False, observed=True).size().index
    # a job without a passing record did not compile once: judge only the others (of a
    # quick run's ~43,000 planned jobs ~570 ran; a to_dict each for all took minutes)
    passed = (df["status"].astype(str) == "pass").groupby([df[k] for k in keys], dropna=False, observed=True)
    some = df[passed.transform("any").astype(bool)]
    if not len(some):
        return pd.Series(False, index=every, name="once")
    read = [c for c in sweep.READS if c in df.columns]  # a to_dict of every column of a flat frame: ~70 ms a job
    once = some.groupby(keys, dropna=False, observed=True)[read].apply(lambda j: sweep.compiled_once(j.to_dict("records")))
    return once.reindex(every, fill_value=False).astype(bool).rename("once")


def geomean_iqr(ratios) -> tuple[float | None, float | None, float | None]:
    """The geometric mean of the positive ``ratios`` and their 25th and 75th percentiles
    (``None`` each where there is none)."""
    r = pd.to_numeric(pd.Series(ratios, dtype=object), errors="coerce").dropna()
    r = r[r > 0]
    if not len(r):
        return None, None, None
    g = math.exp(float(r.map(math.log).mean()))
    return g, float(r.quantile(0.25)), float(r.quantile(0.75))


def leaderboard(df: pd.DataFrame, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The leaderboard of the records in ``df`` (raw or :func:`frames.flat`):
    one row per (backend, mode) in :data:`COLUMNS`. ``jobs``: the run's
    :func:`frames.summary` (or :func:`frames.jobs`) when the caller has it."""
    df = frames.flat(df)
    jobs = frames.summary(df) if jobs is None else jobs
    keys = frames.RUN + frames.JOB + frames.releases(df)
    j = jobs.join(once_per_job(df, keys), on=keys)
    j = j[~j["status"].astype(str).isin(IDLE)]
    rows = []
    for (backend, mode), g in j.groupby(["backend", "mode"], sort=True, observed=True):
        status = g["status"].astype(str)
        passed = g[status == "pass"]
        once = int(g["once"].fillna(False).astype(bool).sum())
        counted = g[~status.isin(BROKEN)]
        shapes = int(counted["shapes"].fillna(0).sum())
        compiles = float(counted["compiles"].fillna(0).sum())
        novel = geomean_iqr(passed["novel_vs_eager"])
        cached = geomean_iqr(passed["cached_vs_eager"])
        rows.append(
            {
                "backend": backend,
                "mode": mode,
                "passed": len(passed),
                "run": len(g),
                "once": once,
                "crash": int((status == Status.CRASH.value).sum()),
                "compiles_per_shape": compiles / shapes if shapes else None,
                "novel_vs_eager": novel[0],
                "novel_q25": novel[1],
                "novel_q75": novel[2],
                "cached_vs_eager": cached[0],
                "cached_q25": cached[1],
                "cached_q75": cached[2],
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    if not len(out):
        return out
    rate = out["passed"] / out["run"].where(out["run"] > 0)
    order = pd.DataFrame({"rate": rate, "once": out["once"], "cached": out["cached_vs_eager"].fillna(math.inf)})
    return out.loc[order.sort_values(["rate", "once", "cached"], ascending=[False, False, True]).index].reset_index(drop=True)


def _num(x: float) -> str:
    """Three significant figures at most, never an exponent (2100×, 21.4×, 1.27×)."""
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _ratio(g, lo, hi) -> str:
    if g is None or pd.isna(g):
        return "–"
    return f"{_num(g)}× ({_num(lo)}–{_num(hi)})"


def _cells(r: dict) -> list[str]:
    cps = r["compiles_per_shape"]
    return [
        str(r["backend"]),
        str(r["mode"]),
        f"{r['passed']}/{r['run']}",
        str(r["once"]),
        str(r["crash"]),
        "–" if cps is None or pd.isna(cps) else f"{cps:.2f}",
        _ratio(r["novel_vs_eager"], r["novel_q25"], r["novel_q75"]),
        _ratio(r["cached_vs_eager"], r["cached_q25"], r["cached_q75"]),
    ]


HEADERS = [
    "backend",
    "mode",
    "passed / run",
    "compiled once",
    "our crashes",
    "compiles / shape",
    "novel sweep ×eager",
    "cached call ×eager",
]
LEGEND = (
    "passed / run: jobs oracle-equal without error, of those that ran; compiled once: passing jobs that compiled "
    "nothing after their first novel shape; our crashes: jobs where our engines raised an internal error "
    "(status crash); compiles / shape: compiles over novel shapes; ×eager: geometric mean "
    "over passing jobs of the ratio to torch eager on the same case (>1 slower), with the interquartile range "
    "across cases"
)


def markdown(board: pd.DataFrame) -> str:
    """The leaderboard as a Markdown table with its legend."""
    if not len(board):
        return "(no job ran)"
    lines = ["| " + " | ".join(HEADERS) + " |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in board.to_dict("records")]
    return "\n".join(lines) + "\n\n" + LEGEND + "."


def to_html(board: pd.DataFrame) -> str:
    """The leaderboard as an HTML table (class ``leaderboard``) with its legend."""
    if not len(board):
        return "<p>(no job ran)</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>" for r in board.to_dict("records"))
    return f"<table class='summary leaderboard'><tr>{head}</tr>{body}</table><p class=legend>{html.escape(LEGEND)}.</p>"
