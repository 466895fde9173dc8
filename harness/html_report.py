"""``harness report --html``: one self-contained HTML file with plots.

Per case: the latency of every first call against the shape (one line per
backend/mode, log scale: compile spikes stand out; a band: min–max over
processes with ``run --processes``), the cached call against the shape (a
band: each shape's interquartile range), cumulative compiles against shapes
seen (a step plot), the cached call relative to torch eager of the same run
and machine, and the case's summary table (:mod:`harness.columns`: human
units, each median with its dispersion, ``–`` or why a value is missing). For the whole run: the conformance
matrix (case × backend/mode, coloured by status; the expectation and the first
recompile reason in each cell's note and tooltip), and, when the records span
several commits, compiles and latency by commit. Charts are inline SVG
(:mod:`harness.svg`: milliseconds each, a tooltip on every point), so the file
needs nothing else and renders offline.
"""

from __future__ import annotations

import html

import pandas as pd

from . import columns, executors, frames, html_answer, leaderboard, svg

COLOURS = {
    "pass": "#c8e6c9",
    "unsupported": "#eeeeee",
    "skipped": "#e0e0e0",
    "recompiled": "#ffe082",
    "mismatch": "#ffab91",
    "error": "#ef9a9a",
    "timeout": "#ce93d8",
    "crash": "#ff7043",  # our engines' bug: apart from the system's error
    "crashed": "#e57373",
    "out_of_range": "#fff59d",
}
OUTCOME_MARK = {"pass": "", "xfail": " (xfail)", "fail": " ≠", "xpass": " (xpass)", "norule": " (no rule)", "idle": ""}


def _release(keys: pd.DataFrame) -> pd.Series | str:
    """`` torch 2.9.1`` per row that ran in a release's environment (``run --versions``), else ``""``."""
    from backends.envs import release_label

    return (" " + keys["env"].map(release_label)).str.rstrip() if "env" in keys.columns else ""


def _label(keys: pd.DataFrame, many: bool) -> pd.Series:
    lab = keys["backend"] + "/" + keys["mode"] + _release(keys)
    return lab + " @" + keys["machine"] + " " + keys["run_id"].str[-6:] if many else lab


def _axis(s: pd.DataFrame) -> tuple[str, str]:
    """The x axis of a case's latency plots: the size of the one dim that
    grows when exactly one does (``size_e``: "e"), else the shape's index."""
    sizes = [c for c in s.columns if c.startswith("size_") and s[c].notna().any()]
    growing = [c for c in sizes if s[c].nunique() > 1]
    if len(growing) == 1:
        return growing[0], f"{growing[0][5:]} (novel shapes)"
    return "shape_index", "novel shape #" + (f" ({', '.join(c[5:] for c in growing)} grow)" if growing else "")


def _floats(v: pd.Series) -> list:
    return [None if columns.missing(x) else float(x) for x in v]


def _series(s: pd.DataFrame, x: str, y: str, band: tuple[str, str]) -> list[dict]:
    """One series per job (``label``) of ``y`` against ``x``, with its band."""
    out = []
    for label, g in s[s[y].notna()].groupby("label", sort=True):
        g = g.sort_values(x)
        out.append({"label": label, "x": _floats(g[x]), "y": _floats(g[y]), "lo": _floats(g[band[0]]), "hi": _floats(g[band[1]])})
    return out


