"""Head to head on the zoo: one path's cached call against another's, case by case.

The zoo table's ``cached_x`` sets each row against torch eager; two rows compare through it
only as far as their eager baselines agree. The issue's goals ask for the comparison itself
("our module on IREE within 1.5x of torch-mlir -> IREE where both pass, and below our bounded
XLA row"): :func:`versus` takes the architectures both rows hold (oracle-equal, every stage
compiled once: :func:`harness.zoo_table.compiled_once`) and gives the geometric mean of the
per-case ratio of their cached calls, its interquartile range and on how many the path is the
faster. Latencies of two runs at two loads differ: the count of pairs measured in one run is
given beside them (run both backends in one ``harness run`` to lean on the ratio).
"""

from __future__ import annotations

from typing import Any

from . import leaderboard, zoo_table

#: per path (backend, mode): the rows it is set against and the largest geomean ratio of its
#: cached call to theirs that meets the goal
VERSUS: dict[tuple[str, str], tuple[tuple[tuple[str, str], float], ...]] = {
    ("stablehlo_iree", "unbounded"): ((("iree", "unbounded"), 1.5), (("stablehlo_xla", "bounded"), 1.0)),
}


def _held(j: dict[str, Any] | None) -> bool:
    return j is not None and j["stage"] is None and zoo_table.compiled_once(j) and bool(j["cached_s"])


def versus(df, pairs: dict | None = None) -> list[dict[str, Any]]:
    """Per (path, other) of ``pairs`` (default :data:`VERSUS`) where both rows ran in ``df``:
    ``n`` architectures both hold, ``ratio`` the geometric mean of path/other cached call
    (``q25``/``q75`` its interquartile range; None when ``n`` is 0), ``faster`` how many the
    path is faster on, ``same_run`` how many pairs one run measured, ``limit`` and ``met``."""
    js = zoo_table.jobs(df)
    by = {(j["case"], j["backend"], j["mode"]): j for j in js}
    rows_run = {(j["backend"], j["mode"]) for j in js}
    out = []
    for path, others in (VERSUS if pairs is None else pairs).items():
        if path not in rows_run:
            continue
        for other, limit in others:
            if other not in rows_run:
                continue
            ratios, same = [], 0
            for case in sorted({j["case"] for j in js}):
                a, b = by.get((case, *path)), by.get((case, *other))
                if _held(a) and _held(b):
                    assert a is not None and b is not None
                    ratios.append(a["cached_s"] / b["cached_s"])
                    same += a["run_id"] == b["run_id"]
            g, q25, q75 = leaderboard.geomean_iqr(ratios)
            out.append(
                {
                    "path": path,
                    "other": other,
                    "n": len(ratios),
                    "ratio": g,
                    "q25": q25,
                    "q75": q75,
                    "faster": sum(1 for r in ratios if r < 1),
                    "same_run": same,
                    "limit": limit,
                    "met": g is not None and g <= limit,
                }
            )
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    """:func:`versus` as Markdown (empty when no pair of rows ran)."""
    if not rows:
        return ""
    lines = [
        "| path | against | both hold | cached path/against (geomean) | IQR | path faster on | one run | goal | met |",
        "|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
        iqr = f"{r['q25']:.2f}-{r['q75']:.2f}" if r["q25"] is not None else "-"
        lines.append(
            f"| {'/'.join(r['path'])} | {'/'.join(r['other'])} | {r['n']} | {ratio} | {iqr} | {r['faster']} | "
            f"{r['same_run']} | <= {r['limit']:g}x | {'yes' if r['met'] else 'no'} |"
        )
    return "\n".join(lines)
