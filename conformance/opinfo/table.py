"""Entry-level tables from a sweep's rows: per path, each entry's worst verdict, by family."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from .verdicts import ORDER

COLUMNS = (*ORDER[::-1], "no-sample")  # pass first


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def entries(rows: list[dict]) -> dict[str, dict]:
    """``{entry: its worst row}`` (``no-sample`` only where the entry has no other row)."""
    by: dict = defaultdict(list)
    for r in rows:
        by[r["entry"]].append(r)
    out = {}
    for e, rs in by.items():
        real = [r for r in rs if r["verdict"] != "no-sample"]
        out[e] = min(real, key=lambda r: ORDER.index(r["verdict"])) if real else rs[0]
    return out


def in_distribution(rows: list[dict]) -> list[str]:
    """The passing entries whose passes the distribution oracle judged (random draws: right in
    distribution, not equal to eager's values), sorted."""
    worst = entries(rows)
    judged = {r["entry"] for r in rows if r.get("route") == "distribution"}
    return sorted(e for e in judged if worst[e]["verdict"] == "pass")


def totals(worst: dict[str, dict]) -> Counter:
    return Counter(r["verdict"] for r in worst.values())


def by_family(worst: dict[str, dict]) -> dict[str, Counter]:
    fam: dict = defaultdict(Counter)
    for r in worst.values():
        fam[r["family"]][r["verdict"]] += 1
    return dict(sorted(fam.items()))


def rate(c: Counter, path: str) -> tuple[int, int]:
    """(passed, denominator): lazy over every entry with a sample; StableHLO over the
    entries torch.export exports (``export-refused`` left out of the denominator)."""
    den = sum(n for v, n in c.items() if v != "no-sample" and not (path == "stablehlo" and v == "export-refused"))
    return c["pass"], den


def markdown(path: str, worst: dict[str, dict]) -> str:
    lines = [f"| family ({path}) | " + " | ".join(COLUMNS) + " | pass rate |", "|---" * (len(COLUMNS) + 2) + "|"]
    fams = by_family(worst)
    for name, c in [*fams.items(), ("**all**", totals(worst))]:
        p, d = rate(c, path)
        pct = f"{100 * p / d:.1f}% ({p}/{d})" if d else "-"
        lines.append(f"| {name} | " + " | ".join(str(c.get(k, 0)) for k in COLUMNS) + f" | {pct} |")
    return "\n".join(lines)


def failures(worst: dict[str, dict], verdicts=("crash", "mismatch", "recompiled", "refused")) -> str:
    rows = sorted((r for r in worst.values() if r["verdict"] in verdicts), key=lambda r: (ORDER.index(r["verdict"]), r["entry"]))
    return "\n".join(f"{r['verdict']:10} {r['entry']:40} {r.get('refusal', '')}: {r['message'][:160]}" for r in rows)


def crosstab(ours: dict[str, dict], theirs: dict[str, dict]) -> dict[str, list[str]]:
    """Entries by (ours passes, theirs passes), over the entries both have a sample for:
    ``{"both pass", "ours only", "theirs only", "neither"}`` -> entry names."""
    out: dict[str, list[str]] = {"both pass": [], "ours only": [], "theirs only": [], "neither": []}
    for e in sorted(set(ours) & set(theirs)):
        a, b = ours[e]["verdict"], theirs[e]["verdict"]
        if "no-sample" in (a, b) or "export-refused" in (a, b):
            continue
        key = {(True, True): "both pass", (True, False): "ours only", (False, True): "theirs only"}.get(
            (a == "pass", b == "pass"), "neither"
        )
        out[key].append(e)
    return out
