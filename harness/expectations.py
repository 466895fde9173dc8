"""Expected compile counts and expected failures, from ``cases/expectations.toml``.

Each ``[[expect]]`` rule names ``case``, ``backend`` and ``mode`` (globs; ``*``
when left out) and states compile counts:

- ``per_shape``: a formula for the compiles of each novel shape's first call
  (shape 0's count includes what ``prepare`` compiled), over ``i`` (the
  shape's position in the sweep, from 0), ``first`` (1 on shape 0, else 0),
  ``n_shapes``, ``new_bucket`` (1 where the shape's power-of-two bucket,
  ``engines.sizes.buckets``, was touched by no earlier shape) and ``n_buckets``:
  ``"1"`` for a compile per shape, ``"first"`` for one compile on the first
  shape and none after, ``"new_bucket"`` for one per bucket; ``shape_stages``
  the same per compile stage;
- ``compiles``: a formula over ``n_shapes`` and ``n_buckets`` (the distinct
  buckets the sweep touched) for the job's total, with optional ``stages``
  totals per stage.

A rule may also say ``xfail`` (why the job is expected to fail) with
``match``, a regex every failing record's message must fit. The counts of an
xfail job are checked on the records it has. A rule without ``xfail`` expects
a pass: a job the backend refuses once it runs (an adapter's ``Unsupported``,
which is what ``LoweringError``, jax.export errors and dynamo's ``UserError``
become) fails it. ``env_optional`` (why) lets the job's backend be missing
from its environment in CI (``CI=true``), where a missing environment
otherwise fails the job. A ``crash`` (an internal error of our engines) fails
whatever the rule says: no rule can expect one; outside CI it is only listed as skipped. For a job, the most specific
matching rule wins (the one naming the most fields exactly); among equally
specific ones the later. Counts are exact both ways: more compiles than
expected fail, and so do fewer, so the file stays true.

:func:`verdict` is the one judgement of a job's records against its rule, used
by the conformance gate and by the report's ``expected`` column alike.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from .buckets import bucket_flags as bucket_flags
from .buckets import bucket_policy as bucket_policy

DEFAULT = Path(__file__).resolve().parent.parent / "cases" / "expectations.toml"

KEYS = {"case", "backend", "mode", "compiles", "stages", "per_shape", "shape_stages", "xfail", "match", "env_optional"}


class ExpectationError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Rule:
    case: str = "*"
    backend: str = "*"
    mode: str = "*"
    compiles: str | None = None
    stages: tuple[tuple[str, str], ...] = ()
    per_shape: str | None = None
    shape_stages: tuple[tuple[str, str], ...] = ()
    xfail: str | None = None
    match: str | None = None
    #: why the job may go unrun in CI for want of its backend's environment
    env_optional: str | None = None
    index: int = 0
    #: a case pack's rule applies to that pack's cases only
    scope: frozenset[str] | None = None
    source: str | None = None  # the file, where it is not cases/expectations.toml
    number: int | None = None  # its position in that file, from 1

    def matches(self, case: str, backend: str, mode: str) -> bool:
        if self.scope is not None and case not in self.scope:
            return False
        return all(fnmatch.fnmatchcase(v, g) for v, g in ((case, self.case), (backend, self.backend), (mode, self.mode)))

    @property
    def specificity(self) -> tuple[int, int]:
        exact = sum(not any(ch in g for ch in "*?[") for g in (self.case, self.backend, self.mode))
        return exact, self.index

    def describe(self) -> str:
        where = f"{self.source}: rule #{self.number}" if self.source else f"rule #{self.index + 1}"
        return f"{where} (case={self.case} backend={self.backend} mode={self.mode})"

    def expects(self, message: str) -> bool:
        """Whether an xfail rule's ``match`` (a regex) finds ``message``: a failure it foresees."""
        assert self.match is not None, f"{self.describe()} has xfail without match"  # _load_file refuses that
        return re.search(self.match, message) is not None

    @property
    def summary(self) -> str:
        """The counts the rule states, for the report."""
        parts = []
        if self.per_shape is not None:
            parts.append(f"{self.per_shape}/shape")
        if self.compiles is not None:
            parts.append(self.compiles)
        return ", ".join(parts)


