"""Expected compile counts and expected failures, from ``cases/expectations.toml``.

Each ``[[expect]]`` rule names ``case``, ``backend`` and ``mode`` (globs; ``*``
when left out) and either ``compiles`` — a formula over ``n_shapes``, the
number of novel shapes the job ran (``"1"``, ``"n_shapes"``,
``"n_shapes + 1"``), optionally with ``stages`` formulas per compile stage —
or ``xfail``, the reason the job is expected to fail. For a job, the most
specific matching rule wins (the one naming the most fields exactly); among
equally specific ones the later. Counts are exact both ways: more compiles
than expected fail, and so do fewer, so the file stays true.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import tomllib
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "cases" / "expectations.toml"


class ExpectationError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Rule:
    case: str = "*"
    backend: str = "*"
    mode: str = "*"
    compiles: str | None = None
    stages: tuple[tuple[str, str], ...] = ()
    xfail: str | None = None
    match: str | None = None
    index: int = 0

    def matches(self, case: str, backend: str, mode: str) -> bool:
        return all(fnmatch.fnmatchcase(v, g) for v, g in ((case, self.case), (backend, self.backend), (mode, self.mode)))

    @property
    def specificity(self) -> tuple[int, int]:
        exact = sum(not any(ch in g for ch in "*?[") for g in (self.case, self.backend, self.mode))
        return exact, self.index

    def describe(self) -> str:
        return f"rule #{self.index + 1} (case={self.case} backend={self.backend} mode={self.mode})"


def load(path: str | Path = DEFAULT) -> list[Rule]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    rules = []
    for i, raw in enumerate(data.get("expect", [])):
        unknown = set(raw) - {"case", "backend", "mode", "compiles", "stages", "xfail", "match"}
        if unknown:
            raise ExpectationError(f"{path}: rule #{i + 1} has unknown keys {sorted(unknown)}")
        if ("compiles" in raw) == ("xfail" in raw):
            raise ExpectationError(f"{path}: rule #{i + 1} needs exactly one of 'compiles' or 'xfail'")
        rule = Rule(
            case=raw.get("case", "*"), backend=raw.get("backend", "*"), mode=raw.get("mode", "*"),
            compiles=str(raw["compiles"]) if "compiles" in raw else None,
            stages=tuple((k, str(v)) for k, v in raw.get("stages", {}).items()),
            xfail=raw.get("xfail"), match=raw.get("match"), index=i,
        )
        if rule.match is not None and rule.xfail is None:
            raise ExpectationError(f"{path}: rule #{i + 1}: 'match' goes with 'xfail'")
        for formula in ([rule.compiles] if rule.compiles else []) + [v for _, v in rule.stages]:
            evaluate(formula, 1)  # fail early on a bad formula, naming it
        rules.append(rule)
    return rules


def lookup(rules: list[Rule], case: str, backend: str, mode: str) -> Rule | None:
    hits = [r for r in rules if r.matches(case, backend, mode)]
    return max(hits, key=lambda r: r.specificity) if hits else None


def evaluate(formula: str, n_shapes: int) -> int:
    """Evaluate a compile-count formula: ints, ``n_shapes``, ``+ - * //``, ``min``/``max``."""
    from cases.model import eval_int

    try:
        return eval_int(formula, {"n_shapes": n_shapes})
    except ValueError as e:
        raise ExpectationError(f"bad compile-count formula {formula!r}: {e}") from None


def problems(records: list[dict], rule: Rule) -> list[str]:
    """What in a job's records contradicts ``rule`` (empty: conforms).

    Every record must pass; compile counts are checked where the rule has a
    formula (an ``xfail`` rule has none, so its problems are the failures)."""
    out = []
    novel = [r for r in records if r.get("novel") is True]
    cached = [r for r in records if r.get("novel") is False]
    job_level = [r for r in records if r.get("novel") is None]
    for r in job_level:
        out.append(f"job {r['status']}: {r.get('message')}")
    for r in novel + cached:
        if r["status"] != "pass":
            phase = "novel" if r["novel"] else "cached"
            out.append(f"shape {r['shape_index']} {r['sizes']} ({phase}): {r['status']}: {r.get('message')}")
    if not novel:
        out.append("no shape was measured")
        return out
    if rule.compiles is None:
        return out
    n = len({r["shape_index"] for r in novel})
    last = novel[-1]
    want = evaluate(rule.compiles, n)
    if last["compiles"] != want:
        out.append(f"compiles: got {last['compiles']} over {n} novel shapes, expected {rule.compiles} = {want} "
                   f"(stages {last.get('compile_stages')}; {rule.describe()})")
    for stage, formula in rule.stages:
        got = (last.get("compile_stages") or {}).get(stage, 0)
        if got != evaluate(formula, n):
            out.append(f"stage {stage}: got {got}, expected {formula} = {evaluate(formula, n)}")
    grew = [r for r in cached if r["compiles"] != last["compiles"]]
    if grew:
        out.append(f"the cached phase compiled again: {last['compiles']} → {grew[-1]['compiles']} "
                   "(a shape seen before was not served from the cache)")
    return out


def unexpected_failure(records: list[dict], rule: Rule) -> str | None:
    """For an ``xfail`` rule with ``match``: a failure message that does not
    match the expected one (the job failed, but not as the file says)."""
    import re

    if rule.match is None:
        return None
    failed = [r for r in records if r.get("status") not in ("pass", None)]
    msgs = [str(r.get("message")) for r in failed]
    if any(re.search(rule.match, m) for m in msgs):
        return None
    return f"expected a failure matching {rule.match!r}, got: {msgs[0] if msgs else 'no failure'}"
