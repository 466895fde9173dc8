"""Summaries of results: one row per (case, backend, mode), as a DataFrame,
Markdown and CSV.

The pandas views (:func:`summary`, :func:`per_shape`, :func:`conformance_matrix`,
:func:`history`, :func:`jobs`) live in :mod:`harness.frames` and are re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import pandas as pd

from . import results
from .frames import (  # noqa: F401 (the pandas API)
    compile_patterns,
    conformance_matrix,
    family_table,
    history,
    jobs,
    per_shape,
    summary,
)

KEYS = ["case", "backend", "mode"]
BASELINE = "torch_eager"

#: worst first: a job's status is the worst of its records
SEVERITY = list(results.SEVERITY)


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of the summary: its name in the DataFrame, the Markdown
    header, how a value is written, and whether it is text (left-aligned)."""

    name: str
    header: str
    fmt: Callable[[object], str] = str
    text: bool = False


def _fmt_ratio(v) -> str:
    return f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"


def _clip(n: int) -> Callable[[object], str]:
    def fmt(v) -> str:
        s = str(v).replace("|", "\\|").replace("\n", " ")
        return s if len(s) <= n else s[: n - 1] + "…"

    return fmt


COLUMNS = [
    Column("case", "case", text=True),
    Column("backend", "backend", text=True),
    Column("mode", "mode", text=True),
    Column("status", "status", text=True),
    Column("expected", "expected", _clip(60), text=True),
    Column("shapes", "shapes", lambda v: str(int(v))),
    Column("compiles", "compiles", lambda v: str(int(v))),
    Column("compiles_per_shape", "compiles/shape", lambda v: f"{v:.2f}"),
    Column("stages", "stages", text=True),
    Column("startup_s", "start-up", lambda v: fmt_seconds(v)),
    Column("prepare_s", "prepare", lambda v: fmt_seconds(v)),
    Column("novel_sweep_s", "novel sweep", lambda v: fmt_seconds(v)),
    Column("compile_time", "compile time", text=True),
    Column("cached_median_s", "cached call", lambda v: fmt_seconds(v)),
    Column("novel_vs_eager", "novel ×eager", _fmt_ratio),
    Column("cached_vs_eager", "cached ×eager", _fmt_ratio),
    Column("max_abs_err", "max abs err", lambda v: f"{v:.1e}"),
    Column("max_rel_err", "max rel err", lambda v: f"{v:.1e}"),
    Column("why", "why it recompiled (first)", _clip(90), text=True),
    Column("message", "note", _clip(90), text=True),
]
BY_NAME = {c.name: c for c in [*COLUMNS, Column("run_id", "run", text=True), Column("host", "machine", text=True)]}
NAMES = [c.name for c in COLUMNS]


def _worst(statuses) -> str:
    present = set(statuses)
    for s in SEVERITY:
        if s in present:
            return s
    return "unknown"


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, backend, mode) (per run, if ``df`` holds several).

    ``compiles`` is the last cumulative count of the job; ``novel_sweep_s`` is
    ``prepare_s`` plus the sum of first-call latencies (every backend by the
    same rule; the median over processes with ``run --processes``; ``startup_s``, the worker's start (``machine.worker_start``), is its
    own column); ``compile_time`` the job's compile seconds per stage;
    ``why`` the reason the system gave for the first compile after the first
    shape (a recompile); ``cached_median_s`` the median over shapes of the
    cached medians; ``*_vs_eager`` divide by torch_eager's figure for the same
    case (same mode where it ran, else any mode): >1 is slower. Rows of a mode
    a backend labels (``Backend.mode_notes``) carry the label in ``message``.
    """
    hosts = df["machine"].map(lambda m: m.get("host", "?") if isinstance(m, dict) else m)
    keys = KEYS + (["run_id"] if df["run_id"].nunique() > 1 else [])
    if hosts.nunique() > 1:  # runs merged from several machines stay apart
        df, keys = df.assign(host=hosts), keys + ["host"]
    rows = []
    for key, g in df.groupby(keys, sort=True, dropna=False):
        key = dict(zip(keys, key))
        novel = g[g["novel"] == True]  # noqa: E712 (None for job-level records)
        cached = g[(g["novel"] == False) & (g["status"] == "pass")]  # noqa: E712
        last = g.iloc[-1]
        shapes = int(novel["shape_index"].nunique()) if len(novel) else 0
        compiles = _int(last["compiles"])
        timed = novel[novel["latency_s"].notna()]
        prepare = _first(g["prepare_s"])
        messages = [m for m in g.loc[g["status"] != "pass", "message"].dropna()]
        label = mode_note(key["backend"], key["mode"])
        rows.append({
            **key,
            "status": _worst(g["status"]),
            "shapes": shapes,
            "compiles": compiles,
            "compiles_per_shape": (compiles / shapes) if (shapes and compiles is not None) else None,
            "stages": _stages(_last_dict(g["compile_stages"])),
            "startup_s": _first(g["startup_s"]),
            "prepare_s": prepare,
            "novel_sweep_s": _sweep(timed),
            "compile_time": _times(_last_dict(g["compile_times"])),
            "cached_median_s": float(cached["cached_latency_s"].median()) if len(cached) else None,
            "max_abs_err": _max(g["max_abs_err"]),
            "max_rel_err": _max(g["max_rel_err"]),
            "why": first_recompile_reason(novel),
            "message": "; ".join(m for m in (label, messages[0] if messages else "") if m),
        })
    out = pd.DataFrame(rows, columns=[c for c in NAMES if c not in ("novel_vs_eager", "cached_vs_eager", "expected")]
                       + [k for k in ("run_id", "host") if k in keys])
    return _relative(out)


def _sweep(timed: pd.DataFrame) -> float | None:
    """``prepare_s`` plus the first calls; with several processes
    (``run --processes``), the median over them."""
    if not len(timed):
        return None
    per = timed.groupby(timed["process"].fillna(0)).agg(calls=("latency_s", "sum"), prepare=("prepare_s", "first"))
    return float((per["calls"] + per["prepare"].fillna(0.0)).median())


def first_recompile_reason(novel: pd.DataFrame) -> str:
    """The reason given for the first compile after the job's first shape."""
    for _, r in novel.sort_values("shape_index").iterrows():
        delta = r["compile_delta"]
        if r["shape_index"] == novel["shape_index"].min() or not isinstance(delta, dict) or not sum(delta.values()):
            continue
        reasons = r["compile_reasons"]
        return f"shape {int(r['shape_index'])}: " + (reasons[0] if isinstance(reasons, list) and reasons else "(no reason given)")
    return ""