def load(path: str | Path | None = None, known: dict[str, list[str]] | Literal[False] | None = None) -> list[Rule]:
    """The rules of ``path``; by default those of ``cases/expectations.toml``
    followed by each installed case pack's (:mod:`cases.packs`), which apply
    to that pack's cases only and whose globs must match one of them.

    A malformed file raises :class:`ExpectationError` naming the file, the
    rule (``rule #n``, counted from 1) and the key: an unknown key, a value of
    the wrong type, a formula that does not parse, a bad ``match`` regex,
    ``xfail`` without ``match``, or a ``case``/``backend``/``mode`` glob that
    matches none of the ``known`` names (default: the catalogue's cases, the
    registered backends and the modes; ``False``: no glob check).
    """
    names = _known() if known is None else known
    if path is not None:
        return _load_file(path, names)
    import cases.packs

    rules = _load_file(DEFAULT, names)
    for pack in cases.packs.packs():
        if pack.expectations is not None:
            own = [c.name for c in pack.cases]
            scoped = dict(names or {}, case=own) if names is not False else names
            rules += _load_file(pack.expectations, scoped, offset=len(rules), scope=frozenset(own))
    return rules


def _load_file(path, names, offset: int = 0, scope: frozenset[str] | None = None) -> list[Rule]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ExpectationError(f"{path}: not valid TOML: {e}") from None
    rules = []
    raws = data.get("expect", [])
    if not isinstance(raws, list) or not all(isinstance(r, dict) for r in raws):
        raise ExpectationError(f"{path}: 'expect' must be an array of tables ([[expect]])")
    for i, raw in enumerate(raws):
        where = f"{path}: rule #{i + 1}"

        def bad(key: str, why: str) -> ExpectationError:
            return ExpectationError(f"{where}, key {key!r}: {why}")

        unknown = sorted(set(raw) - KEYS)
        if unknown:
            raise bad(unknown[0], f"unknown key; valid: {', '.join(sorted(KEYS))}")
        for key, v in raw.items():
            want = dict if key in ("stages", "shape_stages") else (str, int) if key in FORMULAS else str
            if not isinstance(v, want) or isinstance(v, bool):
                raise bad(
                    key,
                    f"{v!r} is a {type(v).__name__}, expected "
                    f"{'a table' if want is dict else 'a formula' if key in FORMULAS else 'a string'}",
                )
        if "compiles" not in raw and "per_shape" not in raw:
            raise bad("per_shape", "missing: the rule states no compile count (give 'per_shape' or 'compiles')")
        if ("xfail" in raw) != ("match" in raw):
            key, other = ("xfail", "match") if "xfail" in raw else ("match", "xfail")
            raise bad(
                key,
                f"needs {other!r}: 'xfail' (why the job fails) and 'match' (a regex every failure "
                "of the job must fit) go together",
            )
        if "stages" in raw and "compiles" not in raw:
            raise bad("stages", "'stages' goes with 'compiles'")
        if "shape_stages" in raw and "per_shape" not in raw:
            raise bad("shape_stages", "'shape_stages' goes with 'per_shape'")
        for key in ("case", "backend", "mode"):
            glob = raw.get(key, "*")
            if names and not any(fnmatch.fnmatchcase(n, glob) for n in names[key]):
                raise bad(key, f"{glob!r} matches no {key}; valid: {', '.join(names[key])}")
        rule = Rule(
            case=raw.get("case", "*"),
            backend=raw.get("backend", "*"),
            mode=raw.get("mode", "*"),
            compiles=_str(raw.get("compiles")),
            stages=_pairs(raw.get("stages")),
            per_shape=_str(raw.get("per_shape")),
            shape_stages=_pairs(raw.get("shape_stages")),
            xfail=raw.get("xfail"),
            match=raw.get("match"),
            env_optional=raw.get("env_optional"),
            index=offset + i,
            scope=scope,
            source=None if scope is None else str(path),
            number=None if scope is None else i + 1,
        )
        # (key, formula, the evaluator that judges it, sample arguments to try it on)
        checks: list[tuple[str, str | None, Callable[..., int], tuple[int, ...]]] = [
            ("compiles", rule.compiles, evaluate, (1,)),
            ("per_shape", rule.per_shape, evaluate_shape, (0, 1)),
        ]
        checks += [(f"stages.{k}", v, evaluate, (1,)) for k, v in rule.stages]
        checks += [(f"shape_stages.{k}", v, evaluate_shape, (0, 1)) for k, v in rule.shape_stages]
        for key, formula, fn, args in checks:
            if formula is not None:
                try:
                    fn(formula, *args)  # fail early on a bad formula, naming it
                except ExpectationError as e:
                    raise bad(key, str(e)) from None
        if rule.match is not None:
            try:
                re.compile(rule.match)
            except re.error as e:
                raise bad("match", f"bad regex {rule.match!r}: {e}") from None
        rules.append(rule)
    return rules


