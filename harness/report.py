"""Summaries of results: one row per (case, backend, mode), as Markdown and CSV.

The summary itself is computed once, by :func:`harness.frames.summary`
(pandas); its columns, their headers, units and legend are
:data:`harness.columns.COLUMNS`. This module writes it as Markdown (the
``harness report`` table), chooses the CSV's columns, and adds the gate's
judgement (``expected``). The pandas views (:func:`summary`, one row per job in
the report's column order; :func:`per_shape`,
:func:`conformance_matrix`, :func:`history`, :func:`jobs`) are re-exported here.
"""

from __future__ import annotations

import pandas as pd

from . import columns, frames
from .columns import Column, fmt_seconds  # noqa: F401 (the column model, for compare and history)
from .frames import (  # noqa: F401 (the pandas API)
    BASELINE,
    JOB,
    compile_patterns,
    conformance_matrix,
    family_table,
    history,
    jobs,
    mode_note,
    per_shape,
    summary,
    verdicts,
)

#: a job's key beyond its run and machine
KEYS = JOB
BY_NAME = columns.by_name()
NAMES = [c.name for c in columns.COLUMNS]


#: the old name of :func:`summary` (which now gives the report's column order itself)
summarise = summary


def counters_table(backends) -> str:
    """Markdown: per backend and compile stage, whether the count is the
    system's own counter or ours, and the event it counts."""
    from backends.base import SOURCES

    reg = frames._registered()
    lines = ["| backend | stage | source | counts |", "|---|---|---|---|"]
    for name in backends:
        b = reg.get(name)
        for stage, c in (b.counters if b is not None else {}).items():
            lines.append(f"| {name} | {stage} | {c.source} | {c.event} |")
    if len(lines) == 2:
        return ""
    legend = "; ".join(f"**{k}**: {v}" for k, v in SOURCES.items())
    return "\n".join(lines) + "\n\nSources: " + legend + "."


def job_by(rows: pd.DataFrame) -> list[str]:
    """The columns beyond (case, backend, mode) that tell a summary's jobs apart: ``run_id``
    and ``machine`` where they vary (several runs, several machines), ``env`` where the
    summary has it (a run over several releases: ``harness run --versions``)."""
    by = [k for k in ("run_id", "machine") if k in rows.columns and rows[k].nunique(dropna=False) > 1]
    return by + (["env"] if "env" in rows.columns else [])


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
    out["expected"] = [judged[k].note for k in zip(*(out[k] for k in keys), strict=True)]
    return out[frames.order(out.columns)]


# -- formatting --------------------------------------------------------------


def markdown(rows: pd.DataFrame, counters: bool = True) -> str:
    """Measured jobs as a table (:func:`harness.columns.shown`: the run and
    machine only where they vary; human units; each median with its
    dispersion) and its legend; jobs not run are summarised below it, one
    line per backend and reason; then (``counters``) what each backend's
    compile count counts."""
    ran = rows[~rows["status"].isin(columns.IDLE)]
    cols = columns.shown(ran)
    cols = [c for c in cols if c.name != "message"] + [c for c in cols if c.name == "message"]
    lines = [table(ran, cols), "", "Columns: " + columns.legend(cols) + "."] if len(ran) else ["(no measured jobs)"]
    ours = ran[ran["status"].astype(str) == "crash"]
    if len(ours):  # bugs of our engines, apart from the systems' failures
        lines += ["", f"Our engines crashed ({len(ours)}; a bug of ours, not the system's):"]
        lines += [f"- {r['case']}[{r['backend']}-{r['mode']}]: {r['message']}" for _, r in ours.iterrows()]
    idle = rows[rows["status"].isin(columns.IDLE)]
    if len(idle):
        lines += ["", f"Not run ({len(idle)}):"]
        groups: dict = {}
        for _, r in idle.iterrows():
            reason = str(r["message"]).replace(f"case {r['case']} ", "the case ")
            groups.setdefault((r["backend"], r["status"], reason), []).append(f"{r['case']}[{r['mode']}]")
        for (backend, status, reason), jobs in groups.items():
            lines.append(f"- {backend}, {status}: {reason}: {', '.join(jobs)}")
    table_ = counters_table(dict.fromkeys(ran["backend"])) if counters else ""
    if table_:
        lines += ["", "Compile counters:", "", table_]
    return "\n".join(lines)


#: the verdicts' outcomes, in the order the run's summary counts them
OUTCOMES = ("pass", "xfail", "fail", "xpass", "norule", "idle")


