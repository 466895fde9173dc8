"""A missing environment (the torch_xla one): its backends report ``skipped``
with the exact command that creates it; outside CI the gate shows them
skipped, never passed; in CI (``CI=true``) the job fails ``run``, ``report
--check`` and the gate, unless its rule says ``env_optional``."""

import dataclasses
import importlib

import pytest

import cases
from backends import envs
from harness import expectations, registry, report, results, runner

XLA_BACKENDS = ["torch_xla_lazy", "torch_xla_stablehlo", "torch_xla_stablehlo_canon", "torchax_stablehlo"]


@pytest.fixture
def no_xla_env(monkeypatch, tmp_path):
    missing = tmp_path / "gone" / "bin" / "python"
    monkeypatch.setenv("DYNSHAPE_XLA_PYTHON", str(missing))
    envs._missing.cache_clear()
    yield missing
    envs._missing.cache_clear()


def test_backends_of_a_missing_env_say_how_to_create_it(no_xla_env):
    want = (
        f"environment 'xla' not found at {no_xla_env}: create it with `make xla-env XLA_VENV="
        f"{no_xla_env.parent.parent}` (torch 2.9.1 + torch_xla 2.9.0, ~3 min and ~7 GB the first time)"
    )
    for name in XLA_BACKENDS:
        assert registry.backends()[name].available() == (False, want)


def test_the_default_location_names_plain_make_xla_env(monkeypatch, tmp_path):
    monkeypatch.delenv("DYNSHAPE_XLA_PYTHON", raising=False)
    monkeypatch.setitem(envs.ENVS["xla"], "python", tmp_path / ".venv-xla" / "bin" / "python")
    with pytest.raises(envs.EnvError) as e:
        envs.python_for("xla")
    assert str(e.value) == (
        f"environment 'xla' not found at {tmp_path / '.venv-xla' / 'bin' / 'python'}: create it "
        "with `make xla-env` (torch 2.9.1 + torch_xla 2.9.0, ~3 min and ~7 GB the first time)"
    )


def test_their_jobs_are_skipped_in_records_report_and_gate(no_xla_env, tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    case = cases.get("gnn_edge_divide")
    combo = runner.Combo(case, registry.backends()["torch_xla_lazy"], "unbounded")
    got = []
    runner.Runner(tmp_path, progress=False).run_one(combo, got.append)
    assert [(r["status"], r["ok"]) for r in got] == [("skipped", None)]
    assert "create it with `make xla-env XLA_VENV=" in got[0]["message"]

    rule = expectations.lookup(expectations.load(), case.name, "torch_xla_lazy", "unbounded")
    assert expectations.verdict(got, rule).outcome == "idle"  # not "pass"
    df = report.summary(results.load([runner.Runner(tmp_path, progress=False).run([combo])]))
    assert "- torch_xla_lazy, skipped: environment 'xla' not found at" in report.markdown(df)

    gate = importlib.import_module("cases.test_conformance")
    with pytest.raises(pytest.skip.Exception) as e:
        gate.test_conformance(
            combo, expectations.load(), ("gate-test", None), gate_preload=None, gate_fingerprints=None, tmp_path=tmp_path
        )
    assert str(e.value).startswith("torch_xla_lazy unavailable: environment 'xla' not found at")


def test_in_ci_a_missing_environment_fails_run_check_and_gate(no_xla_env, tmp_path, monkeypatch, capsys):
    from harness import cli

    monkeypatch.setenv("CI", "true")
    argv = [
        "run",
        "--cases",
        "gnn_edge_divide",
        "--backends",
        "torch_xla_lazy",
        "--modes",
        "unbounded",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert cli.main(argv) == cli.EXIT_UNEXPECTED
    err = capsys.readouterr().err
    assert "  gnn_edge_divide[torch_xla_lazy-unbounded]: missing: not run in CI: environment 'xla' not found" in err
    run = next(tmp_path.glob("*.jsonl"))
    assert cli.main(["report", str(run), "--check", "--csv", str(tmp_path / "r.csv")]) == cli.EXIT_UNEXPECTED
    monkeypatch.setenv("CI", "false")
    assert cli.main(["report", str(run), "--check", "--csv", str(tmp_path / "r.csv")]) == cli.EXIT_OK

    monkeypatch.setenv("CI", "true")
    case = cases.get("gnn_edge_divide")
    combo = runner.Combo(case, registry.backends()["torch_xla_lazy"], "unbounded")
    gate = importlib.import_module("cases.test_conformance")
    rules = expectations.load()
    with pytest.raises(pytest.fail.Exception) as e:
        gate.test_conformance(combo, rules, ("gate-test", None), gate_preload=None, gate_fingerprints=None, tmp_path=tmp_path)
    assert str(e.value).startswith("torch_xla_lazy unavailable: environment 'xla' not found at")
    assert "in CI a missing environment fails the gate" in str(e.value)
    # a rule may say the environment is optional
    optional = [dataclasses.replace(r, env_optional="no xla here") for r in rules]
    with pytest.raises(pytest.skip.Exception):
        gate.test_conformance(combo, optional, ("gate-test", None), gate_preload=None, gate_fingerprints=None, tmp_path=tmp_path)