FORMULAS = ("compiles", "per_shape")


def _known() -> dict[str, list[str]]:
    """Names a rule's globs may match: cases, registered backends (entry
    points, loadable or not), modes."""
    import cases

    from . import registry

    return {"case": [c.name for c in cases.catalogue()], "backend": registry.names(), "mode": list(cases.MODES)}


def _str(v) -> str | None:
    return None if v is None else str(v)


def _pairs(d) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in (d or {}).items())


def lookup(rules: list[Rule], case: str, backend: str, mode: str) -> Rule | None:
    """The rule of one job: the most specific of those matching it (:attr:`Rule.specificity`)."""
    hits = [r for r in rules if r.matches(case, backend, mode)]
    return max(hits, key=lambda r: r.specificity) if hits else None


def _glob(name: str) -> bool:
    return any(ch in name for ch in "*?[")


#: a rule's tests left to make on a job: (which of case, backend, mode; a compiled glob's match)
_Checks = tuple[tuple[int, Callable[[str], object]], ...]


class Finder:
    """:func:`lookup` for a run's ~43,000 jobs (a scan of every rule for each took ~36 s):
    the rules indexed by exact case and backend names, each glob compiled once."""

    def __init__(self, rules: list[Rule]):
        self._by: dict[tuple[str | None, str | None], list[tuple[tuple[int, int], Rule, _Checks]]] = {}
        for r in rules:
            globs = (r.case, r.backend, r.mode)
            # what the index does not settle: the globs, and the mode unless it is "*"
            checks = tuple(
                (i, re.compile(fnmatch.translate(g)).match) for i, g in enumerate(globs) if g != "*" and (i == 2 or _glob(g))
            )
            key = (None if _glob(r.case) else r.case, None if _glob(r.backend) else r.backend)
            self._by.setdefault(key, []).append((r.specificity, r, checks))

    def __call__(self, case: str, backend: str, mode: str) -> Rule | None:
        job = (case, backend, mode)
        best: tuple[tuple[int, int], Rule] | None = None
        for key in ((case, backend), (case, None), (None, backend), (None, None)):
            for spec, r, checks in self._by.get(key, ()):
                if best is not None and spec <= best[0]:
                    continue
                if (r.scope is None or case in r.scope) and all(m(job[i]) for i, m in checks):
                    best = (spec, r)
        return best[1] if best else None


def evaluate(formula: str, n_shapes: int, n_buckets: int | None = None) -> int:
    """Evaluate a job-total formula: ints, ``n_shapes``, ``n_buckets``, ``+ - * //``, ``min``/``max``."""
    return _eval(formula, {"n_shapes": n_shapes, "n_buckets": n_shapes if n_buckets is None else n_buckets})


def evaluate_shape(formula: str, i: int, n_shapes: int, new_bucket: int | None = None, n_buckets: int | None = None) -> int:
    """Evaluate a per-shape formula for shape ``i`` (0-based) of ``n_shapes``
    (``new_bucket``: whether its bucket is new; default: as if every shape were)."""
    return _eval(
        formula,
        {
            "i": i,
            "first": int(i == 0),
            "n_shapes": n_shapes,
            "new_bucket": 1 if new_bucket is None else new_bucket,
            "n_buckets": n_shapes if n_buckets is None else n_buckets,
        },
    )


def _eval(formula: str, names: dict) -> int:
    from engines import sizes

    try:
        return sizes.evaluate(sizes.parse(formula, names=names), names)
    except sizes.SizeError as e:
        raise ExpectationError(f"bad compile-count formula {formula!r}: {e}") from None