def run_summary(rows: pd.DataFrame, verdicts: dict, run: str, files: dict[str, object]) -> str:
    """What ``harness run`` prints at its end: a few lines, whatever the size of
    the run. The jobs by status, by the gate's outcome, the jobs not run (their
    reasons are in the full report), then where the full report is (``files``:
    label → path, e.g. the HTML report and the CSV). The unexpected jobs are
    listed after it, one line each, by the CLI's gate (``cli._unexpected``)."""
    from . import results

    idle = rows[rows["status"].isin(columns.IDLE)]
    ran = rows[~rows["status"].isin(columns.IDLE)]
    status = ran["status"].astype(str).value_counts()
    order = [s for s in reversed(results.SEVERITY) if s in status.index]
    outcome = pd.Series([v.outcome for v in verdicts.values() if v.outcome != "idle"], dtype=object).value_counts()
    bad = int(sum(outcome.get(o, 0) for o in ("fail", "xpass", "norule")))
    lines = [
        f"{len(ran)} jobs ran: " + (", ".join(f"{int(status[s])} {s}" for s in order) or "none"),
        "by expectation: "
        + ", ".join(f"{int(outcome[o])} {o}" for o in OUTCOMES if o in outcome.index)
        + (f" ({bad} unexpected: listed below)" if bad else " (none unexpected)"),
    ]
    if len(idle):
        lines.append(f"planned, not run: {len(idle)} ({_not_run_reasons(idle)}); the reasons: dynshape report {run}")
    lines.append(f"the full table: dynshape report {run}")
    lines += [f"{label}: {path}" for label, path in files.items()]
    return "\n".join(lines)


#: the classes of a planned job that did not run, by the start of its reason (the profile's,
#: the registry's, the environment's); anything else is counted by its status
_NOT_RUN = (
    ("left out by the profile", ("left out of the",)),  # harness.profiles.left_out's words
    ("opt-in backend", ("is opt-in",)),
    ("model libraries missing", ("needs its model libraries",)),
)


def _not_run_reasons(idle: pd.DataFrame) -> str:
    """``"20 no such mode, 15 left out by the profile, …"``: planned jobs that did not run, by reason class."""
    counts: dict[str, int] = {}
    for status, message in zip(idle["status"].astype(str), idle["message"].astype(str), strict=True):
        label = (
            "no such mode"
            if status == "unsupported"
            else next((name for name, marks in _NOT_RUN if any(m in message for m in marks)), "unavailable here")
        )
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n:,} {label}" for label, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def csv_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The summary as the CSV keeps it: the jobs that ran (a quick run plans ~43,000,
    runs ~600: the rest are counted by reason in the run's summary and its JSONL), every
    column, seconds as raw floats in columns named ``*_s``, text as is."""
    ran = rows[~rows["status"].astype(str).isin(columns.IDLE)] if "status" in rows else rows
    return ran[frames.order(ran.columns)]


def select(rows: pd.DataFrame, cases=None, backends=None, modes=None) -> pd.DataFrame:
    """Rows whose case, backend and mode match the comma-separated globs
    (``cases.match_globs``: a glob matching no row raises ``CaseError``)."""
    from cases import match_globs

    keep = {}
    for col, globs in (("case", cases), ("backend", backends), ("mode", modes)):
        keep[col] = set(match_globs(list(dict.fromkeys(rows[col])), globs, col))
    mask = rows["case"].isin(keep["case"]) & rows["backend"].isin(keep["backend"]) & rows["mode"].isin(keep["mode"])
    return rows[mask]


def table(df: pd.DataFrame, cols: list[Column]) -> str:
    """A Markdown table of ``df``'s rows in ``cols`` (:func:`harness.columns.cell`
    writes each value: units, dispersion, ``–`` or why it is missing)."""
    head = "| " + " | ".join(c.header for c in cols) + " |"
    sep = "|" + "|".join("---" if c.text else "---:" for c in cols) + "|"
    body = ["| " + " | ".join(columns.cell(c, r).replace("|", "\\|") for c in cols) + " |" for r in df.to_dict("records")]
    return "\n".join([head, sep, *body])


def per_shape_markdown(shapes: pd.DataFrame) -> str:
    """:func:`per_shape` as Markdown: sizes, first call (min–max over processes),
    compiles (and per stage), reason, cached call (IQR)."""
    sizes = [c for c in shapes.columns if c.startswith("size_") and shapes[c].notna().any()]
    stages = [c for c in shapes.columns if c.startswith("new_compiles_") and shapes[c].notna().any()]
    runs = [c for c in columns.RUN_COLUMNS if c.name in shapes.columns and shapes[c.name].nunique(dropna=False) > 1]
    # a run over several releases (--versions): each row's environment
    cols = (
        runs
        + ([Column("env", "env")] if "env" in shapes.columns else [])
        + [
            BY_NAME["backend"],
            BY_NAME["mode"],
            Column("shape_index", "shape", "count"),
            *[Column(c, c[5:], "count") for c in sizes],
            Column("first_call_s", "first call", "seconds", spread=("first_call_min_s", "first_call_max_s")),
            Column("new_compiles", "compiles", "count"),
            *[Column(c, c[len("new_compiles_") :], "count") for c in stages],
            Column("cached_s", "cached call", "seconds", spread=("cached_q25_s", "cached_q75_s")),
            Column("status", "status"),
            Column("reason", "reason", width=80),
        ]
    )
    return table(shapes, cols) if len(shapes) else "(no novel shapes measured)"
