"""An interrupted run keeps every record written and ``run --resume`` finishes
it: only missing and incomplete jobs run again, appending to the same run, and
the result has the job set of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cases
from harness import cli, registry, results, resume, runner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SELECT = ["--cases", "gnn_edge_divide,gnn_rbf_subtract", "--backends", "sleepy", "--modes", "static,unbounded"]
FLAGS = ["--repeats", "1", "--warmup", "0", "--no-progress"]

# a parent process whose registry holds the fixture's ``sleepy`` backend
PARENT = """
import signal, sys
# Ctrl-C as at a terminal, whatever this test's process left ignored or blocked (a child inherits
# both: Python then installs no KeyboardInterrupt, or the signal never arrives); said on stderr
was = signal.getsignal(signal.SIGINT), signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
if was != (signal.default_int_handler, False):
    print(f"test parent: SIGINT handler was {was[0]}, blocked {was[1]}", file=sys.stderr)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
from harness import cli, registry
import dynshape_fake_backends as f
b = f.Sleepy(); b.spec = "dynshape_fake_backends:Sleepy"
registry.backends = lambda: {"sleepy": b}
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.fixture
def sleepy(fake_backends, monkeypatch):
    b = fake_backends("Sleepy")
    monkeypatch.setattr(registry, "backends", lambda: {"sleepy": b})
    return b


