"""The report's columns: one definition each, read by every output.

:data:`COLUMNS` lists the per-job summary's columns in display order: the
name of the column in :func:`harness.frames.summary` (and in the CSV, where
seconds stay raw floats in columns named ``*_s``), the header Markdown and
HTML show, the kind of value (which picks its formatter: :func:`fmt_seconds`
for ``seconds``, ``×`` for ratios, …), the columns holding its dispersion,
and what it means (the legend). :func:`cell` writes a value as every table
writes it: human units, the dispersion beside the median, ``–`` where the
value does not apply and a short reason where it is missing.

**Adding a column is one entry here**: a :class:`Column` with ``agg`` (a
function of one job's flat records, :func:`harness.results.flat`) is computed
by :func:`harness.frames.summary` and then shows in the Markdown report, the
CSV, the HTML report's per-case tables and the terminal's CSV;
``tests/test_report.py::test_a_new_column_is_one_definition`` adds one and
finds it in each.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from .results import Status

#: statuses of a job that never measured anything (a value of theirs does not apply)
IDLE = tuple(s.value for s in Status if s.idle)


@dataclasses.dataclass
class Column:
    """One column of the summary.

    ``kind``: ``text`` (left-aligned, clipped to ``width``), ``seconds``,
    ``ratio``, ``count``, ``float`` (two decimals) or ``error`` (one significant
    digit, scientific). ``spread``: the two columns (low, high) of the
    value's dispersion, written beside it. ``optional``: shown only when some
    row has a value (fields another part of the harness may or may not
    record, e.g. ``pad_s``). ``agg``: for a column :func:`harness.frames.summary`
    does not compute itself, a function of one job's flat records."""

    name: str
    header: str
    kind: str = "text"
    legend: str = ""
    spread: tuple[str, str] | None = None
    width: int = 0
    optional: bool = False
    agg: Callable | None = None

    @property
    def text(self) -> bool:
        return self.kind == "text"


COLUMNS: list[Column] = [
    Column("case", "case"),
    Column("backend", "backend"),
    Column("mode", "mode"),
    Column("status", "status", legend="the worst status of the job's records"),
    Column(
        "expected",
        "expected",
        width=60,
        legend="what cases/expectations.toml says: `=` conforms, `≠` does not (the first problem), xfail",
    ),
    Column("shapes", "shapes", "count", "novel shapes measured"),
    Column("compiles", "compiles", "count", "compiles over the novel sweep, every stage"),
    Column("compiles_per_shape", "compiles/shape", "float"),
    Column("stages", "stages", legend="compiles per stage"),
    Column("startup_s", "start-up", "seconds", "the worker's start (framework imports), apart from the sweep"),
    Column("prepare_s", "prepare", "seconds", "work before the first call (export, lowering)"),
    Column(
        "novel_sweep_s",
        "novel sweep",
        "seconds",
        "prepare + every first call (compiles included); median over processes (min–max)",
        spread=("novel_sweep_min_s", "novel_sweep_max_s"),
    ),
    Column("compile_time", "compile time", legend="seconds the backend counted per compile stage"),
    Column(
        "cached_median_s",
        "cached call",
        "seconds",
        "median over shapes of each shape's cached median (the typical shape's IQR)",
        spread=("cached_q25_s", "cached_q75_s"),
    ),
    Column("pad_s", "pad", "seconds", "host padding per call, outside the timed call (median)", optional=True),
    Column("h2d_s", "host→device", "seconds", "host→device copy per call, outside the timed call", optional=True),
    Column("d2h_s", "device→host", "seconds", "device→host copy per call, outside the timed call", optional=True),
    Column("end_to_end_s", "end to end", "seconds", "cached call + pad + copies: what a user pays per call", optional=True),
    Column("novel_vs_eager", "novel ×eager", "ratio", "novel sweep ÷ torch eager's (same run, machine, case)"),
    Column("cached_vs_eager", "cached ×eager", "ratio", "cached call ÷ torch eager's; >1 is slower"),
    Column("max_abs_err", "max abs err", "error", "largest error against the oracle"),
    Column("max_rel_err", "max rel err", "error"),
    Column("why", "why it recompiled (first)", width=90, legend="the system's reason for the first recompile"),
    Column("message", "note", width=90, legend="the first failure's message, or the mode's label"),
]

#: the columns that tell jobs apart beyond (case, backend, mode), shown when they vary
RUN_COLUMNS = [Column("run_id", "run"), Column("machine", "machine"), Column("version", "version")]


def by_name() -> dict[str, Column]:
    """Every column by name (the run columns too)."""
    return {c.name: c for c in [*COLUMNS, *RUN_COLUMNS]}


# -- formatting --------------------------------------------------------------


