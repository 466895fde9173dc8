"""A run on a real Dask cluster (a ``dask scheduler`` and two ``dask worker``
processes started from the command line on 127.0.0.1) that loses a worker
mid-run has exactly the records of a local run: a finished job is not run
again and a job cut short keeps only its finished retry (the partial attempt
is set aside in ``<run_id>.incomplete``)."""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cases
from harness import results

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CASES = "gnn_edge_divide,gnn_rbf_subtract,gnn_message_passing"
SELECT = [
    "--cases",
    CASES,
    "--backends",
    "sleepy",
    "--modes",
    "static,unbounded",
    "--repeats",
    "1",
    "--warmup",
    "0",
    "--no-progress",
]
#: what identifies a record: one each per job, process, shape and phase
KEY = ("case", "backend", "mode", "process", "shape_index", "novel", "status")
LIMIT_S = 240  # every wait below is bounded by this


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp_path: Path) -> dict:
    """The fixture's ``sleepy`` backend registered as an installed entry point
    (for the harness and for both Dask workers), each call sleeping 0.5 s."""
    site = tmp_path / "site"
    info = site / "dynshape_sleepy-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dynshape-sleepy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dynshape.backends]\nsleepy = dynshape_fake_backends:Sleepy\n")
    path = [str(site), str(FIXTURES), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)), DYNSHAPE_FAKE_SLEEP="0.5")


def _records(out: Path) -> list[dict]:
    return [r for f in out.glob("*.jsonl") for r in results.read_records(f)]


def _keys(out: Path) -> collections.Counter:
    return collections.Counter(tuple(r[k] for k in KEY) for r in _records(out))


def _finished_on(out: Path, address: str) -> int:
    """Jobs with all 6 of their records measured on the worker at ``address``."""
    jobs = collections.Counter((r["case"], r["mode"]) for r in _records(out) if address in (r.get("node") or ""))
    return sum(n >= 6 for n in jobs.values())


def _wait(what: str, cond, procs=()) -> None:
    t0 = time.monotonic()
    while not cond():
        for p in procs:
            assert p.poll() is None, f"{p.args[:3]} exited with {p.returncode} while waiting for {what}"
        if time.monotonic() - t0 > LIMIT_S:
            pytest.fail(f"no {what} within {LIMIT_S} s")
        time.sleep(0.2)


def _kill(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def test_a_worker_killed_mid_run_costs_no_record_and_duplicates_none(tmp_path):
    pytest.importorskip("distributed", reason="the 'distributed' extra is not installed (make setup installs it)")
    dask = shutil.which("dask", path=os.path.dirname(sys.executable))
    if dask is None:
        pytest.skip("no `dask` command beside this interpreter")
    env = _env(tmp_path)
    # what a local run of SELECT records: one per job, shape and phase, all passing
    want = collections.Counter(
        (case, "sleepy", mode, 0, i, novel, "pass")
        for case in CASES.split(",")
        for mode in ("static", "unbounded")
        for i in range(len(cases.get(case).sizes_for("quick")))
        for novel in (True, False)
    )
    assert sum(want.values()) == 36

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name, argv):
        return subprocess.Popen(
            [dask, *argv],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            stdout=open(logs / f"{name}.out", "w"),
            stderr=subprocess.STDOUT,
        )

    procs = [start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"])]
    try:
        procs += [
            start(
                f"worker{i}",
                ["worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}"],
            )
            for i in range(2)
        ]
        _wait(
            "two workers on the scheduler",
            lambda: all("Registered to" in (logs / f"worker{i}.out").read_text() for i in range(2)),
            procs,
        )
        (victim,) = re.findall(r"Start worker at:\s*(tcp://\S+)", (logs / "worker1.out").read_text())
        out = tmp_path / "dask"
        run = subprocess.Popen(
            # spawned on the nodes (no zygote to start per node): the submitter's --no-fork-server reaches them
            [sys.executable, "-m", "harness", "run", *SELECT, "--no-fork-server", "--out", str(out), "--scheduler", address],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            # the victim finished a job (whose result it holds) and is some 3 s into its next (its start, then 6 calls
            # of 0.5 s): both what a lost worker used to cost twice
            _wait("a job finished on the victim", lambda: _finished_on(out, victim) > 0, [run, *procs])
            time.sleep(3)
            assert sum(_keys(out).values()) < sum(want.values()), "the run ended before the worker was killed"
            _kill(procs[1])
            _stdout, stderr = run.communicate(timeout=LIMIT_S)
        finally:
            _kill(run)
        got = _keys(out)
        assert got == want, (
            f"missing {want - got}, extra {got - want}\n{stderr[-3000:]}\n" + (logs / "worker1.out").read_text()[-2000:]
        )
        assert {r["machine"]["worker_start"]["how"] for r in _records(out)} == {"spawn"}
    finally:
        for p in procs:
            _kill(p)


def _run_with_a_retry(path: Path) -> None:
    """A run file where a job's first attempt (2 records) was kept beside its full retry."""
    from harness import results

    common = dict(
        run_id="r",
        case="gnn_edge_divide",
        backend="torch_eager",
        mode="static",
        machine={"host": "h"},
        status="pass",
        ok=True,
        compile_delta={"x": 0},
        compiles=0,
        latency_s=1e-3,
    )
    recs = [results.record(**common, shape_index=i, novel=True) for i in range(2)]
    recs += [results.record(**common, shape_index=i, novel=n) for n in (True, False) for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_report_flags_check_fails_and_merge_refuses_duplicate_records(tmp_path, capsys):
    from harness import cli, results

    run = tmp_path / "r.jsonl"
    _run_with_a_retry(run)
    assert results.duplicates(results.load([run])) == [
        "r gnn_edge_divide[torch_eager-static] shape 0 novel on h ×2",
        "r gnn_edge_divide[torch_eager-static] shape 1 novel on h ×2",
    ]
    assert cli.main(["report", str(run), "--csv", str(tmp_path / "r.csv")]) == cli.EXIT_OK
    assert (
        "dynshape: warning: 2 (job, shape, phase) keys have more than one record (an attempt kept beside its "
        "retry?), e.g. r gnn_edge_divide[torch_eager-static] shape 0 novel on h ×2"
    ) in capsys.readouterr().err
    assert cli.main(["report", str(run), "--check", "--csv", str(tmp_path / "r.csv")]) == cli.EXIT_UNEXPECTED
    assert "dynshape: --check fails: 2 duplicated record keys" in capsys.readouterr().err
    assert cli.main(["merge", str(run), "--out", str(tmp_path / "m.jsonl")]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.startswith("dynshape: 2 (job, shape, phase) keys have more than one record, e.g. ")
    assert not (tmp_path / "m.jsonl").exists()
    # the same job in two runs of a directory is no duplicate
    other = tmp_path / "other"
    other.mkdir()
    for name in ("a", "b"):
        (other / f"{name}.jsonl").write_text(run.read_text().replace('"run_id": "r"', f'"run_id": "{name}"').split("\n", 2)[2])
    assert results.duplicates(results.load([other])) == []
