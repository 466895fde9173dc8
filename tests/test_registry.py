"""Backends are discovered through the `dynshape.backends` entry-point group,
the same way for built-in and out-of-tree backends."""

import json
import os
import subprocess
import sys

from backends import envs
from harness import registry, results


def _pyproject_entry_points() -> dict[str, str]:
    """The built-in backends, read from pyproject.toml itself (not through the registry)."""
    import tomllib

    with open(envs.ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["entry-points"][registry.GROUP]


BUILTIN = set(_pyproject_entry_points())


def test_every_entry_point_in_pyproject_loads_as_its_backend():
    import importlib

    for name, spec in _pyproject_entry_points().items():
        module, _, attr = spec.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        backend = cls()
        assert backend.name == name, spec
        assert backend.modes and backend.forms, f"{name} offers no modes or forms"
        assert (set(backend.counters) and all(c.event for c in backend.counters.values())) or name == "torch_eager", (
            f"{name} does not say what its compile counters count"
        )
    loaded = registry.backends()
    assert set(loaded) >= BUILTIN
    broken = {n: b.available()[1] for n, b in loaded.items() if isinstance(b, registry.Broken)}
    assert not broken


#: the out-of-tree backend of docs/extending.md: one module (a descriptor and its program)
ACME = """
from backends.base import Backend, Counter, Program, TorchArrays


class AcmeProgram(TorchArrays, Program):
    def __init__(self, backend, case, mode):
        super().__init__(backend, case, mode)
        self.fn = case.torch_fn()
        self.seen: set[tuple] = set()  # per-job state, declared

    def run(self, *args):
        shapes = tuple(tuple(a.shape) for a in args)
        if shapes not in self.seen:  # our own cache: count its misses
            self.seen.add(shapes)
            self.count("acme", reason=f"new input shapes {shapes}")
        return self.fn(*args)


class Acme(Backend):
    name = "acme"
    forms = ("torch",)
    modes = ("static", "unbounded")
    requires = ("torch",)
    counters = {"acme": Counter("ours", "new input shapes seen by the program")}

    def prepare(self, case, mode):
        return AcmeProgram(self, case, mode)
"""


def test_the_documented_backend_is_the_one_installed_here():
    """docs/extending.md shows exactly the module this file installs."""
    doc = (envs.ROOT / "docs" / "extending.md").read_text()
    assert ACME.strip() in doc
    assert 'acme = "my_package.acme:Acme"' in doc


def _third_party(tmp_path):
    """An installed-looking distribution with one backend: one module and its dist-info
    (the entry point), on ``PYTHONPATH``, nothing else."""
    (tmp_path / "acme_backend.py").write_text(ACME)
    info = tmp_path / "acme_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dynshape.backends]\nacme = acme_backend:Acme\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{envs.ROOT}")
    return env


def test_out_of_tree_backend_is_listed(tmp_path):
    env = _third_party(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "harness", "list", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    listed = {b["name"]: b for b in json.loads(out.stdout)["backends"]}
    assert listed["acme"] == {
        "name": "acme",
        "modes": ["static", "unbounded"],
        "forms": ["torch"],
        "env": "main",
        "available": True,
        "reason": "",
        "mode_notes": {},
        "counters": {"acme": {"source": "ours", "event": "new input shapes seen by the program"}},
    }
    assert set(listed) >= BUILTIN


def test_out_of_tree_backend_runs_a_job(tmp_path):
    env = _third_party(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--backends",
            "acme",
            "--cases",
            "gnn_edge_divide",
            "--modes",
            "unbounded",
            "--out",
            str(tmp_path / "res"),
            "--repeats",
            "1",
            "--no-progress",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # the run's summary names the job (no rule names it: unexpected, exit 1); its row is the report's
    assert out.returncode == 1 and "gnn_edge_divide[acme-unbounded]: norule" in out.stderr, out.stdout + out.stderr
    report = subprocess.run(
        [sys.executable, "-m", "harness", "report", *map(str, (tmp_path / "res").glob("*.jsonl"))],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "| gnn_edge_divide | acme | unbounded | pass | no rule | 3 | 3 |" in report.stdout, report.stdout + report.stderr
    # its program's own count, per call: one compile on each of the three novel shapes, none cached
    (path,) = (tmp_path / "res").glob("*.jsonl")
    records = results.read_records(path)
    novel = [r for r in records if r.get("novel")]
    assert [r["compile_delta"] for r in novel] == [{"acme": 1}] * 3 and novel[-1]["compiles"] == 3
    assert all(r["compile_delta"] == {"acme": 0} for r in records if r.get("novel") is False)
    first = tuple(tuple(s) for s in novel[0]["shapes"])
    assert novel[0]["compile_reasons"] == [f"acme: new input shapes {first}"]
    # it ran and matched the oracle, but no rule of cases/expectations.toml names it: `run` says so (exit 1)
    assert out.returncode == 1 and "gnn_edge_divide[acme-unbounded]: norule: no rule" in out.stderr, out.stderr


def test_a_backend_that_fails_to_import_is_unavailable_not_fatal(tmp_path):
    env = _third_party(tmp_path)
    (tmp_path / "acme_backend.py").write_text("raise ImportError('acme needs libfoo')\n")
    out = subprocess.run(
        [sys.executable, "-m", "harness", "list", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    listed = {b["name"]: b for b in json.loads(out.stdout)["backends"]}
    assert listed["acme"]["available"] is False
    assert "acme needs libfoo" in listed["acme"]["reason"]


def test_the_gate_fails_a_registered_backend_that_cannot_be_imported(tmp_path):
    env = _third_party(tmp_path)
    (tmp_path / "acme_backend.py").write_text("raise ImportError('acme needs libfoo')\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            str(envs.ROOT / "cases" / "test_conformance.py"),
            "-k",
            "test_backend_loads",
        ],
        env=env,
        cwd=envs.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout[-2000:]
    assert "FAILED" in out.stdout and "test_backend_loads[acme]" in out.stdout
    assert "acme needs libfoo" in out.stdout
