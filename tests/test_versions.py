"""Releases of the systems under test side by side (``run --versions``): the
environments per release, one job per release, the ``versions`` each record
carries, and ``compare --by version`` on planted records."""

import json
import os
import sys
from pathlib import Path

import pytest
from synthetic import frame, job

import cases
from backends import envs
from harness import check, cli, compare, history, html_report, meta, registry, releases, report, results, resume, runner

#: the planted grid: per release environment, its system's version
GRID = {"torch-2.9.1": ("torch", "2.9.1+cu128"), "torch-2.13.0": ("torch", "2.13.0+cpu")}
GRID |= {"jax-0.10.2": ("jax", "0.10.2"), "jax-0.12.0.1": ("jax", "0.12.0.1")}


def _planted(compiles_in=None, run_id="v"):
    """Records of one ``run --versions`` run: torch_export in both torch releases,
    jax_jit in both jax releases, each with ``env`` and ``versions`` set;
    ``compiles_in``: ``{env: compiles}`` to plant a different count there."""
    recs = []
    for env, (system, version) in GRID.items():
        backend = "torch_export" if system == "torch" else "jax_jit"
        compiles = (compiles_in or {}).get(env, [1, 1, 1])  # the quick sweep's three shapes
        for r in job("gnn_edge_divide", backend, "unbounded", [0.1] * 3, [1e-4] * 3, compiles, run_id=run_id):
            recs.append({**r, "env": env, "versions": {"python": "3.11.7", system: version}})
    return recs


def _write(path: Path, recs) -> Path:
    with results.Writer(path) as w:
        for r in recs:
            w.write(r)
    return path


def test_each_release_has_an_environment_and_a_bad_spec_is_named():
    assert envs.parse_versions(["torch=2.9.1,2.13.0", "jax=0.10.2,0.12.0.1"]) == {
        "torch": ["torch-2.9.1", "torch-2.13.0"],
        "jax": ["jax-0.10.2", "jax-0.12.0.1"],
    }
    assert envs.versions_of("jax") == ["0.10.2", "0.12.0.1"]
    with pytest.raises(envs.EnvError, match=r"no environment for torch '2\.5'; declared in backends/envs.py: 2\.9\.1, 2\.13\.0"):
        envs.parse_versions(["torch=2.5"])
    with pytest.raises(envs.EnvError, match="unknown system 'tf'"):
        envs.parse_versions(["tf=2"])
    with pytest.raises(envs.EnvError, match="expected SYSTEM=V1,V2"):
        envs.parse_versions(["torch"])
    assert envs.release("main") is None and envs.release("torch-2.9.1") == "torch-2.9.1"
    assert envs.release_label("jax-0.12.0.1") == "jax 0.12.0.1" and envs.release_label("xla") == ""


def test_a_backend_belongs_to_the_system_it_needs():
    b = registry.backends()
    system = {n: envs.system_of(b[n].env, tuple(b[n].requires)) for n in b}
    assert system["torch_compile"] == system["torch_export"] == system["torch_eager"] == "torch"
    assert system["jax_jit"] == system["jax_export"] == system["lazy_stablehlo"] == "jax"
    assert system["torch_xla_lazy"] is None  # torch_xla pins its own torch


def test_with_versions_plans_one_job_per_release_and_the_plan_keeps_it(tmp_path):
    combos = runner.plan("gnn_edge_divide", "torch_export,jax_jit", "unbounded")
    got = releases.with_versions(combos, envs.parse_versions(["torch=2.9.1,2.13.0", "jax=0.10.2,0.12.0.1"]))
    assert [c.id for c in got] == [
        "gnn_edge_divide[torch_export-unbounded@torch-2.9.1]",
        "gnn_edge_divide[torch_export-unbounded@torch-2.13.0]",
        "gnn_edge_divide[jax_jit-unbounded@jax-0.10.2]",
        "gnn_edge_divide[jax_jit-unbounded@jax-0.12.0.1]",
    ]
    only_jax = releases.with_versions(combos, envs.parse_versions(["jax=0.10.2"]))
    assert [(c.backend.name, c.env) for c in only_jax] == [("torch_export", None), ("jax_jit", "jax-0.10.2")]
    r = runner.Runner(tmp_path, run_id="p", progress=False)
    plan = json.loads(r.write_plan(got).read_text())
    assert plan["jobs"][0] == ["gnn_edge_divide", "torch_export", "unbounded", "torch-2.9.1"]
    # a resumed run plans the same jobs, in the same environments
    _, pending = resume.resume(tmp_path, "p", progress=False)
    assert [c.id for c in pending] == [c.id for c in got]