def mode_note(backend: str, mode: str) -> str:
    """The label a registered backend gives ``mode`` (``Backend.mode_notes``), if any."""
    b = _registered().get(backend)
    return getattr(b, "mode_notes", {}).get(mode, "") if b is not None else ""


def _registered() -> dict:
    try:
        from . import registry

        return registry.backends()
    except Exception:  # a report reads records; an unusable registry only loses the labels
        return {}


def counters_table(backends) -> str:
    """Markdown: per backend and compile stage, whether the count is the
    system's own counter or ours, and the event it counts."""
    from backends.base import SOURCES

    reg = _registered()
    lines = ["| backend | stage | source | counts |", "|---|---|---|---|"]
    for name in backends:
        for stage, c in getattr(reg.get(name), "counters", {}).items():
            lines.append(f"| {name} | {stage} | {c.source} | {c.event} |")
    if len(lines) == 2:
        return ""
    legend = "; ".join(f"**{k}**: {v}" for k, v in SOURCES.items())
    return "\n".join(lines) + "\n\nSources: " + legend + "."


def job_by(rows: pd.DataFrame) -> list[str]:
    """The columns beyond (case, backend, mode) that tell a summary's jobs apart: ``run_id``
    and ``host`` where the summary has them (several runs, several machines)."""
    return [k for k in ("run_id", "host") if k in rows.columns]


def verdicts(df: pd.DataFrame, rules=None, by=None) -> dict:
    """Each job's :class:`harness.expectations.Verdict` (the gate's own judgement), keyed
    by (case, backend, mode) plus the ``by`` columns (default: ``run_id`` when ``df`` holds
    several runs; ``host`` is each record's machine host)."""
    from . import expectations

    rules = expectations.load() if rules is None else rules
    by = (["run_id"] if df["run_id"].nunique() > 1 else []) if by is None else list(by)
    if "host" in by:
        df = df.assign(host=df["machine"].map(lambda m: m.get("host", "?") if isinstance(m, dict) else m))
    keys = KEYS + by
    return {k if isinstance(k, tuple) else (k,): expectations.verdict(g.to_dict("records"), expectations.lookup(rules, *k[:3]))
            for k, g in df.groupby(keys, sort=False, dropna=False)}


def annotate(rows: pd.DataFrame, df: pd.DataFrame, rules=None, judged=None) -> pd.DataFrame:
    """Add ``expected``: what ``cases/expectations.toml`` says of each job,
    judged on the job's records by :func:`harness.expectations.verdict` (the
    gate's own judgement): ``= counts`` when it conforms, ``≠ counts: the
    first problem`` when it does not, ``xfail: reason`` for an expected failure.
    ``judged``: from :func:`verdicts` with ``by=job_by(rows)``, when the caller has them already."""
    by = job_by(rows)
    judged = verdicts(df, rules, by) if judged is None else judged
    keys = KEYS + by
    out = rows.copy()
    out["expected"] = [judged[tuple(r[k] for k in keys)].note for _, r in out.iterrows()]
    return out[[c for c in NAMES + ["run_id", "host"] if c in out.columns]]


def _relative(out: pd.DataFrame) -> pd.DataFrame:
    """``*_vs_eager``: against torch eager of the same case, run and machine
    (``frames.relative``)."""
    from . import frames

    rel = frames.relative(out.rename(columns={"host": "machine"})).rename(columns={"machine": "host"})
    rel[["novel_vs_eager", "cached_vs_eager"]] = rel[["novel_vs_eager", "cached_vs_eager"]].astype(object).where(
        rel[["novel_vs_eager", "cached_vs_eager"]].notna(), None)
    return rel[[c for c in NAMES + ["run_id", "host"] if c in rel.columns]]