def case_plots(case: str, shapes: pd.DataFrame, jobs: pd.DataFrame, many: bool) -> list[tuple[str, str]]:
    """``[(alt text, inline SVG)]``: the plots of one case."""
    out = []
    s = shapes[shapes["case"] == case].copy()
    s["label"] = _label(s, many)
    x, xlabel = _axis(s)
    integer = x == "shape_index" or x.startswith("size_")

    def latency(column: str, band: tuple[str, str], what: str, title: str, ylabel: str) -> None:
        if s[column].notna().any():
            alt = f"{case}: {what}"
            series = _series(s, x, column, band)
            chart = svg.lines(
                series,
                title=f"{case}: {title}",
                xlabel=xlabel,
                ylabel=ylabel,
                alt=alt,
                yfmt=columns.fmt_seconds,
                integer_x=integer,
            )
            out.append((alt, chart))

    latency(
        "first_call_s",
        ("first_call_min_s", "first_call_max_s"),
        "first-call latency per novel shape",
        "first call on each novel shape (compiles included)",
        "first call (log; band: min–max over processes)",
    )
    latency(
        "cached_s",
        ("cached_q25_s", "cached_q75_s"),
        "cached latency per shape with its IQR",
        "cached call on each shape",
        "cached call (log; band: IQR)",
    )
    if s["new_compiles"].notna().any():
        # jobs with the same steps share a line (else they hide each other): one per pattern
        steps: dict = {}
        for label, g in s.groupby("label", sort=True):
            g = g.sort_values("shape_index")
            total = (0, *g["new_compiles"].fillna(0).astype(int).cumsum())
            steps.setdefault(total, []).append(label)
        series = [
            {"label": _wrap(labels), "x": list(range(len(total))), "y": list(total)}
            for total, labels in sorted(steps.items(), key=lambda kv: -kv[0][-1])
        ]
        alt = f"{case}: cumulative compiles against shapes seen"
        out.append(
            (
                alt,
                svg.lines(
                    series,
                    title=f"{case}: compiles as novel shapes arrive",
                    xlabel="shapes seen",
                    ylabel="cumulative compiles",
                    alt=alt,
                    logy=False,
                    step=True,
                    integer_x=True,
                    integer_y=True,
                    yfmt=lambda v: f"{v:g}",
                    xfmt=lambda v: f"{v:g}",
                ),
            )
        )
    j = jobs[(jobs["case"] == case) & (jobs["cached_vs_eager"] > 0)].copy()
    if len(j):
        j["label"] = _label(j, many)
        j = j.sort_values("cached_vs_eager")
        alt = f"{case}: cached latency relative to torch eager"
        out.append(
            (
                alt,
                svg.bars(
                    list(j["label"]),
                    _floats(j["cached_vs_eager"]),
                    title=f"{case}: cached call relative to torch eager",
                    alt=alt,
                    xlabel="cached call ÷ torch eager (same run and machine; log)",
                    fmt=columns.fmt_ratio,
                ),
            )
        )
    return out


def _wrap(labels: list[str], width: int = 48) -> str:
    """Jobs sharing one compile staircase, as one legend entry (cut with … past ``width``)."""
    text = ", ".join(labels)
    return text if len(text) <= width else text[: width - 1] + f"… ({len(labels)} jobs)"


def history_plots(hist: pd.DataFrame) -> list[tuple[str, str]]:
    """Per case, compiles and novel sweep by commit (oldest left), one line per job."""
    out = []
    order = hist.groupby("commit")["timestamp"].min().sort_values()
    pos = {c: i for i, c in enumerate(order.index)}
    ticks = [(i, str(c)[:8]) for c, i in pos.items()]
    for case, h in hist.groupby("case"):
        compiles, sweeps = [], []
        for (machine, backend, mode), g in h.groupby(["machine", "backend", "mode"]):
            if g["compiles"].isna().all():
                continue
            lab = f"{backend}/{mode}" + (f" @{machine}" if h["machine"].nunique() > 1 else "")
            x = [float(pos[c]) for c in g["commit"]]
            compiles.append({"label": lab, "x": x, "y": _floats(g["compiles"])})
            sweeps.append({"label": lab, "x": x, "y": _floats(g["novel_sweep_s"])})
        alt = f"{case}: history by commit"
        out.append(
            (
                alt,
                svg.lines(
                    compiles,
                    title=f"{case}: compiles by commit",
                    xlabel="commit",
                    ylabel="compiles",
                    alt=alt,
                    logy=False,
                    integer_x=True,
                    integer_y=True,
                    xticks=ticks,
                    yfmt=lambda v: f"{v:g}",
                )
                + svg.lines(
                    sweeps,
                    title=f"{case}: novel sweep by commit",
                    xlabel="commit",
                    ylabel="novel sweep (log)",
                    alt=f"{case}: novel sweep by commit",
                    xticks=ticks,
                    integer_x=True,
                    yfmt=columns.fmt_seconds,
                ),
            )
        )
    return out


