"""Incremental runs: a job whose fingerprint (case, backend and engine code,
versions, settings, machine) is unchanged since a recorded run is taken from
that run; a changed engine reruns only the jobs of the backends that import
it; ``--fresh`` reruns everything; a record without a fingerprint is never reused."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from harness import cli, fingerprint, incremental, registry, results

SELECT = ["--cases", "gnn_edge_divide,gnn_rbf_subtract", "--backends", "sleepy,env_reporter", "--modes", "unbounded"]
FLAGS = ["--repeats", "1", "--warmup", "0", "--no-progress"]
JOBS = 4  # two cases on two backends, one mode


@pytest.fixture
def fakes(fake_backends, monkeypatch, tmp_path):
    """Two fake backends; ``sleepy``'s code also "imports" ``engine.py`` in
    ``tmp_path`` (an engine file the test edits), ``env_reporter``'s does not."""
    found = {"sleepy": fake_backends("Sleepy"), "env_reporter": fake_backends("EnvReporter")}
    monkeypatch.setattr(registry, "backends", lambda: found)
    engine = tmp_path / "engine.py"
    engine.write_text("X = 1\n")
    files = fingerprint.Fingerprints.backend_files

    def backend_files(self, backend):
        own = files(self, backend)
        return [*own, engine] if backend.name == "sleepy" else own

    monkeypatch.setattr(fingerprint.Fingerprints, "backend_files", backend_files)
    return engine


def _run(out: Path, *extra: str) -> list[dict]:
    """One ``harness run`` into ``out``: the records of the run it made."""
    before = set(out.glob("*.jsonl"))
    # 1: the fakes have no rule in cases/expectations.toml, which the run reports as unexpected
    assert cli.main(["run", *SELECT, "--out", str(out), *FLAGS, *extra]) in (0, 1)
    (path,) = set(out.glob("*.jsonl")) - before
    return results.read_records(path)


def _jobs(recs: list[dict], reused: bool) -> set[tuple]:
    return {(r["case"], r["backend"]) for r in recs if (r["reused_from"] is not None) == reused}


def test_unchanged_jobs_are_reused_a_changed_engine_reruns_its_backend_only(fakes, tmp_path, capsys):
    out = tmp_path / "results"
    first = _run(out)
    assert len({(r["case"], r["backend"]) for r in first}) == JOBS
    assert all(isinstance(r["fingerprint"], str) and r["started"] for r in first)
    assert not _jobs(first, reused=True)

    second = _run(out)
    assert len(_jobs(second, reused=True)) == JOBS and not _jobs(second, reused=False)
    assert f"{JOBS} of {JOBS} jobs unchanged" in capsys.readouterr().err
    # the same measurements, as records of the new run that say where they come from
    run_id = second[0]["run_id"]
    assert {r["reused_from"] for r in second} == {first[0]["run_id"]} and run_id != first[0]["run_id"]
    assert all(r["run_id"] == run_id for r in second)
    strip = ("run_id", "reused_from", "commit", "dirty")
    assert sorted(json.dumps({k: v for k, v in r.items() if k not in strip}, sort_keys=True) for r in second) == sorted(
        json.dumps({k: v for k, v in r.items() if k not in strip}, sort_keys=True) for r in first
    )

    fakes.write_text("X = 2\n")  # an engine only sleepy depends on
    third = _run(out)
    assert _jobs(third, reused=False) == {("gnn_edge_divide", "sleepy"), ("gnn_rbf_subtract", "sleepy")}
    assert _jobs(third, reused=True) == {("gnn_edge_divide", "env_reporter"), ("gnn_rbf_subtract", "env_reporter")}
    # reused again, a record names the run that measured it, not the one that last copied it
    assert {r["reused_from"] for r in third if r["reused_from"]} == {first[0]["run_id"]}

    fresh = _run(out, "--fresh")
    assert len(_jobs(fresh, reused=False)) == JOBS and not _jobs(fresh, reused=True)


def test_a_changed_setting_reruns(fakes, tmp_path):
    out = tmp_path / "results"
    _run(out)
    again = _run(out, "--repeats", "2")
    assert len(_jobs(again, reused=False)) == JOBS


def test_records_without_a_fingerprint_are_never_reused(fakes, tmp_path):
    out = tmp_path / "results"
    first = _run(out)
    (path,) = out.glob("*.jsonl")
    # as a harness before fingerprints wrote it
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "fingerprint"}) + "\n" for r in first))
    again = _run(out)
    assert len(_jobs(again, reused=False)) == JOBS and not _jobs(again, reused=True)


def test_an_incomplete_job_is_not_reused(fakes, tmp_path):
    out = tmp_path / "results"
    first = _run(out)
    (path,) = out.glob("*.jsonl")
    # the sleepy jobs cut short: their cached records lost
    keep = [r for r in first if not (r["backend"] == "sleepy" and r["novel"] is False)]
    path.write_text("".join(json.dumps(r) + "\n" for r in keep))
    again = _run(out)
    assert _jobs(again, reused=False) == {("gnn_edge_divide", "sleepy"), ("gnn_rbf_subtract", "sleepy")}


