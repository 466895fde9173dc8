"""The conformance gate: every runnable (case, backend, mode) on the quick sweep.

Each job runs in its own worker, exactly as `python -m harness run` runs it.
It must match the oracle on every shape, in the cached phase too, and compile
exactly as ``cases/expectations.toml`` says, shape by shape (or fail as it
says it will, every failure fitting its ``match``), with no shape or cached
sample missing. Unavailable backends skip with their reason, and fail in CI
(``CI=true``) unless their rule says ``env_optional``; a registered backend
whose module cannot be imported fails. Jobs left out by the quick profile or
of an opt-in backend are one item, :func:`test_jobs_the_gate_leaves_out`.
"""

from __future__ import annotations

import collections
import dataclasses
import os

import pytest

from harness import check, expectations, registry, runner

#: cached samples per shape in the gate (its plan says so too: cases/conftest.py)
REPEATS = 2

#: the quick profile's jobs; those it leaves out (harness/profiles.py) are not
#: collected one by one (:func:`test_jobs_the_gate_leaves_out` lists them), unless
#: DYNSHAPE_GATE_WHOLE=1 (every job) or =left-out (only those)
WHOLE = os.environ.get("DYNSHAPE_GATE_WHOLE", "")
PLANNED = [c for c in runner.plan(profile="quick") if c.backend.unsupported_reason(c.case, c.mode) is None]
if WHOLE == "1":
    PLANNED = [dataclasses.replace(c, left_out=None) for c in PLANNED]
elif WHOLE == "left-out":
    PLANNED = [dataclasses.replace(c, left_out=None) for c in PLANNED if c.left_out]
elif WHOLE:
    raise ValueError(f"DYNSHAPE_GATE_WHOLE={WHOLE!r}: give 1 (every job) or left-out (the quick profile's left-out jobs)")


def _chosen(combo) -> str | None:
    """Why the gate leaves ``combo`` out by choice (the profile, an opt-in
    backend not named), or ``None``: then it is collected, and a backend that
    is unavailable skips (fails in CI: :func:`test_conformance`)."""
    if combo.left_out:
        return combo.left_out
    opt_in = combo.backend.opt_in
    return f"{combo.backend.name} is opt-in ({opt_in})" if opt_in else None


COMBOS = [c for c in PLANNED if _chosen(c) is None]
LEFT_OUT = [c for c in PLANNED if _chosen(c) is not None]
BACKENDS = list(registry.backends().values())


def _marks(backend) -> list:
    """The item's markers: its backend's name and the environments it runs in (``-m "not xla"``)."""
    used = dict.fromkeys([backend.env, *backend.helper_envs])
    return [getattr(pytest.mark, backend.name), *(getattr(pytest.mark, e) for e in used)]


@pytest.mark.parametrize("backend", [pytest.param(b, marks=_marks(b), id=b.name) for b in BACKENDS])
def test_backend_loads(backend):
    if isinstance(backend, registry.Broken):
        pytest.fail(f"backend {backend.name} is registered but cannot be loaded: {backend.available()[1]}")


def test_jobs_the_gate_leaves_out():
    """One item for the jobs the gate does not run, with their reasons (not
    hundreds of skips): ``make gate-left-out`` gates the profile's, and
    tests/test_torch_aoti.py the opt-in backend's."""
    reasons = collections.Counter(_chosen(c).split(";")[0] for c in LEFT_OUT)
    if reasons:
        pytest.skip(f"{len(LEFT_OUT)} jobs not gated here: " + "; ".join(f"{n} {why}" for why, n in reasons.most_common()))


@pytest.mark.parametrize("combo", [pytest.param(c, marks=_marks(c.backend), id=c.id) for c in COMBOS])
def test_conformance(combo, rules, gate_run, gate_preload, gate_fingerprints, tmp_path):
    rule = expectations.lookup(rules, combo.case.name, combo.backend.name, combo.mode)
    skip = combo.skip_reason()  # unavailable here (left-out and opt-in jobs are not collected)
    if skip is not None:
        ok, why = combo.backend.available()
        reason = f"{combo.backend.name} unavailable: {why}" if not ok else f"{combo.backend.name}: {skip[1]}"
        if expectations.in_ci() and not (rule is not None and rule.env_optional):
            pytest.fail(f"{reason} (in CI a missing environment fails the gate; a rule's env_optional allows it)")
        pytest.skip(reason)
    run_id, writer = gate_run
    run = runner.Runner(
        tmp_path,
        run_id=run_id,
        profile="quick",
        repeats=REPEATS,
        warmup=1,
        progress=False,
        zygote_preload=gate_preload,
        fingerprints=gate_fingerprints,
    )
    records: list[dict] = []

    def keep(rec: dict) -> None:
        records.append(rec)
        if writer is not None:
            writer.write(rec)

    run.run_one(combo, keep)
    v = expectations.verdict(records, rule)
    if v.outcome == "pass":
        problems = check.holes(records, {"repeats": REPEATS})
        assert not problems, f"{combo.id} (missing):\n  " + "\n  ".join(problems)
    if v.outcome == "xfail":
        pytest.xfail(rule.xfail)
    assert v.outcome == "pass", f"{combo.id} ({v.outcome}):\n  " + "\n  ".join(v.problems)
