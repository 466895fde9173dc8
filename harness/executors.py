"""Bounded against unbounded, per executor of our StableHLO module.

Our torch.export → StableHLO lowering writes one module per case; several executors
consume it. Whether ``?`` dims run once, or only bounds do, is a property of the
executor, not of the module: XLA refines a ``?`` module to static shapes at every new
size and compiles once only when bounded (its dynamic padder); IREE compiles the ``?``
module once ahead of time; the reference interpreter specialises per argument shape.
This table answers the question per executor, from the leaderboard's rows
(:func:`harness.leaderboard.leaderboard`): per mode, the jobs that pass, those that
compiled once, and the cached call against torch eager.
"""

from __future__ import annotations

import html

import pandas as pd

from . import leaderboard

#: the backends that run the module our lowering writes, and what runs it. A backend that
#: subclasses ``backends.stablehlo_base.StablehloTorch`` and keeps its lowering must be here
#: (``tests/test_executors.py`` checks it)
EXECUTORS = {
    "stablehlo_xla": "XLA (jaxlib's CPU client)",
    "stablehlo_iree": "IREE (iree-compile, llvm-cpu)",
    "stablehlo_interp": "StableHLO reference interpreter",
}
MODES = ("bounded", "unbounded")
HEADERS = ["executor", "backend"] + [f"{m}: {c}" for m in MODES for c in ("passed / run", "compiled once", "cached ×eager")]


def table(board: pd.DataFrame) -> pd.DataFrame:
    """One row per executor in :data:`EXECUTORS` that ran in ``board`` (the leaderboard):
    per mode in :data:`MODES`, ``<mode>_passed``, ``<mode>_run``, ``<mode>_once`` and
    ``<mode>_cached`` (None where the mode did not run)."""
    rows = []
    for backend, executor in EXECUTORS.items():
        mine = board[board["backend"] == backend] if len(board) else board
        if not len(mine):
            continue
        row: dict[str, object] = {"executor": executor, "backend": backend}
        for mode in MODES:
            m = mine[mine["mode"] == mode].to_dict("records")
            r = m[0] if m else {}
            row |= {
                f"{mode}_passed": r.get("passed"),
                f"{mode}_run": r.get("run"),
                f"{mode}_once": r.get("once"),
                f"{mode}_cached": r.get("cached_vs_eager"),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def _cells(r: dict) -> list[str]:
    out = [str(r["executor"]), str(r["backend"])]
    for mode in MODES:
        if r[f"{mode}_run"] is None or pd.isna(r[f"{mode}_run"]):
            out += ["not run", "–", "–"]
            continue
        cached = r[f"{mode}_cached"]
        out += [
            f"{int(r[f'{mode}_passed'])}/{int(r[f'{mode}_run'])}",
            str(int(r[f"{mode}_once"])),
            "–" if cached is None or pd.isna(cached) else f"{leaderboard._num(cached)}×",
        ]
    return out


LEGEND = (
    "one module, several executors: passed / run and compiled once as in the leaderboard, per mode; "
    "cached ×eager: the geometric mean over passing jobs"
)


def markdown(board: pd.DataFrame) -> str:
    """The executor table as Markdown, empty where no executor of our module ran."""
    t = table(board)
    if not len(t):
        return ""
    lines = ["| " + " | ".join(HEADERS) + " |", "|---|---|" + "---:|" * (len(HEADERS) - 2)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in t.to_dict("records")]
    return "\n".join(lines) + "\n\n" + LEGEND + "."


def to_html(board: pd.DataFrame) -> str:
    """The executor table as HTML (class ``summary executors``), empty where none ran."""
    t = table(board)
    if not len(t):
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>" for r in t.to_dict("records"))
    return f"<table class='summary executors'><tr>{head}</tr>{body}</table><p class=legend>{html.escape(LEGEND)}.</p>"