def test_a_missing_or_wrong_release_environment_skips_its_jobs_naming_it(tmp_path, monkeypatch):
    case = cases.get("gnn_edge_divide")
    jit = registry.backends()["jax_jit"]
    monkeypatch.delenv("DYNSHAPE_JAX012_PYTHON", raising=False)
    monkeypatch.setitem(envs.ENVS["jax-0.12.0.1"], "python", tmp_path / "absent" / "bin" / "python")
    status, why = runner.Combo(case, jit, "bounded", env="jax-0.12.0.1").skip_reason()
    assert status == "skipped" and "make versions-env" in why and "jax-0.12.0.1" in why
    monkeypatch.setitem(envs.ENVS["jax-0.10.2"], "version", "0.9.0")
    status, why = runner.Combo(case, jit, "bounded", env="jax-0.10.2").skip_reason()
    assert status == "skipped" and why == "env 'jax-0.10.2' has jax 0.10.2, not 0.9.0"


def test_records_of_every_release_carry_versions_and_the_report_says_the_version(tmp_path):
    df = results.load([_write(tmp_path / "v.jsonl", _planted())])
    assert set(df["env"]) == set(GRID) and all(isinstance(v, dict) and len(v) == 2 for v in df["versions"])
    assert results.duplicates(df) == []  # one job per release, not one job twice
    s = report.summarise(df)
    assert len(s) == 4 and sorted(s["version"]) == ["jax 0.10.2", "jax 0.12.0.1", "torch 2.13.0", "torch 2.9.1"]
    text = report.markdown(s)
    assert "| version |" in text and "| torch 2.9.1 |" in text
    page = html_report.render(df)
    assert "<h2 id=releases>Across releases</h2>" in page and "torch_export/unbounded torch 2.9.1" in page


