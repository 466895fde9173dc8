"""Compare two runs: compile deltas and latency ratios, with a verdict.

A run is named by a JSONL file, a directory, a run id in the results
directory, or a commit (prefix): the latest run recorded at that commit.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import report, results


def resolve(name: str, results_dir: str = "results") -> Path:
    """The JSONL file that ``name`` designates (see module doc)."""
    p = Path(name)
    if p.is_file():
        return p
    if p.is_dir():
        latest = results.latest_run(p)
        if latest is None:
            raise results.ResultsError(f"no runs in {p}/")
        return latest
    by_id = Path(results_dir) / f"{name}.jsonl"
    if by_id.is_file():
        return by_id
    matches = []
    for f in Path(results_dir).glob("*.jsonl"):
        with open(f, encoding="utf-8") as fh:
            first = fh.readline()
        if first and f'"commit": "{name}' in first:
            matches.append(f)
    if matches:
        return max(matches, key=lambda f: (f.stat().st_mtime, f.name))
    raise results.ResultsError(f"{name!r} is neither a results file, a directory, a run id nor a commit with runs in {results_dir}/")


def compare(a: pd.DataFrame, b: pd.DataFrame, max_slowdown: float = 1.5) -> pd.DataFrame:
    """Per (case, backend, mode) in both runs: compiles and latencies of A and B,
    the B/A ratios, and ``verdict`` (``ok``, ``more compiles``, ``slower``,
    ``fewer compiles``, ``faster``, ``status changed``)."""
    sa, sb = report.summarise(a), report.summarise(b)
    m = sa.merge(sb, on=report.KEYS, suffixes=("_a", "_b"))
    rows = []
    for _, r in m.iterrows():
        novel = report._ratio(r["novel_sweep_s_b"], r["novel_sweep_s_a"])
        cached = report._ratio(r["cached_median_s_b"], r["cached_median_s_a"])
        ca, cb = r["compiles_a"], r["compiles_b"]
        delta = None if ca is None or cb is None or report._nan(ca) or report._nan(cb) else int(cb) - int(ca)
        verdicts = []
        if r["status_a"] == "pass" and r["status_b"] != "pass":
            verdicts.append(f"status {r['status_a']}→{r['status_b']}")
        if delta is not None and delta > 0:
            verdicts.append("more compiles")
        if (novel is not None and novel > max_slowdown) or (cached is not None and cached > max_slowdown):
            verdicts.append("slower")
        regress = bool(verdicts)
        if not verdicts:
            if delta is not None and delta < 0:
                verdicts.append("fewer compiles")
            if (novel is not None and novel < 1 / max_slowdown) or (cached is not None and cached < 1 / max_slowdown):
                verdicts.append("faster")
        rows.append({
            "case": r["case"], "backend": r["backend"], "mode": r["mode"],
            "compiles_a": ca, "compiles_b": cb, "compile_delta": delta,
            "novel_a": r["novel_sweep_s_a"], "novel_b": r["novel_sweep_s_b"], "novel_ratio": novel,
            "cached_a": r["cached_median_s_a"], "cached_b": r["cached_median_s_b"], "cached_ratio": cached,
            "status_a": r["status_a"], "status_b": r["status_b"],
            "verdict": ", ".join(verdicts) or "ok", "regression": regress,
        })
    return pd.DataFrame(rows)


#: the comparison's columns, in the report's column model
COLUMNS = [
    report.BY_NAME["case"], report.BY_NAME["backend"], report.BY_NAME["mode"],
    report.Column("compiles_a", "compiles A", report.BY_NAME["compiles"].fmt),
    report.Column("compiles_b", "compiles B", report.BY_NAME["compiles"].fmt),
    report.Column("novel_ratio", "novel B/A", lambda v: f"{v:.2f}×"),
    report.Column("cached_ratio", "cached B/A", lambda v: f"{v:.2f}×"),
    report.Column("verdict", "verdict", text=True),
]


def markdown(df: pd.DataFrame) -> str:
    if not len(df):
        return "(no (case, backend, mode) in both runs)"
    return report.table(df, COLUMNS)
