"""The quick profile's left-out jobs are planned as skipped, with their
reason, listed by the report, and run with --whole-matrix or the full profile."""

from __future__ import annotations

import pytest

from backends.base import LeftOut
from backends.torch_eager import TorchEager
from harness import cli, profiles, registry, results, runner

RULE = LeftOut("*", "unb*", "a test's reason")


@pytest.fixture
def leave_out(monkeypatch):
    """torch_eager's own rule (a backend's, on its descriptor) and no common one."""
    monkeypatch.setattr(profiles, "QUICK_LEAVES_OUT", ())
    monkeypatch.setattr(TorchEager, "quick_leaves_out", (RULE,))


def _by_id(combos):
    return {c.id: c for c in combos}


def test_quick_plans_left_out_jobs_as_skipped_with_the_reason(leave_out):
    quick = _by_id(runner.plan("gnn_*,seq_softmax", "torch_eager", None, profile="quick"))
    left = quick["seq_softmax[torch_eager-unbounded]"]
    status, why = left.skip_reason()
    assert status == "skipped" and "left out of the quick profile (a test's reason)" in why
    assert "--whole-matrix" in why
    assert quick["seq_softmax[torch_eager-bounded]"].skip_reason() is None
    # the reports' cases keep the whole matrix whatever a rule says
    assert quick["gnn_edge_divide[torch_eager-unbounded]"].skip_reason() is None
    for combos in (
        runner.plan("seq_softmax", "torch_eager", None, profile="quick", whole=True),
        runner.plan("seq_softmax", "torch_eager", None, profile="full"),
        runner.plan("seq_softmax", "torch_eager", None),
    ):
        assert _by_id(combos)["seq_softmax[torch_eager-unbounded]"].skip_reason() is None


def test_run_records_and_reports_what_the_profile_left_out(leave_out, tmp_path, capsys):
    argv = [
        "run",
        "--cases",
        "seq_softmax",
        "--backends",
        "torch_eager",
        "--modes",
        "unbounded",
        "--out",
        str(tmp_path / "q"),
        "--repeats",
        "1",
        "--no-progress",
    ]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    # the run's summary counts it; the full list, with each reason, is the report's
    assert "planned, not run: 1 (1 left out by the profile)" in out
    df = results.load([tmp_path / "q"])
    assert list(df["status"]) == ["skipped"]
    assert cli.main(argv[:-5] + ["--out", str(tmp_path / "w"), "--repeats", "1", "--no-progress", "--whole-matrix"]) == 0
    assert set(results.load([tmp_path / "w"])["status"]) == {"pass"}


def test_every_left_out_rule_names_jobs_that_exist():
    """A rule that matches nothing leaves nothing out: it is a typo."""
    combos = runner.plan()
    for rule in profiles.QUICK_LEAVES_OUT:
        assert any(rule.matches(c.case.name, c.mode) for c in combos), rule
        assert rule.why
    for name, backend in registry.backends().items():
        for rule in backend.quick_leaves_out:
            assert any(c.backend is backend and rule.matches(c.case.name, c.mode) for c in combos), (name, rule)
            assert rule.why


def _collect(env_value: str | None, expr: str):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "DYNSHAPE_GATE_WHOLE"}
    if env_value is not None:
        env["DYNSHAPE_GATE_WHOLE"] = env_value
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/test_conformance.py",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-k",
            expr,
        ],
        cwd=runner.envs.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_left_out_gate_collects_exactly_the_left_out_jobs():
    """make gate-left-out gates exactly what `make test`'s gate skipped."""
    out = _collect("left-out", "seq_softmax and torch_eager")
    ids = [line for line in out.stdout.splitlines() if "::test_conformance[" in line]
    assert ids == ["cases/test_conformance.py::test_conformance[seq_softmax[torch_eager-static]]"], out.stdout
    bad = _collect("yes", "seq_softmax and torch_eager")
    assert bad.returncode != 0 and "DYNSHAPE_GATE_WHOLE='yes': give 1" in bad.stdout + bad.stderr


def test_the_gate_lists_left_out_jobs_in_one_item_not_one_skip_each():
    """The quick profile's left-out jobs and an opt-in backend's are one item
    whose reason counts them per reason; none is collected on its own."""
    import re

    from cases import test_conformance as gate

    assert gate.LEFT_OUT and not any(c.left_out or c.backend.opt_in for c in gate.COMBOS)
    assert {c.id for c in gate.COMBOS} | {c.id for c in gate.LEFT_OUT} == {c.id for c in gate.PLANNED}
    with pytest.raises(pytest.skip.Exception) as e:
        gate.test_jobs_the_gate_leaves_out()
    why = str(e.value)
    assert why.startswith(f"{len(gate.LEFT_OUT)} jobs not gated here: ")
    assert sum(int(n) for n in re.findall(r"(?:: |; )(\d+) ", why)) == len(gate.LEFT_OUT)
    assert "left out of the quick profile (static mode compiles per shape" in why and "is opt-in" in why