def test_compare_by_version_prints_the_table_and_check_fails_on_a_planted_recompile(tmp_path, capsys):
    _write(tmp_path / "same.jsonl", _planted(run_id="same"))
    assert cli.main(["compare", "--by", "version", "same", "--results", str(tmp_path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "## torch" in out and "## jax" in out and "compiles 2.9.1" in out and "cached 0.12.0.1" in out
    assert "| gnn_edge_divide | torch_export | unbounded | pass | 1 |" in out
    assert "(nothing: every job's status, compiles and latencies agree across the releases)" in out
    # jax 0.12 compiles again on the second shape: a regression, first in the list
    _write(tmp_path / "worse.jsonl", _planted({"jax-0.12.0.1": [1, 2, 2]}, run_id="worse"))
    assert cli.main(["compare", "--by", "version", "worse", "--results", str(tmp_path)]) == 0  # reported, not failed
    assert cli.main(["compare", "--by", "version", "worse", "--results", str(tmp_path), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "| jax 0.10.2 → 0.12.0.1 | gnn_edge_divide | jax_jit | unbounded | 1 | 2 |" in out
    assert "more compiles (shape 1: 0→1)" in out and "1 regression(s) from one release to the next" in err
    changes = compare.by_version(results.load([tmp_path / "worse.jsonl"]))
    assert list(changes["regression"]) == [True, False] and list(changes["system"]) == ["jax", "torch"]
    # fewer compiles in the newer release is a change, not a regression
    _write(tmp_path / "better.jsonl", _planted({"torch-2.13.0": [0, 0, 0]}, run_id="better"))
    assert cli.main(["compare", "--by", "version", "better", "--results", str(tmp_path), "--check"]) == 0
    assert "| torch 2.9.1 → 2.13.0 | gnn_edge_divide | torch_export |" in capsys.readouterr().out


def test_compare_by_version_needs_one_run_and_says_so_without_releases(tmp_path, capsys):
    _write(tmp_path / "plain.jsonl", frame(job("c", "x", "static", [0.1], [1e-4], [1], run_id="plain")).to_dict("records"))
    assert cli.main(["compare", "--by", "version", "plain", "plain", "--results", str(tmp_path)]) == cli.EXIT_USAGE
    assert cli.main(["compare", "--by", "version", "plain", "--results", str(tmp_path), "--check"]) == 0
    assert "(no records ran in a release's environment" in capsys.readouterr().out
    assert cli.main(["compare", "plain", "--results", str(tmp_path)]) == cli.EXIT_USAGE


def test_a_planned_release_without_records_is_missing(tmp_path):
    path = _write(tmp_path / "v.jsonl", [r for r in _planted() if r["env"] != "jax-0.12.0.1"])
    plan = {"run_id": "v", "jobs": [["gnn_edge_divide", "jax_jit", "unbounded", e] for e in ("jax-0.10.2", "jax-0.12.0.1")]}
    plan["jobs"] += [["gnn_edge_divide", "torch_export", "unbounded", e] for e in ("torch-2.9.1", "torch-2.13.0")]
    runner.plan_path(path).write_text(json.dumps(plan))
    df = results.load([path])
    judged = check.verdicts(df, [path], by=report.job_by(report.summarise(df)))
    missing = {k: v for k, v in judged.items() if v.outcome == "missing"}
    assert list(missing) == [("gnn_edge_divide", "jax_jit", "unbounded", "jax-0.12.0.1")]


def test_imported_versions_name_what_the_job_imported_not_what_a_zygote_had():
    import numpy  # in sys.modules, as a zygote's preload would have it

    before = set(sys.modules)
    assert "numpy" not in meta.imported_versions(before)  # the zygote's, for other backends
    got = meta.imported_versions(before, own=["numpy.linalg"])  # the backend's own preload
    assert got["numpy"] == numpy.__version__ and set(got) == {"python", "numpy"}


@pytest.mark.slow
def test_a_run_over_a_release_writes_its_records_with_versions(tmp_path, capsys):
    """A real job in the main environment's jax release (always here) and, where
    ``make versions-env`` made it, in jax 0.12.0.1's."""
    wanted = ["0.10.2"] + (["0.12.0.1"] if Path(envs.ENVS["jax-0.12.0.1"]["python"]).exists() else [])
    argv = ["run", "--cases", "gnn_edge_divide", "--backends", "jax_jit", "--modes", "bounded", "--out", str(tmp_path)]
    code = cli.main([*argv, "--repeats", "2", "--no-progress", "--versions", "jax=" + ",".join(wanted)])
    assert code == 0
    df = results.load([tmp_path])
    novel = df[df["novel"] == True]  # noqa: E712
    assert sorted(set(novel["env"])) == sorted(f"jax-{v}" for v in wanted)
    assert {v["jax"] for v in novel["versions"]} == set(wanted) and all("torch" not in v for v in novel["versions"])
    capsys.readouterr()
    assert cli.main(["compare", "--by", "version", str(next(tmp_path.glob("*.jsonl")))]) == 0
    assert "## jax" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(
    not Path(envs.ENVS["jax-0.12.0.1"]["python"]).exists(), reason="no .venv-jax012: create it with `make versions-env`"
)
def test_jax_0_12_runs_in_its_own_environment():
    ok, why = envs.modules_available("jax-0.12.0.1", ("jax", "jaxlib", "numpy"))
    assert ok, why
    assert envs.version_mismatch("jax-0.12.0.1") == ""


def test_history_and_compare_keep_each_release_of_a_job_apart(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", _planted(run_id="a"))
    b = _write(tmp_path / "b.jsonl", _planted({"torch-2.9.1": [1, 2, 2]}, run_id="b"))
    # history: a row per release of each job and commit, not the latest release's alone
    h = history.history([a], results_dir=tmp_path, asv_dir=tmp_path / "no-asv")
    assert sorted(h["env"]) == sorted(GRID) and len(h) == 4
    assert "| env |" in history.markdown(h) and "| torch-2.9.1 |" in history.markdown(h)
    # compare by run: each release of A against the same release of B (not 2 × 2 pairs of one job)
    c = compare.compare(results.load([a]), results.load([b]))
    assert sorted(c["env"]) == sorted(GRID)
    assert list(c.loc[c["regression"], "env"]) == ["torch-2.9.1"]
    assert list(c.loc[c["env"] == "torch-2.13.0", "verdict"]) == ["ok"]
    assert cli.main(["compare", "a", "b", "--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "| torch-2.9.1 | gnn_edge_divide | torch_export | unbounded |" in out
    # a run without releases meets each release of the other
    plain = [r for r in _planted(run_id="p") if r["env"] == "torch-2.13.0"]
    plain = _write(tmp_path / "p.jsonl", [{**r, "env": "main"} for r in plain])
    c = compare.compare(results.load([plain]), results.load([b]))
    assert sorted(c.loc[c["backend"] == "torch_export", "env"]) == ["torch-2.13.0", "torch-2.9.1"]


def test_history_keys_asv_results_of_the_release_matrix_by_release(tmp_path):
    """asv's result files of the ``dynshape`` environment type (harness/asv_env.py): one
    per matrix entry, whose ``requirements`` name the releases; each backend's row
    carries its own system's release."""
    machine = tmp_path / "asv" / "vm"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "vm", "version": 1}))
    params = [["'gnn_edge_divide'"], ["'torch_export'", "'jax_jit'"], ["'bucketed'"]]
    for torch, jax, counts in (("2.13.0", "0.10.2", [1, 2]), ("2.9.1", "0.10.2", [3, 2]), ("2.13.0", "0.12.0.1", [1, 4])):
        name = f"dynshape-py3.11-jax{jax}-torch{torch}"
        data = {
            "commit_hash": "c" * 40,
            "env_name": name,
            "date": 1764547200000,
            "params": {"machine": "vm", "python": "3.11", "torch": torch, "jax": jax},
            "python": "3.11",
            "requirements": {"torch": torch, "jax": jax},
            "env_vars": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "results": {"suite.Compiles.track_compiles": [counts, params, "v", 0, 1.0]},
            "durations": {},
            "version": 2,
        }
        (machine / f"cccccccc-{name}.json").write_text(json.dumps(data))
    h = history.asv_frame(tmp_path / "asv")
    got = {(r.backend, r.env): r.compiles for r in h.itertuples()}
    assert got == {
        ("torch_export", "torch-2.13.0"): 1,
        ("torch_export", "torch-2.9.1"): 3,
        ("jax_jit", "jax-0.10.2"): 2,
        ("jax_jit", "jax-0.12.0.1"): 4,
    }


#: a worker whose interpreter has no torch (as jax 0.12.0.1's environment): every import of it fails
_NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NoTorch())
from harness import worker
sys.exit(worker.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["unbounded", "bounded", "bucketed"])
def test_jax_export_runs_where_there_is_no_torch(mode):
    """jax_export's worker needs no torch (jax 0.12.0.1's environment has none): its job runs,
    oracle-equal, in an interpreter where importing torch fails."""
    import subprocess

    from backends.jax_export import JaxExport

    assert "torch" not in JaxExport.requires
    job = {"case": "gnn_edge_divide", "source": "gnn", "mode": mode, "profile": "quick", "repeats": 2, "warmup": 1}
    job["spec"] = "backends.jax_export:JaxExport"
    got = subprocess.run(
        [sys.executable, "-c", _NO_TORCH, json.dumps(job)],
        cwd=envs.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    lines = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    recs = [m["record"] for m in lines if "record" in m]
    assert got.returncode == 0 and recs, got.stderr[-2000:]
    assert {r["status"] for r in recs} == {"pass"} and all("torch" not in r["versions"] for r in recs)


def _jax012() -> str | None:
    """Why jax 0.12.0.1's environment is not here (``make versions-env``), else ``None``."""
    try:
        envs.python_for("jax-0.12.0.1")
    except envs.EnvError as e:
        return str(e)
    return None


@pytest.mark.slow
@pytest.mark.skipif(_jax012() is not None, reason=str(_jax012()))
def test_versions_jax_runs_jax_export_in_both_releases(tmp_path):
    """``--versions jax=0.10.2,0.12.0.1`` runs jax_export in both releases, each job
    oracle-equal and importing its own jax (and no torch)."""
    argv = ["run", "--cases", "gnn_edge_divide", "--backends", "jax_export", "--modes", "bounded,unbounded"]
    code = cli.main([*argv, "--out", str(tmp_path), "--repeats", "2", "--no-progress", "--versions", "jax=0.10.2,0.12.0.1"])
    assert code == 0
    df = results.load([tmp_path])
    novel = df[df["novel"] == True]  # noqa: E712
    assert sorted(set(novel["env"])) == ["jax-0.10.2", "jax-0.12.0.1"] and set(novel["status"]) == {"pass"}
    by_env = {e: {v["jax"] for v in g["versions"]} for e, g in novel.groupby("env")}
    assert by_env == {"jax-0.10.2": {"0.10.2"}, "jax-0.12.0.1": {"0.12.0.1"}}
    assert all("torch" not in v for v in novel["versions"])
