"""The conformance gate: every runnable (case, backend, mode) on the quick sweep.

Each job runs in its own worker, exactly as `python -m harness run` runs it.
It must match the oracle on every shape and compile exactly as
``cases/expectations.toml`` says (or fail as it says it will). Unavailable
backends skip with their reason.
"""

from __future__ import annotations

import pytest

from harness import expectations, runner

COMBOS = [c for c in runner.plan() if c.backend.unsupported_reason(c.case, c.mode) is None]


@pytest.mark.parametrize("combo", COMBOS, ids=[c.id for c in COMBOS])
def test_conformance(combo, rules, tmp_path):
    ok, why = combo.backend.available()
    if not ok:
        pytest.skip(f"{combo.backend.name} unavailable: {why}")
    rule = expectations.lookup(rules, combo.case.name, combo.backend.name, combo.mode)
    assert rule is not None, f"no expectation for {combo.id}: add a rule to cases/expectations.toml"
    run = runner.Runner(tmp_path, profile="quick", repeats=2, warmup=1, progress=False)
    records: list[dict] = []
    run.run_one(combo, records.append)
    found = expectations.problems(records, rule)
    if rule.xfail:
        assert found, f"{combo.id} passed but is expected to fail ({rule.xfail}): update cases/expectations.toml"
        other = expectations.unexpected_failure(records, rule)
        assert other is None, f"{combo.id} failed differently than expected: {other}"
        pytest.xfail(rule.xfail)
    assert not found, f"{combo.id}:\n  " + "\n  ".join(found)