# -- judging a job -------------------------------------------------------------


class Problem(str):
    """One way a job contradicts its rule, in words, carrying the index of the shape it
    is about (``shape_index``; ``None`` for the job as a whole): readers need not parse it back."""

    shape_index: int | None

    def __new__(cls, text: str, shape_index: int | None = None) -> Problem:
        made = super().__new__(cls, text)
        made.shape_index = shape_index
        return made


def _at(r: dict) -> int | None:
    """A record's shape index, or ``None`` for a record of the whole job."""
    i = r.get("shape_index")
    return int(i) if i is not None and _given(i) else None


@dataclasses.dataclass
class Verdict:
    """A job's records judged against its rule.

    ``outcome``: ``pass`` (conforms), ``xfail`` (fails as the rule says),
    ``fail`` (contradicts the rule: ``problems`` say how; also a job the
    backend refused at run time where the rule expects a pass), ``xpass``
    (passed but the rule expects a failure), ``norule``, ``idle`` (not run by
    choice: not offered, left out by the profile, opt-in; or, outside CI, its
    environment missing) or ``missing`` (what should have run did not: its
    environment is missing in CI, or :mod:`harness.check` found the job absent
    from its run or with holes).
    """

    outcome: str
    problems: list[str]
    rule: Rule | None = None

    @property
    def ok(self) -> bool:
        return self.outcome in ("pass", "xfail", "idle")

    @property
    def note(self) -> str:
        """The report's ``expected`` cell."""
        r = self.rule
        if self.outcome == "idle":
            return ""
        if self.outcome == "norule":
            return "no rule"
        if self.outcome in ("pass", "xfail"):
            assert r is not None  # verdict() reaches either outcome only by a rule
            return f"= {r.summary}" if self.outcome == "pass" else f"xfail: {r.xfail}"
        if self.outcome == "xpass":
            return "xpass: update expectations"
        if self.outcome == "missing":
            return f"missing: {self.problems[0]}"
        return f"≠ {r.summary}: {self.problems[0]}" if r else self.problems[0]


def in_ci() -> bool:
    """Whether this is a CI run (``CI`` set to true, as CI services do)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


#: a skip the run chose (the profile left the job out, an opt-in backend not
#: named), as opposed to one for want of the backend's environment
_CHOSEN_SKIP = re.compile(r"^left out of the |^\S+ is opt-in \(")


def ran_in_worker(r: dict) -> bool:
    """Whether a record comes from a worker that ran the job (one the runner
    wrote without starting one, for a job not offered or skipped, has neither
    versions nor compile counts)."""
    return _given(r.get("versions")) or _given(r.get("compiles"))


def _given(v) -> bool:
    """Not missing: ``None``, NaN and ``pd.NA`` (a record read through pandas) are missing."""
    if v is None:
        return False
    try:
        return bool(v == v)
    except (TypeError, ValueError):  # pd.NA compares to NA (missing); an array-like is there
        return type(v).__name__ != "NAType"


def verdict(records: list[dict], rule: Rule | None, ci: bool | None = None) -> Verdict:
    """Judge one job's records (every record of one case, backend, mode).
    ``ci``: whether a missing environment fails the job (default: :func:`in_ci`)."""
    if records and all(r.get("status") in ("unsupported", "skipped") for r in records):
        # a system that refuses the job once it sees it (torch.export's constraint
        # violations) fails as an xfail rule says it will
        if rule is not None and rule.xfail and all(rule.expects(str(r.get("message"))) for r in records):
            return Verdict("xfail", [], rule)
        return _unrun(records, rule, in_ci() if ci is None else ci)
    crashed = [r for r in records if r.get("status") == "crash"]
    if crashed:  # a bug of our engines is never a system's expected failure: every new one fails the gate
        return Verdict("fail", [Problem(f"our engine crashed: {_describe(r)}", _at(r)) for r in crashed], rule)
    if rule is None:
        return Verdict("norule", ["no rule in cases/expectations.toml names this job"], None)
    counts = count_problems(records, rule)
    failures = [r for r in records if r.get("status") != "pass"]
    if rule.xfail is None:
        found = [_describe(r) for r in failures] + counts
        if not [r for r in records if r.get("novel") is True]:
            found.append("no shape was measured")
        return Verdict("fail" if found else "pass", found, rule)
    if not failures:
        return Verdict("xpass", [f"passed, but expected to fail: {rule.xfail}"] + counts, rule)
    strays = [_describe(r) for r in failures if not rule.expects(str(r.get("message")))]
    found = [f"failed otherwise than expected (match {rule.match!r}): {s}" for s in strays] + counts
    return Verdict("fail" if found else "xfail", found, rule)


def _unrun(records: list[dict], rule: Rule | None, ci: bool) -> Verdict:
    """A job with only ``unsupported``/``skipped`` records and no xfail that explains them."""
    refused = [r for r in records if ran_in_worker(r)]
    if refused:  # the backend took the job and refused it: a broken adapter looks like this
        if rule is None:
            return Verdict(
                "norule",
                [f"no rule in cases/expectations.toml names this job (the backend refused it: {refused[0].get('message')})"],
                None,
            )
        return Verdict("fail", [f"expected a pass, but the backend refused the job: {_describe(refused[0])}"], rule)
    unavailable = [r for r in records if r.get("status") == "skipped" and not _CHOSEN_SKIP.search(str(r.get("message")))]
    if unavailable and ci and not (rule is not None and rule.env_optional):
        return Verdict(
            "missing", [f"not run in CI: {unavailable[0].get('message')} (a rule's env_optional would allow it)"], rule
        )
    return Verdict("idle", [], rule)


def _where(r: dict) -> str:
    """``shape 2 {'e': 1003}``: a record's shape, by index and sizes."""
    sizes = r.get("sizes")
    return f"shape {int(r['shape_index'])}" + (f" {sizes}" if isinstance(sizes, dict) else "")


