"""Summaries of results: one row per (case, backend, mode), as a DataFrame,
Markdown and CSV."""

from __future__ import annotations

import math

import pandas as pd

KEYS = ["case", "backend", "mode"]
BASELINE = "torch_eager"

#: worst first: a job's status is the worst of its records
SEVERITY = ["crashed", "timeout", "error", "mismatch", "skipped", "unsupported", "pass"]

COLUMNS = [
    "case", "backend", "mode", "status", "expected", "shapes", "compiles", "compiles_per_shape", "stages",
    "novel_sweep_s", "cached_median_s", "novel_vs_eager", "cached_vs_eager", "max_abs_err", "max_rel_err",
    "message",
]


def _worst(statuses) -> str:
    present = set(statuses)
    for s in SEVERITY:
        if s in present:
            return s
    return "unknown"


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, backend, mode) (per run, if ``df`` holds several).

    ``compiles`` is the last cumulative count of the job; ``novel_sweep_s`` the
    sum of first-call latencies; ``cached_median_s`` the median over shapes of
    the cached medians; ``*_vs_eager`` divide by torch_eager's figure for the
    same case (same mode where it ran, else any mode): >1 is slower.
    """
    keys = KEYS + (["run_id"] if df["run_id"].nunique() > 1 else [])
    rows = []
    for key, g in df.groupby(keys, sort=True, dropna=False):
        key = dict(zip(keys, key))
        novel = g[g["novel"] == True]  # noqa: E712 (None for job-level records)
        cached = g[(g["novel"] == False) & (g["status"] == "pass")]  # noqa: E712
        last = g.iloc[-1]
        shapes = int(novel["shape_index"].nunique()) if len(novel) else 0
        compiles = _int(last["compiles"])
        timed = novel[novel["latency_s"].notna()]
        messages = [m for m in g.loc[g["status"] != "pass", "message"].dropna()]
        rows.append({
            **key,
            "status": _worst(g["status"]),
            "shapes": shapes,
            "compiles": compiles,
            "compiles_per_shape": (compiles / shapes) if (shapes and compiles is not None) else None,
            "stages": _stages(last["compile_stages"]),
            "novel_sweep_s": float(timed["latency_s"].sum()) if len(timed) else None,
            "cached_median_s": float(cached["cached_latency_s"].median()) if len(cached) else None,
            "max_abs_err": _max(g["max_abs_err"]),
            "max_rel_err": _max(g["max_rel_err"]),
            "message": messages[0] if messages else "",
        })
    out = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("novel_vs_eager", "cached_vs_eager", "expected")] + (["run_id"] if "run_id" in keys else []))
    return _relative(out)


def annotate(summary: pd.DataFrame, rules=None) -> pd.DataFrame:
    """Add ``expected``: what ``cases/expectations.toml`` says of each row —
    ``=`` / ``≠`` the compile formula for passing rows, ``xfail: reason`` for
    an expected failure, ``unexpected`` for a failure the file does not expect."""
    from . import expectations

    rules = expectations.load() if rules is None else rules
    out = summary.copy()
    notes = []
    for _, r in out.iterrows():
        rule = expectations.lookup(rules, r["case"], r["backend"], r["mode"])
        if r["status"] in ("unsupported", "skipped"):
            notes.append("")
        elif rule is None:
            notes.append("no rule")
        elif rule.xfail:
            notes.append(f"xfail: {rule.xfail}" if r["status"] != "pass" else "xpass: update expectations")
        elif r["status"] != "pass":
            notes.append("unexpected")
        elif r["compiles"] is None or not r["shapes"]:
            notes.append("")
        else:
            want = expectations.evaluate(rule.compiles, int(r["shapes"]))
            notes.append(f"{'=' if want == r['compiles'] else '≠'} {rule.compiles}")
    out["expected"] = notes
    return out[[c for c in COLUMNS + ["run_id"] if c in out.columns]]


def _relative(out: pd.DataFrame) -> pd.DataFrame:
    out["novel_vs_eager"] = None
    out["cached_vs_eager"] = None
    base = out[out["backend"] == BASELINE]
    for i, row in out.iterrows():
        b = base[base["case"] == row["case"]]
        same = b[b["mode"] == row["mode"]]
        b = same if len(same) else b
        if not len(b):
            continue
        b = b.iloc[0]
        out.at[i, "novel_vs_eager"] = _ratio(row["novel_sweep_s"], b["novel_sweep_s"])
        out.at[i, "cached_vs_eager"] = _ratio(row["cached_median_s"], b["cached_median_s"])
    return out[[c for c in COLUMNS + ["run_id"] if c in out.columns]]


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


# -- formatting --------------------------------------------------------------

HEADERS = {
    "case": "case", "backend": "backend", "mode": "mode", "status": "status", "shapes": "shapes",
    "compiles": "compiles", "compiles_per_shape": "compiles/shape", "stages": "stages",
    "novel_sweep_s": "novel sweep", "cached_median_s": "cached call", "novel_vs_eager": "novel ×eager",
    "cached_vs_eager": "cached ×eager", "max_abs_err": "max abs err", "max_rel_err": "max rel err",
    "message": "note", "run_id": "run", "expected": "expected",
}


def fmt_seconds(x) -> str:
    if x is None or _nan(x):
        return "–"
    x = float(x)
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.1f} µs"


def _fmt(col, v) -> str:
    if v is None or _nan(v):
        return "–"
    if col in ("novel_sweep_s", "cached_median_s"):
        return fmt_seconds(v)
    if col in ("novel_vs_eager", "cached_vs_eager"):
        return f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"
    if col in ("compiles", "shapes"):
        return str(int(v))
    if col == "compiles_per_shape":
        return f"{v:.2f}"
    if col in ("max_abs_err", "max_rel_err"):
        return f"{v:.1e}"
    if col == "expected":
        s = str(v)
        return s if len(s) <= 60 else s[:57] + "…"
    if col == "message":
        s = str(v).replace("|", "\\|").replace("\n", " ")
        return s if len(s) <= 90 else s[:87] + "…"
    return str(v)


def markdown(summary: pd.DataFrame) -> str:
    """Measured jobs as a table; jobs not run are summarised below it, one
    line per backend and reason."""
    ran = summary[~summary["status"].isin(["unsupported", "skipped"])]
    cols = [c for c in COLUMNS + ["run_id"] if c in summary.columns and c != "message"] + ["message"]
    lines = [_table(ran, cols)] if len(ran) else ["(no measured jobs)"]
    idle = summary[summary["status"].isin(["unsupported", "skipped"])]
    if len(idle):
        lines += ["", f"Not run ({len(idle)}):"]
        groups: dict = {}
        for _, r in idle.iterrows():
            reason = str(r["message"]).replace(f"case {r['case']} ", "the case ")
            groups.setdefault((r["backend"], r["status"], reason), []).append(f"{r['case']}[{r['mode']}]")
        for (backend, status, reason), jobs in groups.items():
            lines.append(f"- {backend}, {status}: {reason}: {', '.join(jobs)}")
    return "\n".join(lines)


def select(summary: pd.DataFrame, cases=None, backends=None, modes=None) -> pd.DataFrame:
    """Rows whose case, backend and mode match the comma-separated globs
    (``cases.match_globs``: a glob matching no row raises ``CaseError``)."""
    from cases import match_globs

    keep = {}
    for col, globs in (("case", cases), ("backend", backends), ("mode", modes)):
        keep[col] = set(match_globs(list(dict.fromkeys(summary[col])), globs, col))
    mask = summary["case"].isin(keep["case"]) & summary["backend"].isin(keep["backend"]) & summary["mode"].isin(keep["mode"])
    return summary[mask]


def _table(df: pd.DataFrame, cols) -> str:
    head = "| " + " | ".join(HEADERS.get(c, c) for c in cols) + " |"
    sep = "|" + "|".join("---" if c in ("case", "backend", "mode", "status", "expected", "stages", "message") else "---:" for c in cols) + "|"
    body = ["| " + " | ".join(_fmt(c, r[c]) for c in cols) + " |" for _, r in df.iterrows()]
    return "\n".join([head, sep, *body])