def _ratio(a, b):
    if a is None or b is None or _nan(a) or _nan(b) or b == 0:
        return None
    return float(a) / float(b)


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _int(x):
    return None if x is None or _nan(x) else int(x)


def _max(series):
    vals = [float(v) for v in series.dropna()]
    return max(vals) if vals else None


def _stages(stages) -> str:
    if not isinstance(stages, dict) or not stages:
        return ""
    return " ".join(f"{k}={v}" for k, v in stages.items())


def _times(times) -> str:
    if not isinstance(times, dict) or not times:
        return ""
    return " ".join(f"{k}={fmt_seconds(v)}" for k, v in times.items())


def _last_dict(series) -> dict | None:
    vals = [v for v in series if isinstance(v, dict)]
    return vals[-1] if vals else None


def _first(series):
    vals = [float(v) for v in series.dropna()]
    return vals[0] if vals else None


# -- formatting --------------------------------------------------------------

def fmt_seconds(x) -> str:
    if x is None or _nan(x):
        return "–"
    x = float(x)
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.1f} µs"


def markdown(rows: pd.DataFrame, counters: bool = True) -> str:
    """Measured jobs as a table; jobs not run are summarised below it, one
    line per backend and reason; then (``counters``) what each backend's
    compile count counts."""
    ran = rows[~rows["status"].isin(["unsupported", "skipped"])]
    cols = [c for c in NAMES + ["run_id", "host"] if c in rows.columns and c != "message"] + ["message"]
    lines = [_table(ran, cols)] if len(ran) else ["(no measured jobs)"]
    idle = rows[rows["status"].isin(["unsupported", "skipped"])]
    if len(idle):
        lines += ["", f"Not run ({len(idle)}):"]
        groups: dict = {}
        for _, r in idle.iterrows():
            reason = str(r["message"]).replace(f"case {r['case']} ", "the case ")
            groups.setdefault((r["backend"], r["status"], reason), []).append(f"{r['case']}[{r['mode']}]")
        for (backend, status, reason), jobs in groups.items():
            lines.append(f"- {backend}, {status}: {reason}: {', '.join(jobs)}")
    table = counters_table(dict.fromkeys(ran["backend"])) if counters else ""
    if table:
        lines += ["", "Compile counters:", "", table]
    return "\n".join(lines)


def select(rows: pd.DataFrame, cases=None, backends=None, modes=None) -> pd.DataFrame:
    """Rows whose case, backend and mode match the comma-separated globs
    (``cases.match_globs``: a glob matching no row raises ``CaseError``)."""
    from cases import match_globs

    keep = {}
    for col, globs in (("case", cases), ("backend", backends), ("mode", modes)):
        keep[col] = set(match_globs(list(dict.fromkeys(rows[col])), globs, col))
    mask = rows["case"].isin(keep["case"]) & rows["backend"].isin(keep["backend"]) & rows["mode"].isin(keep["mode"])
    return rows[mask]


def _table(df: pd.DataFrame, cols) -> str:
    return table(df, [BY_NAME.get(c) or Column(c, c, text=True) for c in cols])


def table(df: pd.DataFrame, columns: list[Column]) -> str:
    """A Markdown table of ``df``'s rows in ``columns`` (missing values: –)."""
    head = "| " + " | ".join(c.header for c in columns) + " |"
    sep = "|" + "|".join("---" if c.text else "---:" for c in columns) + "|"
    body = ["| " + " | ".join("–" if _missing(r[c.name]) else c.fmt(r[c.name]) for c in columns) + " |"
            for _, r in df.iterrows()]
    return "\n".join([head, sep, *body])


def _missing(v) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or _nan(v)


def per_shape_markdown(shapes: pd.DataFrame) -> str:
    """:func:`per_shape` as Markdown: sizes, first call, compiles (and per stage), reason, cached call."""
    sizes = [c for c in shapes.columns if c.startswith("size_") and shapes[c].notna().any()]
    stages = [c for c in shapes.columns if c.startswith("new_compiles_") and shapes[c].notna().any()]
    many = shapes[["run_id", "machine"]].drop_duplicates().shape[0] > 1
    cols = ([Column("run_id", "run", text=True), Column("machine", "machine", text=True)] if many else []) + [
        BY_NAME["backend"], BY_NAME["mode"], Column("shape_index", "shape", str),
        *[Column(c, c[5:], str) for c in sizes],
        Column("first_call_s", "first call", fmt_seconds), Column("new_compiles", "compiles", str),
        *[Column(c, c[len("new_compiles_"):], str) for c in stages],
        Column("cached_s", "cached call", fmt_seconds), Column("status", "status", str, text=True),
        Column("reason", "reason", _clip(80), text=True)]
    return table(shapes, cols) if len(shapes) else "(no novel shapes measured)"