def _describe(r: dict) -> Problem:
    if r.get("novel") is None:
        return Problem(f"job {r['status']}: {r.get('message')}")
    phase = "novel" if r["novel"] else "cached"
    return Problem(f"{_where(r)} ({phase}): {r['status']}: {r.get('message')}", _at(r))


def count_problems(records: list[dict], rule: Rule) -> list[str]:
    """Where the records' compile counts contradict the rule, shape by shape
    (``per_shape``) and in total (``compiles``). (A compile in the cached
    phase is already a failure: the record's status is ``recompiled``.)"""
    novel = [r for r in records if r.get("novel") is True]
    out: list[str] = []
    n = len({r["shape_index"] for r in novel})
    flags, n_buckets = bucket_flags(novel)
    if rule.per_shape is not None:
        for r in novel:
            i, delta = int(r["shape_index"]), r.get("compile_delta")
            if not isinstance(delta, dict):
                out.append(Problem(f"{_where(r)}: no per-call compile count recorded", i))
                continue
            nb = flags.get(i)
            want = evaluate_shape(rule.per_shape, i, n, nb, n_buckets)
            got = int(sum(delta.values()))
            if got != want:
                out.append(
                    Problem(
                        f"{_where(r)}: {got} compile(s) {_stages(delta)}, expected {rule.per_shape} = {want} ({rule.describe()})",
                        i,
                    )
                )
            for stage, formula in rule.shape_stages:
                want_s = evaluate_shape(formula, i, n, nb, n_buckets)
                if delta.get(stage, 0) != want_s:
                    out.append(Problem(f"{_where(r)}: stage {stage}: {delta.get(stage, 0)}, expected {formula} = {want_s}", i))
    if rule.compiles is not None and novel:
        last = novel[-1]
        want = evaluate(rule.compiles, n, n_buckets)
        if last["compiles"] != want:
            out.append(
                f"compiles: got {last['compiles']} over {n} novel shapes, expected {rule.compiles} = {want} "
                f"(stages {last.get('compile_stages')}; {rule.describe()})"
            )
        for stage, formula in rule.stages:
            got = (last.get("compile_stages") or {}).get(stage, 0)
            if got != evaluate(formula, n, n_buckets):
                out.append(f"stage {stage}: got {got}, expected {formula} = {evaluate(formula, n, n_buckets)}")
    return out


def _stages(delta: dict) -> str:
    moved = {k: v for k, v in delta.items() if v}
    return "(" + ", ".join(f"{k}={v}" for k, v in moved.items()) + ")" if moved else "(none)"
