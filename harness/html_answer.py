"""The HTML report's first screen: per mode, who passes, who compiles once, at what cost.

A reader opens a report with one question: which stack carries my dynamic
shapes, at what cost? The leaderboard (:mod:`harness.leaderboard`) answers it
per (backend, mode); this screen lays it out per mode (the modes ask different
questions: a static row always compiles per shape), only the backends that ran,
each cell coloured as the conformance matrix colours a job, and each failing
row's jobs one click away (a list of them, linked to their cases).
"""

from __future__ import annotations

import html

import pandas as pd

from . import leaderboard
from .columns import IDLE

#: the modes in the order the screen shows them: the dynamic ones first
MODE_ORDER = ("unbounded", "bounded", "bucketed", "static")
#: a rate's colour: all, some, none (the matrix's pass, recompiled and error colours)
ALL, SOME, NONE, NA = "#c8e6c9", "#ffe082", "#ef9a9a", "#f5f5f5"
STYLE = """
div.answer{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
div.answer section h3{margin:0.2em 0;font-size:14px}
table.answer{border-collapse:collapse;font-size:12px}
table.answer td,table.answer th{border:1px solid #ccc;padding:2px 6px}
table.answer td.n{text-align:right;white-space:nowrap}
p.ran{font-size:13px}
"""


def _rate_colour(got: int, of: int) -> str:
    return NA if of == 0 else ALL if got == of else NONE if got == 0 else SOME


def _ratio(g) -> str:
    return "–" if g is None or pd.isna(g) else f"{leaderboard._num(g)}×"


def _failed(jobs: pd.DataFrame) -> pd.DataFrame:
    """The jobs that ran and did not pass."""
    status = jobs["status"].astype(str)
    return jobs[~status.isin(IDLE) & (status != "pass")]


def ran_line(jobs: pd.DataFrame) -> str:
    """One sentence: the jobs that ran by status, then the planned ones that did not, by reason class."""
    status = jobs["status"].astype(str)
    ran, idle = jobs[~status.isin(IDLE)], jobs[status.isin(IDLE)]
    by = ran["status"].astype(str).value_counts()
    text = f"{len(ran)} jobs ran: " + ", ".join(f"{n} {s}" for s, n in by.items())
    if len(idle):
        why = idle["status"].astype(str).value_counts()
        text += f". Planned and not run: {len(idle)} (" + ", ".join(f"{n} {s}" for s, n in why.items()) + ", reasons below)"
    return f"<p class=ran>{html.escape(text)}.</p>"


def answer_html(board: pd.DataFrame, jobs: pd.DataFrame) -> str:
    """Per mode, a table of the backends that ran: passed / run, compiled once
    (of the passing jobs), the novel sweep's and cached call's cost against
    eager, and a link to the failing jobs; then the list of failing jobs."""
    if not len(board):
        return "<p>(no job ran)</p>"
    failed = _failed(jobs)
    modes = sorted(board["mode"].unique(), key=lambda m: (MODE_ORDER.index(m) if m in MODE_ORDER else 99, m))
    sections = []
    for mode in modes:
        rows = board[(board["mode"] == mode) & (board["run"] > 0)]
        body = []
        for r in rows.to_dict("records"):
            key = f"{r['backend']}-{mode}"
            n_failed = int(((failed["backend"] == r["backend"]) & (failed["mode"] == mode)).sum())
            # a static row compiles per shape by its mode: compiled once is not its question
            once_colour = NA if mode == "static" else _rate_colour(r["once"], r["passed"])
            link = f'<a href="#fail-{html.escape(key)}">{n_failed} failed</a>' if n_failed else ""
            body.append(
                "<tr>"
                f"<th>{html.escape(str(r['backend']))}</th>"
                f'<td class=n style="background:{_rate_colour(r["passed"], r["run"])}">{r["passed"]}/{r["run"]}</td>'
                f'<td class=n style="background:{once_colour}">{r["once"]}/{r["passed"]}</td>'
                f"<td class=n>{_ratio(r['novel_vs_eager'])}</td><td class=n>{_ratio(r['cached_vs_eager'])}</td>"
                f"<td>{link}</td></tr>"
            )
        head = (
            "<tr><th>backend</th><th>passed / run</th><th>compiled once</th>"
            "<th>novel ×eager</th><th>cached ×eager</th><th></th></tr>"
        )
        sections.append(f"<section><h3>{html.escape(mode)}</h3><table class=answer>{head}{''.join(body)}</table></section>")
    out = [f"<div class=answer>{''.join(sections)}</div>", f"<p class=legend>{html.escape(leaderboard.LEGEND)}.</p>"]
    if len(failed):
        items = []
        for (backend, mode), g in failed.groupby(["backend", "mode"], sort=True, observed=True):
            jobs_ = "".join(
                f'<li><a href="#{html.escape(str(r["case"]))}">{html.escape(str(r["case"]))}</a>: '
                f"{html.escape(str(r['status']))}"
                + (
                    f" — {html.escape(str(r['message']).splitlines()[0][:300])}"
                    if isinstance(r["message"], str) and r["message"]
                    else ""
                )
                + "</li>"
                for r in g.to_dict("records")
            )
            items.append(
                f'<li id="fail-{html.escape(f"{backend}-{mode}")}">{html.escape(f"{backend}/{mode}")}<ul>{jobs_}</ul></li>'
            )
        out.append(f"<details id=failures><summary>Failing jobs ({len(failed)})</summary><ul>{''.join(items)}</ul></details>")
    return "\n".join(out)
