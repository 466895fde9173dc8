"""The conformance gate: every runnable (case, backend, mode) on the quick sweep.

Each job runs in its own worker, exactly as `python -m harness run` runs it.
It must match the oracle on every shape, in the cached phase too, and compile
exactly as ``cases/expectations.toml`` says, shape by shape (or fail as it
says it will, every failure fitting its ``match``). Unavailable backends skip
with their reason; a registered backend whose module cannot be imported fails.
"""

from __future__ import annotations

import pytest

from harness import expectations, registry, runner

COMBOS = [c for c in runner.plan() if c.backend.unsupported_reason(c.case, c.mode) is None]
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
    skip = combo.skip_reason()  # unavailable, or an opt-in backend (torch_aoti: tests/test_torch_aoti.py)
    if skip is not None:
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
