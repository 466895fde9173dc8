"""A gate that sees what is missing (harness/check.py): a broken backend, a
killed run and a hole in a run each fail ``run``, ``report --check``,
``compare`` and the gate. (A missing environment: tests/test_missing_env.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import cases
from harness import check, cli, expectations, registry, results, runner

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import job

CASE = "gnn_edge_divide"  # three shapes in the quick profile


@pytest.fixture(autouse=True)
def _not_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


def _write(path: Path, recs: list[dict], plan_jobs=None, repeats=3) -> Path:
    with results.Writer(path) as w:
        for r in recs:
            w.write(r)
    if plan_jobs is not None:
        runner.plan_path(path).write_text(
            json.dumps({"run_id": recs[0]["run_id"], "profile": "quick", "repeats": repeats, "processes": 1, "jobs": plan_jobs})
        )
    return path


def _whole(backend="torch_eager", run_id="r", samples=3) -> list[dict]:
    recs = job(CASE, backend, "unbounded", [1e-3] * 3, [1e-5] * 3, [0, 0, 0], run_id=run_id)
    for r in recs:
        r["profile"] = "quick"
        if r["novel"] is False:
            r["cached_repeats"], r["cached_samples_s"] = samples, [1e-5] * samples
    return recs


def _check(path: Path, tmp_path: Path, capsys) -> tuple[int, str]:
    code = cli.main(["report", str(path), "--check", "--csv", str(tmp_path / "r.csv")])
    return code, capsys.readouterr().err


def test_a_whole_run_passes(tmp_path, capsys):
    path = _write(tmp_path / "r.jsonl", _whole(), [[CASE, "torch_eager", "unbounded"]])
    assert _check(path, tmp_path, capsys) == (0, f"\nreport CSV: {tmp_path / 'r.csv'}\n")


def test_a_killed_run_fails_check_and_compare(tmp_path, capsys):
    """The plan lists a job the run never started, and one it started but
    was killed in (one novel shape written)."""
    plan = [[CASE, "torch_eager", "unbounded"], [CASE, "torch_eager", "static"], ["gnn_rbf_subtract", "torch_eager", "unbounded"]]
    cut = job(CASE, "torch_eager", "static", [1e-3], [], [0])
    path = _write(tmp_path / "r.jsonl", _whole() + cut, plan)
    code, err = _check(path, tmp_path, capsys)
    assert code == cli.EXIT_UNEXPECTED
    assert "dynshape: 2 of 3 jobs ended otherwise than cases/expectations.toml says:" in err
    assert (
        "  gnn_rbf_subtract[torch_eager-unbounded]: missing: planned by run r, never ran (no record: was the run killed?)" in err
    )
    assert f"  {CASE}[torch_eager-static]: missing: 2 of 3 shapes have no record: shape 1, 2" in err
    # compare: A whole, B the killed run: B's lost jobs are regressions, not dropped
    a = _write(
        tmp_path / "a" / "a.jsonl",
        _whole(run_id="a") + job(CASE, "torch_eager", "static", [1e-3] * 3, [1e-5] * 3, [0, 0, 0], run_id="a"),
    )
    assert cli.main(["compare", str(a), str(path)]) == cli.EXIT_UNEXPECTED
    out, err = capsys.readouterr()
    assert f"- {CASE}[torch_eager-static]: holes in B: 2 of 3 shapes have no record: shape 1, 2" in out
    assert "; 1 job(s) missing from B or with holes in B" in err
    cli.main(["compare", str(path), str(a)])  # holes in A are listed too
    assert f"- {CASE}[torch_eager-static]: holes in A: 2 of 3 shapes have no record" in capsys.readouterr().out


def test_compare_lists_a_job_missing_from_one_side(tmp_path, capsys):
    both = _whole(run_id="a")
    extra = job("gnn_rbf_subtract", "torch_eager", "unbounded", [1e-3] * 3, [1e-5] * 3, [0, 0, 0], run_id="a")
    a = _write(tmp_path / "a.jsonl", both + extra)
    b = _write(tmp_path / "b" / "b.jsonl", _whole(run_id="b"))
    assert cli.main(["compare", str(a), str(b)]) == cli.EXIT_UNEXPECTED
    assert "- gnn_rbf_subtract[torch_eager-unbounded]: only in A (B has no record of it)" in capsys.readouterr().out
    # B's plan shows B did not select it: listed, not a failure
    runner.plan_path(b).write_text(json.dumps({"run_id": "b", "repeats": 3, "jobs": [[CASE, "torch_eager", "unbounded"]]}))
    assert cli.main(["compare", str(a), str(b)]) == cli.EXIT_OK
    assert "- gnn_rbf_subtract[torch_eager-unbounded]: only in A (B did not select it)" in capsys.readouterr().out
    assert cli.main(["compare", str(b), str(a)]) == cli.EXIT_OK
    assert "- gnn_rbf_subtract[torch_eager-unbounded]: only in B" in capsys.readouterr().out


@pytest.mark.parametrize(
    "hole,says",
    [
        ("shape", "missing: 1 of 3 shapes have no record: shape 2"),
        ("cached", "missing: 1 of 3 passing shapes have no cached record: shape 1"),
        ("samples", "missing: shape 0 (cached): 1 of 3 samples (at least 3 are always taken)"),
        ("kept", "missing: shape 0 (cached): 2 samples kept of the 3 it says it took"),
    ],
)
def test_a_hole_in_a_run_fails_check(hole, says, tmp_path, capsys):
    recs = _whole()
    if hole == "shape":
        recs = [r for r in recs if r["shape_index"] != 2]
    elif hole == "cached":
        recs = [r for r in recs if not (r["shape_index"] == 1 and r["novel"] is False)]
    elif hole == "samples":
        recs[3]["cached_repeats"], recs[3]["cached_samples_s"] = 1, [1e-5]
    else:
        recs[3]["cached_samples_s"] = [1e-5, 1e-5]
    path = _write(tmp_path / "r.jsonl", recs, [[CASE, "torch_eager", "unbounded"]])
    code, err = _check(path, tmp_path, capsys)
    assert code == cli.EXIT_UNEXPECTED and f"  {CASE}[torch_eager-unbounded]: {says}" in err
    # the gate judges each job the same way
    assert check.holes(recs, {"repeats": 3})


def test_fewer_samples_are_fine_where_fewer_were_asked_or_the_budget_stopped(tmp_path, capsys):
    """The cached loop stops at MIN_SAMPLES once its budget is spent: 3 of 7 is whole."""
    recs = _whole(samples=3)
    path = _write(tmp_path / "r.jsonl", recs, [[CASE, "torch_eager", "unbounded"]], repeats=7)
    assert _check(path, tmp_path, capsys)[0] == 0
    assert check.holes(_whole(samples=1), {"repeats": 1}) == []


def test_a_run_without_a_plan_is_checked_for_holes_and_says_what_it_cannot_see(tmp_path, capsys):
    path = _write(tmp_path / "r.jsonl", [r for r in _whole() if r["shape_index"] != 2])
    code, err = _check(path, tmp_path, capsys)
    assert code == 1 and "1 of 3 shapes have no record" in err
    assert "dynshape: warning: run r has no plan (.plan.json): jobs it never ran cannot be told apart" in err


def test_a_corrupt_plan_is_bad_input(tmp_path, capsys):
    path = _write(tmp_path / "r.jsonl", _whole())
    runner.plan_path(path).write_text("{not json")
    assert cli.main(["report", str(path), "--check"]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.startswith(f"dynshape: {runner.plan_path(path)}: not a run plan (JSONDecodeError")


def test_a_broken_backend_fails_run_check_and_gate(fake_backends, monkeypatch, tmp_path, capsys):
    """An adapter that turns every lowering error into ``Unsupported``: its jobs
    were 'idle' (not run) and passed; a rule expecting a pass now fails them."""
    from cases import test_conformance as gate  # imported with the real registry

    refuser = fake_backends("Refuser")
    monkeypatch.setattr(registry, "backends", lambda: {"refuser": refuser})
    rules = tmp_path / "e.toml"
    rules.write_text('[[expect]]\nbackend = "*"\nper_shape = "0"\n')
    monkeypatch.setattr(expectations, "DEFAULT", rules)
    argv = ["run", "--cases", CASE, "--modes", "unbounded", "--out", str(tmp_path), "--no-progress"]
    assert cli.main(argv) == cli.EXIT_UNEXPECTED
    err = capsys.readouterr().err
    assert (
        f"  {CASE}[refuser-unbounded]: fail: expected a pass, but the backend refused the job: job unsupported: "
        f"cannot lower {CASE}: LoweringError: deliberate failure"
    ) in err
    run = next(tmp_path.glob("*.jsonl"))
    assert _check(run, tmp_path, capsys)[0] == cli.EXIT_UNEXPECTED

    combo = runner.Combo(cases.get(CASE), refuser, "unbounded")
    with pytest.raises(AssertionError, match=r"\(fail\):\n\s+expected a pass, but the backend refused the job"):
        gate.test_conformance(
            combo, expectations.load(), ("gate-test", None), gate_preload=None, gate_fingerprints=None, tmp_path=tmp_path
        )


def test_the_gate_fails_a_job_with_a_hole(monkeypatch, tmp_path):
    """A worker whose cached phase kept 1 of 2 samples: the gate's own check."""
    from cases import test_conformance as gate

    real = runner.Runner.run_one

    def lossy(self, combo, sink):
        def keep(rec):
            if rec["novel"] is False and rec["shape_index"] == 0:
                rec = dict(rec, cached_repeats=1, cached_samples_s=rec["cached_samples_s"][:1])
            sink(rec)

        return real(self, combo, keep)

    monkeypatch.setattr(runner.Runner, "run_one", lossy)
    combo = runner.Combo(cases.get(CASE), registry.backends()["torch_eager"], "unbounded")
    with pytest.raises(AssertionError, match=r"\(missing\):\n\s+shape 0 \(cached\): 1 of 2 samples"):
        gate.test_conformance(
            combo, expectations.load(), ("gate-test", None), gate_preload=None, gate_fingerprints=None, tmp_path=tmp_path
        )
