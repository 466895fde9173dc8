"""A missing optional environment (the torch_xla one): its backends report
``skipped`` with the exact command that creates it, and the gate shows them
skipped, never passed."""

import importlib

import pytest

import cases
from backends import envs
from harness import expectations, registry, report, results, runner

XLA_BACKENDS = ["torch_xla_lazy", "torch_xla_stablehlo", "torch_xla_stablehlo_canon"]


@pytest.fixture
def no_xla_env(monkeypatch, tmp_path):
    missing = tmp_path / "gone" / "bin" / "python"
    monkeypatch.setenv("DYNSHAPE_XLA_PYTHON", str(missing))
    envs._missing.cache_clear()
    yield missing
    envs._missing.cache_clear()


def test_backends_of_a_missing_env_say_how_to_create_it(no_xla_env):
    want = (f"environment 'xla' not found at {no_xla_env}: create it with `make xla-env XLA_VENV="
            f"{no_xla_env.parent.parent}` (torch 2.9.1 + torch_xla 2.9.0, ~3 min and ~7 GB the first time)")
    for name in XLA_BACKENDS:
        assert registry.backends()[name].available() == (False, want)


def test_the_default_location_names_plain_make_xla_env(monkeypatch, tmp_path):
    monkeypatch.delenv("DYNSHAPE_XLA_PYTHON", raising=False)
    monkeypatch.setitem(envs.ENVS["xla"], "python", tmp_path / ".venv-xla" / "bin" / "python")
    with pytest.raises(envs.EnvError) as e:
        envs.python_for("xla")
    assert str(e.value) == (f"environment 'xla' not found at {tmp_path / '.venv-xla' / 'bin' / 'python'}: create it "
                            "with `make xla-env` (torch 2.9.1 + torch_xla 2.9.0, ~3 min and ~7 GB the first time)")


def test_their_jobs_are_skipped_in_records_report_and_gate(no_xla_env, tmp_path):
    case = cases.get("gnn_edge_divide")
    combo = runner.Combo(case, registry.backends()["torch_xla_lazy"], "unbounded")
    got = []
    runner.Runner(tmp_path, progress=False).run_one(combo, got.append)
    assert [(r["status"], r["ok"]) for r in got] == [("skipped", None)]
    assert "create it with `make xla-env XLA_VENV=" in got[0]["message"]

    rule = expectations.lookup(expectations.load(), case.name, "torch_xla_lazy", "unbounded")
    assert expectations.verdict(got, rule).outcome == "idle"  # not "pass"
    df = report.summarise(results.load([runner.Runner(tmp_path, progress=False).run([combo])]))
    assert "- torch_xla_lazy, skipped: environment 'xla' not found at" in report.markdown(df)

    gate = importlib.import_module("cases.test_conformance")
    with pytest.raises(pytest.skip.Exception) as e:
        gate.test_conformance(combo, expectations.load(), ("gate-test", None), tmp_path)
    assert str(e.value).startswith("torch_xla_lazy unavailable: environment 'xla' not found at")