def matrix_html(jobs: pd.DataFrame) -> str:
    """The conformance matrix as an HTML table: a cell per job, coloured by status."""
    j = jobs.copy()
    j["col"] = j["backend"] + "/" + j["mode"] + _release(j)
    # a (backend, mode) column that no case of the run supports says nothing per case:
    # the leaderboard and the "not run" lines say why
    ran = ~j["status"].astype(str).isin(columns.IDLE)
    j = j[j["col"].isin(set(j.loc[ran, "col"]))] if ran.any() else j
    many = j[frames.RUN].drop_duplicates().shape[0] > 1
    j["row"] = j["case"] + (" @" + j["machine"] + " " + j["run_id"].str[-6:] if many else "")
    # likewise a case none of whose jobs ran (a quick run plans ~470 cases and runs ~40):
    # a row of grey cells; the count says it is left out, `dynshape report` says why
    rows = set(j.loc[ran.reindex(j.index), "row"])
    idle_rows = len(set(j["row"]) - rows) if rows else 0
    j = j[j["row"].isin(rows)] if rows else j
    cols = sorted(j["col"].unique())
    head = "<tr><th>case</th>" + "".join(f"<th class=rot><div>{html.escape(c)}</div></th>" for c in cols) + "</tr>"
    cells = {(r["row"], r["col"]): r for r in j.to_dict("records")}
    body = []
    for row in sorted(j["row"].unique()):
        tds = []
        for c in cols:
            r = cells.get((row, c))
            if r is None:
                tds.append("<td class=none></td>")
                continue
            status = str(r["status"])
            note = "; ".join(x for x in (r["expected"], r["why"]) if x)
            tip = html.escape(f"{c} on {r['case']}: {status}" + (f" — {note}" if note else ""), quote=True)
            mark = OUTCOME_MARK.get(r["outcome"], "")
            count = "" if status in columns.IDLE or pd.isna(r["compiles"]) else f"{int(r['compiles'])} compiles"
            # e.g. "50 compiles; = 1/shape; shape 1"
            cell = "; ".join(x for x in (count, r["expected"], r["why"].split(":")[0]) if x)
            small = f"<small>{html.escape(_clip(cell, 40))}</small>" if cell else ""
            tds.append(
                f'<td style="background:{COLOURS.get(status, "#fff")}" title="{tip}">{html.escape(status + mark)}{small}</td>'
            )
        body.append(f"<tr><th>{html.escape(row)}</th>{''.join(tds)}</tr>")
    legend = " ".join(f'<span class=key style="background:{v}">{k}</span>' for k, v in COLOURS.items())
    cases = f"{idle_rows} case" + ("s" if idle_rows > 1 else "")
    left = f"<p class=legend>Left out: {cases} none of whose jobs ran (planned, not run).</p>" if idle_rows else ""
    return f"<p>{legend}</p><table class=matrix>{head}{''.join(body)}</table>{left}"


#: the per-case table leaves out what its heading and the matrix already say
_CASE_TABLE_DROPS = ("case", "message")


