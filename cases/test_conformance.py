"""The conformance gate: every runnable (case, backend, mode) on the quick sweep.

Each job runs in its own worker, exactly as `python -m harness run` runs it.
It must match the oracle on every shape, in the cached phase too, and compile
exactly as ``cases/expectations.toml`` says, shape by shape (or fail as it
says it will, every failure fitting its ``match``). Unavailable backends skip
with their reason; a registered backend whose module cannot be imported fails.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from harness import expectations, registry, runner

#: the quick profile's jobs; those it leaves out (harness/profiles.py) skip with
#: the reason, unless DYNSHAPE_GATE_WHOLE=1 (every job) or =left-out (only those)
WHOLE = os.environ.get("DYNSHAPE_GATE_WHOLE", "")
COMBOS = [c for c in runner.plan(profile="quick") if c.backend.unsupported_reason(c.case, c.mode) is None]
if WHOLE == "1":
    COMBOS = [dataclasses.replace(c, left_out=None) for c in COMBOS]
elif WHOLE == "left-out":
    COMBOS = [dataclasses.replace(c, left_out=None) for c in COMBOS if c.left_out]
elif WHOLE:
    raise ValueError(f"DYNSHAPE_GATE_WHOLE={WHOLE!r}: give 1 (every job) or left-out (the quick profile's left-out jobs)")
BACKENDS = list(registry.backends().values())


def _marks(backend) -> list:
    """The item's markers: its backend's name and the environments it runs in (``-m "not xla"``)."""
    used = dict.fromkeys([getattr(backend, "env", "main") or "main", *getattr(backend, "helper_envs", ())])
    return [getattr(pytest.mark, backend.name), *(getattr(pytest.mark, e) for e in used)]


@pytest.mark.parametrize("backend", [pytest.param(b, marks=_marks(b), id=b.name) for b in BACKENDS])
def test_backend_loads(backend):
    if isinstance(backend, registry.Broken):
        pytest.fail(f"backend {backend.name} is registered but cannot be loaded: {backend.available()[1]}")


@pytest.mark.parametrize("combo", [pytest.param(c, marks=_marks(c.backend), id=c.id) for c in COMBOS])
def test_conformance(combo, rules, gate_run, tmp_path):
    skip = combo.skip_reason()  # unavailable, opt-in (torch_aoti: tests/test_torch_aoti.py), or left out
    if skip is not None:
        if combo.left_out:
            pytest.skip(combo.left_out)
        ok, why = combo.backend.available()
        pytest.skip(f"{combo.backend.name} unavailable: {why}" if not ok else f"{combo.backend.name}: {skip[1]}")
    rule = expectations.lookup(rules, combo.case.name, combo.backend.name, combo.mode)
    run_id, writer = gate_run
    run = runner.Runner(tmp_path, run_id=run_id, profile="quick", repeats=2, warmup=1, progress=False)
    records: list[dict] = []

    def keep(rec: dict) -> None:
        records.append(rec)
        if writer is not None:
            writer.write(rec)

    run.run_one(combo, keep)
    v = expectations.verdict(records, rule)
    if v.outcome == "xfail":
        pytest.xfail(rule.xfail)
    assert v.outcome == "pass", f"{combo.id} ({v.outcome}):\n  " + "\n  ".join(v.problems)
