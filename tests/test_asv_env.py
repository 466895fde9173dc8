"""asv's environment matrix over releases (harness/asv_env.py): each matrix entry
of asv.conf.json becomes a ``dynshape`` environment whose benchmark processes run
the checkout's interpreter on the commit's tree and pass the entry's releases to
the suite; an entry naming an undeclared release stops asv with one line, exit 2.
No benchmark runs here (the measured ``asv run``: docs/asv.md)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asv import config, environment

from backends import envs
from harness import asv_env

ROOT = Path(__file__).resolve().parent.parent
ASV = Path(sys.executable).with_name("asv")
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _conf(tmp_path, **changes):
    conf = json.loads((ROOT / "asv.conf.json").read_text())
    conf.update(repo=str(ROOT), env_dir=str(tmp_path / "env"), results_dir=str(tmp_path / "results"), pythons=[PY])
    conf.update(changes)
    path = tmp_path / "asv.conf.json"
    path.write_text(json.dumps(conf))
    return path


def _fake_releases(tmp_path, monkeypatch):
    """Every release environment's interpreter, as an existing file of its own."""
    made = {}
    for name, entry in envs.ENVS.items():
        if entry["python"] is not None and "override" in entry:
            fake = tmp_path / "pythons" / entry["override"]
            fake.parent.mkdir(exist_ok=True)
            fake.touch()
            monkeypatch.setenv(entry["override"], str(fake))
            made[name] = str(fake)
    return made


def test_the_matrix_maps_each_entry_onto_the_release_environments(tmp_path, monkeypatch):
    fakes = _fake_releases(tmp_path, monkeypatch)
    conf = config.Config.load(str(_conf(tmp_path)))
    assert ".harness.asv_env" in conf.plugins and conf.environment_type == asv_env.Releases.tool_name
    got = {e.name: e for e in environment.get_environments(conf, None)}
    # torch 2.9.1 with jax 0.12.0.1 is excluded: each entry moves one system off the main environment's release
    assert set(got) == {
        f"dynshape-py{PY}-jax0.10.2-torch2.13.0",
        f"dynshape-py{PY}-jax0.10.2-torch2.9.1",
        f"dynshape-py{PY}-jax0.12.0.1-torch2.13.0",
    }
    old = got[f"dynshape-py{PY}-jax0.10.2-torch2.9.1"]
    assert isinstance(old, asv_env.Releases)
    assert old.releases == {"jax": "jax-0.10.2", "torch": "torch-2.9.1"}
    assert old.requirements == {"torch": "2.9.1", "jax": "0.10.2"}  # asv's result params: publish graphs by them
    assert old.process_vars()[asv_env.VARIABLE] == "jax=0.10.2 torch=2.9.1"
    # the benchmarks run in asv's own interpreter; the release's workers in its environment,
    # named by the override variable (the commit's checkout has no .venv-xla of its own)
    assert old.find_executable("python") == sys.executable
    assert old.process_vars()["DYNSHAPE_XLA_PYTHON"] == fakes["torch-2.9.1"]
    new_jax = got[f"dynshape-py{PY}-jax0.12.0.1-torch2.13.0"]
    assert new_jax.process_vars()["DYNSHAPE_JAX012_PYTHON"] == fakes["jax-0.12.0.1"]
    # the suite reads the variable back as `harness run --versions` parses its argument
    assert asv_env.parse(old.process_vars()[asv_env.VARIABLE]) == {"jax": ["jax-0.10.2"], "torch": ["torch-2.9.1"]}
    assert asv_env.parse("") == {}
    suite = (ROOT / "benchmarks" / "suite.py").read_text()
    assert f'VERSIONS_VARIABLE = "{asv_env.VARIABLE}"' in suite
    # a plain virtualenv (-E virtualenv) is left only the main environment's releases
    if environment.get_environment_class_by_name("virtualenv"):
        try:
            venvs = [e.name for e in environment.get_environments(conf, [f"virtualenv:{PY}"], verbose=False)]
        except environment.EnvironmentUnavailable:
            venvs = []
        assert all("torch2.9.1" not in n and "jax0.12" not in n for n in venvs)


def test_a_benchmark_process_imports_the_commit_checkout_with_the_entry(tmp_path, monkeypatch):
    _fake_releases(tmp_path, monkeypatch)
    conf = config.Config.load(str(_conf(tmp_path)))
    env = asv_env.Releases(conf, PY, {"torch": "2.9.1"}, {})
    checkout = Path(env._build_root)
    (checkout / "backends").mkdir(parents=True)
    (checkout / "backends" / "__init__.py").write_text("")
    (checkout / "backends" / "envs.py").write_text("MARK = 'the commit'\n")
    probe = "import os, backends.envs as e; print(e.MARK, os.environ['DYNSHAPE_ASV_VERSIONS'])"
    # asv runs each benchmark process in a directory of its own (not the checkout)
    out = env.run(["-c", probe], env={**os.environ, "PYTHONPATH": "/elsewhere", **env.env_vars}, cwd=str(tmp_path))
    # what asv writes into the result file names no path of this machine (publish would offer it)
    assert env.env_vars == {}
    assert out.strip() == "the commit torch=2.9.1"


def test_an_entry_naming_an_undeclared_release_stops_with_one_line(tmp_path, capsys):
    conf = config.Config.load(str(_conf(tmp_path)))
    with pytest.raises(SystemExit) as stop:
        asv_env.Releases(conf, PY, {"torch": "9.9"}, {})
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "asv.conf.json matrix: no environment for torch 9.9; backends/envs.py declares 2.9.1, 2.13.0\n"
    )
    with pytest.raises(SystemExit, match="2"):
        asv_env.Releases(conf, PY, {"tensorflow": "2.1"}, {})
    assert "'tensorflow' is not a system with releases; valid: torch, jax" in capsys.readouterr().err


def test_asv_itself_exits_2_on_an_undeclared_release(tmp_path):
    if not ASV.exists():
        pytest.skip(f"no asv at {ASV}")
    path = _conf(tmp_path, matrix={"req": {"jax": ["0.12.0.1", "0.11"]}}, exclude=[])
    out = subprocess.run([str(ASV), "check", "--config", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1] == (
        "asv.conf.json matrix: no environment for jax 0.11; backends/envs.py declares 0.10.2, 0.12.0.1"
    )


def test_a_missing_release_environment_is_created_by_its_make_target(tmp_path, monkeypatch):
    conf = config.Config.load(str(_conf(tmp_path)))
    monkeypatch.setenv("DYNSHAPE_JAX012_PYTHON", str(tmp_path / "absent" / "bin" / "python"))
    env = asv_env.Releases(conf, PY, {"jax": "0.12.0.1"}, {})
    assert not env.check_presence()
    assert "create it with `make versions-env JAX012_VENV=" in env.missing()[0]
    ran = []

    def fake_run(command, cwd):
        ran.append((command, cwd))
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(asv_env.subprocess, "run", fake_run)
    from asv import util

    with pytest.raises(util.UserError, match="failed"):
        env._setup()
    assert ran == [(["make", "versions-env", f"JAX012_VENV={tmp_path / 'absent'}"], envs.ROOT)]