def summary_html(rows: pd.DataFrame, legend: bool = True) -> str:
    """Summary rows as an HTML table in the report's columns
    (:func:`harness.columns.shown`, each cell written by :func:`harness.columns.cell`:
    units, dispersion, ``–`` or why a value is missing); a missing value's
    reason is also its tooltip."""
    cols = [c for c in columns.shown(rows) if c.name not in _CASE_TABLE_DROPS]
    head = "".join(f'<th title="{html.escape(c.legend, quote=True)}">{html.escape(c.header)}</th>' for c in cols)
    body = []
    for r in rows.to_dict("records"):
        tds = []
        for c in cols:
            text = columns.cell(c, r)
            cls = "t" if c.text else "n"
            full = r.get(c.name)
            # a clipped text's whole, or a missing value's reason, as the cell's tooltip
            tip = (
                full
                if isinstance(full, str) and len(full) > len(text)
                else text
                if columns.missing(full) and text not in ("–", "")
                else ""
            )
            tip = f' title="{html.escape(tip, quote=True)}"' if tip else ""
            tds.append(f"<td class={cls}{tip}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    out = f"<table class=summary><tr>{head}</tr>{''.join(body)}</table>"
    return out + (f"<p class=legend>{columns.legend(cols, html=True)}</p>" if legend else "")


def _counts(values: pd.Series) -> str:
    counts = values.astype(str).value_counts()
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


STYLE = """
body{font-family:sans-serif;margin:1.5em;max-width:1400px}
table.matrix{border-collapse:collapse;font-size:11px}
table.matrix td,table.matrix th{border:1px solid #bbb;padding:3px;vertical-align:top;max-width:7em}
table.matrix td small{display:block;color:#333;font-size:9px}
th.rot div{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
td.none{background:#fafafa}
span.key{padding:2px 6px;margin-right:4px;font-size:11px}
img{max-width:100%;display:block;margin:0.5em 0}
table.summary{border-collapse:collapse;font-size:11px}
table.summary td,table.summary th{border:1px solid #ccc;padding:2px 5px}
table.summary td.n{text-align:right;white-space:nowrap}
p.legend{font-size:11px;color:#444;max-width:1100px}
"""


def render(df: pd.DataFrame, title: str = "dynshape report", rules=None, judged: dict | None = None, summarised=None) -> str:
    """The HTML report of the records in ``df`` (raw or :func:`frames.flat`);
    ``judged``: the gate's verdicts, ``summarised``: :func:`frames.summary` of ``df``,
    when the caller has them (:func:`frames.jobs`)."""
    df = frames.flat(df)
    jobs = frames.jobs(df, rules, judged, summarised)
    shapes = frames.per_shape(df)
    many = jobs[frames.RUN].drop_duplicates().shape[0] > 1
    runs = ", ".join(f"{r} on {m}" for r, m in jobs[frames.RUN].drop_duplicates().itertuples(index=False))
    board = leaderboard.leaderboard(df, jobs)
    parts = [
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{STYLE}{html_answer.STYLE}{svg.STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        html_answer.ran_line(jobs),
        html_answer.answer_html(board, jobs),
        f"<p class=legend>Runs: {html.escape(runs)}. Commits: "
        f"{html.escape(', '.join(str(c)[:10] for c in jobs['commit'].dropna().unique()))}. "
        f"Jobs by expectation: {html.escape(_counts(jobs['outcome']))}.</p>",
        "<h2>Leaderboard</h2>",
        leaderboard.to_html(board),
    ]
    if by_executor := executors.to_html(board):
        parts += ["<h2 id=executors>Our StableHLO module, per executor</h2>", by_executor]
    parts += [
        "<h2>Conformance matrix</h2>",
        matrix_html(jobs),
    ]
    if not many:
        table = frames.family_table(df, summarised=jobs, shapes=shapes)
        parts += ["<h2>Compile patterns by case family</h2>", table.to_html(classes="summary", escape=True)]
    if frames.releases(df):
        from . import compare

        parts += ["<h2 id=releases>Across releases</h2>", compare.versions_html(df)]
    if jobs["commit"].nunique() > 1:  # the history's commits are its jobs'
        parts.append("<h2>History by commit</h2>")
        parts += [chart for _, chart in history_plots(frames.history(df))]
    ran = jobs[jobs["shapes"] > 0]
    if len(ran):
        cols = [c for c in columns.shown(ran) if c.name not in _CASE_TABLE_DROPS]
        parts += [
            "<h2>Per case</h2>",
            "<p class=legend>Plots: latency on a log scale against the size that grows; "
            "a band is the dispersion (first call: min–max over processes; cached call: each shape's IQR). "
            f"Table columns: {columns.legend(cols, html=True)}.</p>",
        ]
    for case in sorted(ran["case"].unique()):
        parts.append(f"<h2 id={html.escape(case)}>{html.escape(case)}</h2>")
        parts += [chart for _, chart in case_plots(case, shapes, jobs, many)]
        parts.append(summary_html(ran[ran["case"] == case], legend=False))
    parts.append("</body></html>")
    return "\n".join(parts)