def test_an_engine_package_is_hashed_whole_and_only_for_its_importers(tmp_path):
    """``backends/a.py`` imports ``engines.x`` inside a function (as backends do);
    ``backends/b.py`` imports ``engines.y``, which imports ``engines.z``: a change
    anywhere in ``engines/x/`` (a module nothing imports by name: an op table)
    changes a's digest only, one in ``engines/z/`` b's only."""
    files = {
        "backends/__init__.py": "from . import a, b\n",
        "backends/a.py": "from backends import base\n\ndef f():\n    from engines.x import api\n",
        "backends/b.py": "import engines.y\n",
        "backends/base.py": "",
        "engines/__init__.py": "",
        "engines/x/__init__.py": "",
        "engines/x/api.py": "",
        "engines/x/ops/table.py": "T = 1\n",
        "engines/y/__init__.py": "from engines.z import k\n",
        "engines/z/__init__.py": "",
        "engines/z/k.py": "K = 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)

    def digests():
        fp = fingerprint.Fingerprints(tmp_path)
        return {n: fp.files_digest(fp.closure([tmp_path / f"backends/{n}.py"])) for n in ("a", "b")}

    start = digests()
    (tmp_path / "engines/x/ops/table.py").write_text("T = 2\n")
    after_x = digests()
    assert after_x["a"] != start["a"] and after_x["b"] == start["b"]
    (tmp_path / "engines/z/k.py").write_text("K = 2\n")
    after_z = digests()
    assert after_z["b"] != after_x["b"] and after_z["a"] == after_x["a"]


def test_the_real_backends_depend_on_their_engines():
    """Against this repository: the lazy backend hashes engines/lazy, torch eager does not."""
    fp = fingerprint.Fingerprints()
    back = registry.backends()
    rel = {n: {str(p.relative_to(fp.root)) for p in fp.backend_files(back[n])} for n in ("lazy", "torch_eager")}
    assert "engines/lazy/jit.py" in rel["lazy"] and "backends/lazy.py" in rel["lazy"]
    assert not any(p.startswith("engines/lazy/") for p in rel["torch_eager"])


def test_an_engine_package_is_walked_once_whatever_its_modules_import(monkeypatch):
    """Every module of an engine imports its siblings by name, and each name is the whole
    package: walked once per instance (it was walked per name, ~2 s a gate job)."""
    fp = fingerprint.Fingerprints()
    walked = collections.Counter()
    find = fp._find_files_of
    monkeypatch.setattr(fp, "_find_files_of", lambda m: walked.update([m]) or find(m))
    back = registry.backends()
    files = fp.backend_files(back["lazy_stablehlo"])
    assert walked["engines.lazy"] == 1 and walked["engines.stablehlo"] == 1
    assert max(walked.values()) == 1
    assert {p.name for p in files} >= {"to_stablehlo.py", "lower.py"}  # both engines, whole


def test_split_with_fresh_reuses_nothing(tmp_path):
    class R:
        path = tmp_path / "x.jsonl"

    assert incremental.split(R(), ["a", "b"], fresh=True).run == ["a", "b"]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run", "--resume", "r1", "--fresh"], "--resume runs the jobs the run planned; drop --fresh"),
        (["zoo-table", "--cost", "0"], "--cost: must be an integer in [1, 64], got '0'"),
    ],
)
def test_bad_flags_are_usage_errors(argv, says, capsys):
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse's own usage error
        rc = e.code
    assert rc == 2
    assert says in capsys.readouterr().err


def test_a_fingerprint_is_the_same_in_another_process():
    """Nothing of one process (an object's address in a repr, a set's order) reaches a digest."""
    import subprocess
    import sys

    script = (
        "import cases; from harness import fingerprint, registry, runner\n"
        "fp = fingerprint.Fingerprints()\n"
        "(c,) = runner.plan('gnn_edge_divide', 'lazy', 'unbounded')\n"
        "z = [x for x in cases.catalogue() if x.name.startswith('zoo_')][:3]\n"
        "print(fp.job(c, {'profile': 'zoo'}, {'host': 'h'}), *(fp.case(x) for x in z))\n"
    )
    root = Path(__file__).resolve().parent.parent
    outs = {
        subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outs) == 1 and len(outs.pop().split()) == 4


def test_a_zoo_entry_is_part_of_its_cases_digest(monkeypatch):
    """A reprobe that changes one architecture's entry reruns that architecture's jobs, not its family's."""
    import cases
    from cases import zoo

    a, b = [c for c in cases.catalogue() if c.name.startswith("zoo_pyg_")][:2]
    before = fingerprint.Fingerprints()
    digests = before.case(a), before.case(b)
    table = zoo.table()
    family = next(f for f, entries in table.items() if a.name in entries)
    changed = {**table, family: {**table[family], a.name: {**table[family][a.name], "err": 1.0}}}
    monkeypatch.setattr(zoo, "table", lambda: changed)
    after = fingerprint.Fingerprints()
    assert after.case(a) != digests[0] and after.case(b) == digests[1]
