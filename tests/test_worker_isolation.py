"""A crash, an abort, a hang or an exception in a worker becomes a status; the
run goes on and keeps what was measured before."""

import pytest

import cases
from harness import results, runner


def _run(backend, tmp_path, timeout=None, case="gnn_edge_divide"):
    combo = runner.Combo(cases.get(case), backend, "unbounded")
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, timeout_s=timeout, progress=False)
    got = []
    r.run_one(combo, got.append)
    return got


def test_abort_is_recorded_as_crashed_and_keeps_earlier_records(fake_backends, tmp_path):
    got = _run(fake_backends("Crasher"), tmp_path)
    assert [r["status"] for r in got] == ["pass", "crashed"]
    assert got[0]["shape_index"] == 0 and got[0]["ok"] is True
    assert "SIGABRT" in got[1]["message"] and "after 1 records" in got[1]["message"]


def test_hang_is_recorded_as_timeout(fake_backends, tmp_path):
    got = _run(fake_backends("Hanger"), tmp_path, timeout=6)  # its first shape takes ~0.1 s
    assert [r["status"] for r in got] == ["pass", "timeout"]
    assert got[1]["message"] == (
        "killed (SIGKILL) after no result within 6s; 1 records were measured before; stderr: fake: waiting forever"
    )


def test_exception_in_one_shape_does_not_stop_the_sweep(fake_backends, tmp_path):
    got = _run(fake_backends("Raiser"), tmp_path)
    novel = [r for r in got if r["novel"]]
    assert [r["status"] for r in novel] == ["pass", "error", "pass"]
    assert "deliberate failure" in novel[1]["message"]
    cached = [r for r in got if r["novel"] is False]
    assert sorted(r["shape_index"] for r in cached) == [0, 2]  # only shapes that passed


def test_wrong_answer_is_a_mismatch_with_errors(fake_backends, tmp_path):
    got = _run(fake_backends("WrongAnswer"), tmp_path)
    assert [r["status"] for r in got] == ["mismatch"] * 3  # no cached phase for failed shapes
    assert all(r["max_abs_err"] == pytest.approx(1.0) for r in got)  # the fixture adds exactly 1


def test_run_streams_every_record_to_disk(fake_backends, tmp_path):
    combos = [
        runner.Combo(cases.get("gnn_edge_divide"), fake_backends("Crasher"), "static"),
        runner.Combo(cases.get("gnn_rbf_subtract"), fake_backends("Raiser"), "static"),
    ]
    path = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False).run(combos)
    lines = results.read_records(path)
    assert [(l["case"], l["novel"], l["status"]) for l in lines] == [
        ("gnn_edge_divide", True, "pass"),
        ("gnn_edge_divide", None, "crashed"),
        ("gnn_rbf_subtract", True, "pass"),
        ("gnn_rbf_subtract", True, "error"),
        ("gnn_rbf_subtract", True, "pass"),
        ("gnn_rbf_subtract", False, "pass"),
        ("gnn_rbf_subtract", False, "pass"),
    ]
    assert all(l["schema"] == results.SCHEMA and l["run_id"] == lines[0]["run_id"] for l in lines)
