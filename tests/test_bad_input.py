"""Bad input gets one line naming the problem and exit code 2 (a failing job
is 1): every case here used to end in a traceback, or worse in silence."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

import cases
from harness import cli, cluster, expectations, results, runner

SELECT = ["--cases", "gnn_edge_divide", "--backends", "torch_eager", "--modes", "static", "--no-progress"]


def _usage(argv, capsys) -> str:
    """Run the CLI in this process; it must exit 2 with one ``dynshape:`` line and no traceback."""
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("dynshape:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("shard", ["3/2", "0/2"])
def test_a_shard_out_of_range(shard, tmp_path, capsys):
    assert _usage(["run", *SELECT, "--out", str(tmp_path), "--shard", shard], capsys) == (
        f"dynshape: --shard '{shard}': give i/n with 1 <= i <= n, e.g. 1/2"
    )


def test_out_naming_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert _usage(["run", *SELECT, "--out", str(tmp_path / "f")], capsys) == (
        f"dynshape: --out {tmp_path / 'f'}: is a file, not a directory"
    )
    assert _usage(["run", *SELECT, "--out", str(tmp_path / "f" / "sub")], capsys) == (
        f"dynshape: --out {tmp_path / 'f' / 'sub'}: cannot write there: Not a directory"
    )


def test_a_read_only_out(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    immutable = False
    if os.geteuid() == 0:  # root writes through the mode bits: make the directory immutable instead
        immutable = subprocess.run(["chattr", "+i", str(ro)], capture_output=True).returncode == 0
        if not immutable:
            pytest.skip("running as root without chattr: no directory is read-only")
    try:
        assert _usage(["run", *SELECT, "--out", str(ro)], capsys).startswith(f"dynshape: --out {ro}: cannot write there: ")
        assert not list(ro.iterdir())
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro)], check=True)
        ro.chmod(0o755)


def test_a_scheduler_that_is_not_an_address(tmp_path, capsys):
    pytest.importorskip("distributed")
    assert _usage(["run", *SELECT, "--out", str(tmp_path), "--scheduler", "banana"], capsys).startswith(
        "dynshape: --scheduler banana: not a scheduler address ("
    )


def test_a_scheduler_nobody_listens_at(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2.0)
    with socket.socket() as s:  # a port that was free a moment ago, on this machine only
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    assert _usage(["run", *SELECT, "--out", str(tmp_path), "--scheduler", address], capsys).startswith(
        f"dynshape: --scheduler {address}: no Dask scheduler answered within 2 s ("
    )
    assert not list(tmp_path.glob("*.jsonl"))


@pytest.mark.parametrize("command", ["report", "merge"])
def test_a_results_line_that_is_not_a_record(command, tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"schema": 2}) + "\n")
    extra = ["--out", str(tmp_path / "m.jsonl")] if command == "merge" else []
    assert _usage([command, str(path), *extra], capsys) == (f"dynshape: {path}:1: field 'run_id' missing: not a record of a run")


def test_a_results_field_of_the_wrong_type(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    rec = results.record(
        run_id="r", case="gnn_edge_divide", backend="torch_eager", mode="static", status="pass", latency_s="slow"
    )
    path.write_text(json.dumps(rec) + "\n")
    assert _usage(["report", str(path)], capsys) == (f"dynshape: {path}:1: field 'latency_s' is 'slow' (a str), expected number")


@pytest.mark.parametrize(
    "text,why",
    [
        ('{"run_id": "r1", "jobs": [["gnn_edge_divide", "torch_eager"', "corrupt plan, not JSON (Expecting"),
        ("[1, 2]", "not a plan (a JSON list, not an object)"),
        (
            '{"jobs": [["gnn_edge_divide", 3, "static"]]}',
            "jobs[0] is ['gnn_edge_divide', 3, 'static'], not [case, backend, mode]",
        ),
        ('{"jobs": [], "repeats": "7"}', "field 'repeats' is '7', of the wrong type"),
    ],
)
def test_a_corrupt_plan_under_resume(text, why, tmp_path, capsys):
    (tmp_path / "r1.plan.json").write_text(text)
    line = _usage(["run", "--resume", "r1", "--out", str(tmp_path)], capsys)
    assert line.startswith(f"dynshape: {tmp_path / 'r1.plan.json'}: {why}")
    assert line.endswith("; the run cannot be resumed from it (start a new run)")


def test_a_plan_naming_a_mode_its_case_lacks(tmp_path, capsys):
    (tmp_path / "r1.plan.json").write_text('{"jobs": [["gnn_edge_divide", "torch_eager", "sideways"]]}')
    assert _usage(["run", "--resume", "r1", "--out", str(tmp_path)], capsys).startswith(
        "dynshape: run 'r1' planned gnn_edge_divide[torch_eager-sideways], but case 'gnn_edge_divide' has no mode 'sideways'"
    )


def test_a_typo_in_the_expectations_stops_the_run_before_any_job(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "expectations.toml"
    bad.write_text('[[expect]]\ncase = "gnn_edge_divide"\nper_shpe = "0"\n')
    monkeypatch.setattr(expectations, "DEFAULT", bad)
    ran = []
    monkeypatch.setattr(runner.Runner, "run_one", lambda self, combo, sink: ran.append(combo))
    out = tmp_path / "out"
    assert _usage(["run", *SELECT, "--out", str(out)], capsys) == (
        f"dynshape: {bad}: rule #1, key 'per_shpe': unknown key; valid: {', '.join(sorted(expectations.KEYS))}"
    )
    assert ran == [] and not list(out.glob("*.jsonl"))


def test_a_negative_static_dim_is_refused_naming_the_dim():
    with pytest.raises(cases.CaseError) as e:
        cases.static("d", -2)
    assert str(e.value) == "dim 'd': size must be a non-negative integer, got -2"
    with pytest.raises(cases.CaseError, match=r"dim 'e': max 3 is below min 5"):
        cases.bounded("e", 3, min=5)
    with pytest.raises(cases.CaseError, match=r"dim '2x': a dim name must be an identifier"):
        cases.unbounded("2x")


@pytest.mark.parametrize("name", ["pk_glob[1]", "a*", "x,y", "", "1st"])
def test_a_case_name_that_globs_cannot_select_is_refused(name):
    with pytest.raises(cases.CaseError) as e:
        cases.Case(
            name=name,
            tags=(),
            dims=(cases.static("d", 2),),
            inputs=(cases.Input("x", ("d",)),),
            sweep=(),
            quick=(),
            oracle=lambda x: x,
            out_shape=("d",),
        )
    assert str(e.value).startswith(f"case {name!r}, field 'name': must be letters, digits, ")