def _start(out, sleep, stall_unless=None):
    env = dict(
        os.environ,
        DYNSHAPE_FAKE_SLEEP=str(sleep),
        DYNSHAPE_TEST_MARK=str(out),
        PYTHONPATH=os.pathsep.join([str(FIXTURES), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    if stall_unless:
        env["DYNSHAPE_FAKE_STALL_UNLESS"] = stall_unless
    return subprocess.Popen(
        [sys.executable, "-c", PARENT, "run", *SELECT, "--out", str(out), *FLAGS],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_records(out, n, proc, limit=60):
    """Wait until the run has ``n`` records on disk (the first job's 6 and one of the second's)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        files = list(out.glob("*.jsonl"))
        # records, not the lines defining the values they share (harness.run_file)
        if files and sum('"status": ' in line for line in files[0].read_text().splitlines()) >= n:
            return files[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"no {n} records within {limit}s")


def _marked(out) -> list[int]:
    """Processes (the parent, its workers) started with ``DYNSHAPE_TEST_MARK=out``."""
    mark = f"DYNSHAPE_TEST_MARK={out}".encode()
    pids = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark in env.read_bytes().split(b"\0"):
                pids.append(int(env.parent.name))
        except OSError:
            pass
    return pids


def _jobs(path):
    return sorted(
        {(r["case"], r["backend"], r["mode"], r["shape_index"], r["novel"], r["status"]) for r in results.read_records(path)}
    )


def test_killed_run_resumes_to_the_job_set_of_an_uninterrupted_run(sleepy, tmp_path, capsys, monkeypatch):
    out = tmp_path / "interrupted"
    proc = _start(out, sleep=0.1)
    path = _wait_for_records(out, 7, proc)
    assert len(_marked(out)) >= 2  # the parent and its worker
    proc.kill()  # no cleanup in the parent: its worker dies with it (PDEATHSIG)
    proc.wait()
    t0 = time.monotonic()
    while _marked(out) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert _marked(out) == []
    run_id = path.stem
    before = results.read_records(path)
    plan = json.loads((out / f"{run_id}.plan.json").read_text())
    assert len(plan["jobs"]) == 4 and plan["profile"] == "quick" and plan["repeats"] == 1

    monkeypatch.setenv("DYNSHAPE_FAKE_SLEEP", "0")
    code = cli.main(["run", "--resume", run_id, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert f"run {run_id}: resuming, 3 jobs missing or incomplete" in err
    assert code == cli.EXIT_UNEXPECTED  # the fixture backend has no rule in cases/expectations.toml
    after = results.read_records(path)
    assert after[:6] == before[:6]  # the finished job's records are kept, untouched
    assert {r["run_id"] for r in after} == {run_id} and len(list(out.glob("*.jsonl"))) == 1
    partial = results.read_records(out / f"{run_id}.incomplete")
    assert partial == before[6:] and partial  # the cut-short job's records are set aside, not lost

    ref = runner.Runner(tmp_path / "whole", profile="quick", repeats=1, warmup=0, progress=False)
    combos = runner.plan("gnn_edge_divide,gnn_rbf_subtract", "sleepy", "static,unbounded")
    assert _jobs(path) == _jobs(ref.run(combos))
    assert len(after) == len(results.read_records(ref.path)) == 24  # no job twice

    # resuming a finished run runs nothing
    _runner, pending = resume.resume(out, run_id)
    assert pending == [] and results.read_records(path) == after


def test_ctrl_c_kills_the_workers_and_says_how_to_resume(sleepy, tmp_path):
    out = tmp_path / "r"
    # the first job runs through; the others stall after their first call, so that the run is still
    # running when Ctrl-C comes, however late this process sees the 7th record (at 0.1 s a call alone,
    # a fresh-clone CI run once got exit code 1, the code of a run that finished: this fixture backend
    # has no rule; the stderr of any such failure is in the assertion now)
    proc = _start(out, sleep=0.1, stall_unless="gnn_edge_divide:static")
    path = _wait_for_records(out, 7, proc)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the run went on 30 s after Ctrl-C; its stderr: {err[-3000:]}")
    assert proc.returncode == cli.EXIT_INTERRUPTED, err[-3000:]
    assert _marked(out) == []  # the worker was killed before the parent exited
    run_id = path.stem
    assert err.rstrip().endswith(
        f"dynshape: interrupted; every record written is kept in {path}; finish the run with\n"
        f"  dynshape run --resume {run_id} --out {out}"
    )
    _, pending = resume.resume(out, run_id)
    assert 0 < len(pending) < 4 and ("gnn_edge_divide", "static") not in {(c.case.name, c.mode) for c in pending}


def test_ctrl_c_while_reporting_says_the_run_is_complete(sleepy, tmp_path, capsys, monkeypatch):
    """Ctrl-C after the last record (while the report is written): exit code 130 and where the
    complete run is, not a traceback (exit code 1, as a Ctrl-C there gave before)."""
    from harness import report

    def interrupted(df):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "summary", interrupted)
    monkeypatch.setenv("DYNSHAPE_FAKE_SLEEP", "0")
    try:
        code = cli.main(["run", *SELECT, "--out", str(tmp_path), *FLAGS])
    except KeyboardInterrupt:
        pytest.fail("a Ctrl-C while reporting escaped cli.main (a traceback and exit code 1)")
    assert code == cli.EXIT_INTERRUPTED
    (path,) = tmp_path.glob("*.jsonl")
    assert len(results.read_records(path)) == 24
    assert capsys.readouterr().err.endswith(
        f"dynshape: interrupted while reporting; the run is complete in {path}; its report:\n  dynshape report {path}\n"
    )


def test_resume_of_an_unknown_run_names_the_resumable_ones(sleepy, tmp_path, capsys):
    runner.Runner(tmp_path, run_id="r1", progress=False).write_plan(
        [runner.Combo(cases.get("gnn_edge_divide"), registry.backends()["sleepy"], "static")]
    )
    assert cli.main(["run", "--resume", "nope", "--out", str(tmp_path)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == f"dynshape: no run 'nope' in {tmp_path}/; resumable runs: r1\n"
    assert cli.main(["run", "--resume", "r1", "--cases", "x", "--out", str(tmp_path)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == "dynshape: --resume runs the jobs the run planned; drop --cases\n"


def test_complete_jobs_reads_what_measure_writes():
    def rec(i, novel, status="pass"):
        return {"case": "gnn_edge_divide", "backend": "b", "mode": "static", "shape_index": i, "novel": novel, "status": status}

    whole = [rec(0, True), rec(1, True, "error"), rec(2, True), rec(0, False), rec(2, False)]
    key = ("gnn_edge_divide", "b", "static", None)  # no release environment (--versions)
    assert resume.complete_jobs(whole, "quick") == {key}
    assert resume.complete_jobs(whole[:-1], "quick") == set()  # a cached record missing
    assert resume.complete_jobs(whole[:2], "quick") == set()  # a shape missing
    crashed = [rec(0, True), {**rec(None, None, "crashed")}]
    assert resume.complete_jobs(crashed, "quick") == {key}  # a job-level record ends the job
