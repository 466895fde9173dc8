"""History per row: each (backend, mode)'s pass rate and compile counts by commit
(``harness history --rows``), and what changed from the commit before.

:func:`harness.history.history` has one row per job and commit; a zoo run
has hundreds of jobs a row, so a regression is a count that moved: per
machine, backend, mode (and release environment) and commit, the jobs that
ran, how many passed, how many of those compiled nothing after their first
novel shape (``once``, the leaderboard's "compiled once"), the compiles over all of them, and the change of each from
the previous commit of the same row, with the jobs whose status changed.
"""

from __future__ import annotations

import pandas as pd

#: statuses of jobs that did not run (not counted)
IDLE = ("skipped", "unsupported")
KEYS = ["machine", "backend", "mode", "env"]
COLUMNS = [*KEYS, "commit", "timestamp", "jobs", "passed", "once", "compiles", "d_passed", "d_once", "d_compiles", "changed"]


def _once(by_shape) -> bool:
    """Nothing compiled after the first novel shape (``compiles_by_shape``: per novel shape)."""
    return isinstance(by_shape, tuple) and len(by_shape) >= 2 and sum(by_shape[1:]) == 0


def rows(hist: pd.DataFrame) -> pd.DataFrame:
    """:data:`COLUMNS` from :func:`harness.history.history`'s frame (its harness rows), oldest commit first."""
    h = hist[(hist["source"] == "harness") & ~hist["status"].astype(str).isin(IDLE)]
    out = []
    for key, g in h.groupby(KEYS, dropna=False, sort=True):
        prev = None
        commits = g.groupby("commit", sort=False)["timestamp"].max().sort_values()
        for commit in commits.index:
            c = g[g["commit"] == commit]
            status = dict(zip(c["case"], c["status"].astype(str), strict=False))
            row = {
                **dict(zip(KEYS, key, strict=False)),
                "commit": commit,
                "timestamp": commits[commit],
                "jobs": len(c),
                "passed": int((c["status"].astype(str) == "pass").sum()),
                "once": int((c["compiles_by_shape"].map(_once) & (c["status"].astype(str) == "pass")).sum()),
                "compiles": int(pd.to_numeric(c["compiles"], errors="coerce").fillna(0).sum()),
            }
            if prev is not None:
                for k in ("passed", "once", "compiles"):
                    row[f"d_{k}"] = row[k] - prev[0][k]
                moved = sorted(
                    f"{case} {prev[1][case]}→{s}" for case, s in status.items() if case in prev[1] and prev[1][case] != s
                )
                row["changed"] = "; ".join(moved[:8]) + (f" (+{len(moved) - 8})" if len(moved) > 8 else "")
            out.append(row)
            prev = (row, status)
    return pd.DataFrame(out, columns=COLUMNS)


def markdown(frame: pd.DataFrame) -> str:
    """The rows as Markdown: counts with their change from the commit before (``+2``, ``-1``)."""

    def d(v) -> str:
        return "" if v is None or v != v or v == 0 else f" ({int(v):+d})"

    lines = [
        "| machine | backend | mode | commit | date | jobs | passed | once | compiles | status changes |",
        "|---|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in frame.to_dict("records"):
        env = f"@{r['env']}" if isinstance(r["env"], str) and r["env"] not in ("main",) else ""
        when = r["timestamp"].strftime("%Y-%m-%d %H:%M") if hasattr(r["timestamp"], "strftime") else "-"
        lines.append(
            f"| {r['machine']} | {r['backend']}{env} | {r['mode']} | {str(r['commit'])[:10]} | {when} | {r['jobs']} | "
            f"{r['passed']}{d(r['d_passed'])} | {r['once']}{d(r['d_once'])} | {r['compiles']}{d(r['d_compiles'])} | "
            f"{r['changed'] if isinstance(r['changed'], str) else ''} |"
        )
    return "\n".join(lines)