def missing(v) -> bool:
    """``None``, NA, NaT or NaN."""
    if v is None:
        return True
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return True
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return isinstance(v, float) and math.isnan(v)


def _unit(x: float) -> tuple[float, str]:
    """The scale and unit a number of seconds reads best in."""
    ax = abs(x)
    if ax >= 1:
        return 1.0, "s"
    if ax >= 1e-3:
        return 1e3, "ms"
    if ax >= 1e-6:
        return 1e6, "µs"
    return 1e9, "ns"


def _digits(v: float) -> str:
    """Three significant figures, no exponent: 1.23, 12.3, 123."""
    a = abs(v)
    return f"{v:.2f}" if a < 10 else f"{v:.1f}" if a < 100 else f"{v:.0f}"


def fmt_seconds(x) -> str:
    """Seconds in ns, µs, ms or s with three significant figures (``–`` when missing)."""
    if missing(x):
        return "–"
    x = float(x)
    if x == 0:
        return "0 s"
    scale, unit = _unit(x)
    return f"{_digits(x * scale)} {unit}"


def fmt_spread(value, lo, hi) -> str:
    """A median with its dispersion, in the median's unit: ``1.23 ms (1.20–1.31)``;
    just the median when the dispersion is missing or nil (one sample)."""
    if missing(value):
        return "–"
    head = fmt_seconds(value)
    if missing(lo) or missing(hi) or float(lo) == float(hi):
        return head
    scale, _ = _unit(float(value))
    return f"{head} ({_digits(float(lo) * scale)}–{_digits(float(hi) * scale)})"


def fmt_ratio(v) -> str:
    v = float(v)
    return f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"


def clip(s, n: int) -> str:
    """``s`` on one line, cut to ``n`` characters (with …; 0: no limit)."""
    s = str(s).replace("\n", " ")
    return s if not n or len(s) <= n else s[: n - 1] + "…"


# a cell is whatever pandas holds (a NumPy scalar, a float, NaN): each formatter converts it
FORMATS: dict[str, Callable[[Any], str]] = {
    "seconds": fmt_seconds,
    "ratio": fmt_ratio,
    "count": lambda v: str(int(v)),
    "float": lambda v: f"{float(v):.2f}",
    "error": lambda v: f"{float(v):.1e}",
}


def why_missing(col: Column, row) -> str:
    """Why ``row`` has no value in ``col``: ``–`` where the value does not
    apply (a job that did not run, a field its mode does not record, a text
    left empty), else a short reason (what kept the value from being measured)."""
    status = str(row.get("status", ""))
    if col.text or col.optional or status in IDLE or (col.kind == "error" and status == "pass"):
        return "–"
    if col.name in ("startup_s", "prepare_s"):
        return "–"  # a backend that has no separate start or prepare
    if col.kind == "ratio":
        base = "novel_sweep_s" if col.name.startswith("novel") else "cached_median_s"
        return "no eager" if not missing(row.get(base)) else f"no {base.split('_')[0]}"
    if col.name == "cached_median_s" and status not in ("pass", "recompiled"):
        return f"none ({status})"
    if col.name == "cached_median_s":
        return "no cached pass"
    if col.name in ("compiles", "compiles_per_shape"):
        return "not counted"
    if status not in ("pass", "recompiled"):
        return f"none ({status})"
    return "not recorded"


def cell(col: Column, row) -> str:
    """``row[col.name]`` as every table writes it (unescaped: Markdown and
    HTML escape the result each their own way)."""
    v = row.get(col.name)
    if missing(v) or (col.text and v == ""):
        return why_missing(col, row) if not (col.text and v == "") else ""
    if col.spread:
        return fmt_spread(v, row.get(col.spread[0]), row.get(col.spread[1]))
    if col.text:
        return clip(v, col.width)
    return FORMATS[col.kind](v)


def shown(rows, columns: list[Column] | None = None) -> list[Column]:
    """The columns a table of ``rows`` (a DataFrame) shows: the run columns
    where they vary, every column of :data:`COLUMNS` it has (an optional one
    only where some row has a value)."""
    cols = [c for c in RUN_COLUMNS if c.name in rows.columns and rows[c.name].nunique(dropna=False) > 1]
    for c in COLUMNS if columns is None else columns:
        if c.name not in rows.columns:
            continue
        if c.optional and not rows[c.name].notna().any():
            continue
        cols.append(c)
    return cols


def legend(columns: list[Column], html: bool = False) -> str:
    """``header``: meaning; … for the columns that have a legend (headers in
    bold: Markdown's ``**``, or ``<b>`` with ``html``, the rest escaped)."""
    if not html:
        return "; ".join(f"**{c.header}**: {c.legend}" for c in columns if c.legend)
    from html import escape

    return "; ".join(f"<b>{escape(c.header)}</b>: {escape(c.legend)}" for c in columns if c.legend)
