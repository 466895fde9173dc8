"""The command line: list, run, report; unknown names exit 2 naming the valid ones."""

import json

import pytest

from harness import cli, results


def test_list_json_shape(capsys):
    assert cli.main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    case = {c["name"]: c for c in data["cases"]}["gnn_edge_divide"]
    assert case["dims"] == {"e": {"kind": "bounded", "max": 2048}, "d": {"kind": "static", "size": 8}}
    assert set(case) >= {"name", "tags", "dims"}
    for b in data["backends"]:
        assert set(b) >= {"name", "modes", "env", "available", "reason"}


@pytest.mark.parametrize("flag,value,what", [("--cases", "nope", "case"), ("--backends", "tpu*", "backend"),
                                              ("--modes", "dynamic", "mode")])
def test_unknown_names_exit_2_and_list_valid_ones(flag, value, what, capsys, tmp_path):
    assert cli.main(["run", flag, value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"unknown {what} {value!r}; valid:" in err
    assert not list(tmp_path.glob("*.jsonl"))


def test_run_writes_records_and_prints_the_report(tmp_path, capsys):
    code = cli.main(["run", "--cases", "gnn_edge_divide", "--backends", "torch_eager", "--modes", "unbounded",
                     "--out", str(tmp_path), "--repeats", "2", "--no-progress", "--check"])
    assert code == 0  # --check: the job conforms to cases/expectations.toml
    out = capsys.readouterr().out
    assert "| gnn_edge_divide | torch_eager | unbounded | pass | = 0/shape | 3 | 0 |" in out
    df = results.load([tmp_path])
    assert len(df) == 6 and set(df["status"]) == {"pass"}
    novel = df[df["novel"] == True]  # noqa: E712
    assert list(novel["sizes"]) == [{"e": 1000}, {"e": 1001}, {"e": 1002}]
    assert novel["versions"].iloc[0]["torch"] == "2.13.0+cpu"
    assert list(tmp_path.glob("*.report.csv"))
    # report re-reads the latest run
    assert cli.main(["report", str(tmp_path)]) == 0
    assert "| gnn_edge_divide | torch_eager | unbounded | pass |" in capsys.readouterr().out


def _records(path, recs):
    with results.Writer(path) as w:
        for r in recs:
            w.write(r)


@pytest.mark.parametrize("change,exit_code,says", [
    (None, 0, "check: all 1 jobs as expected"),
    ("recompiled", 1, "gnn_edge_divide[torch_eager-unbounded]: recompiled"),
    ("norule", 1, "gnn_edge_divide[torch_tpu-unbounded]: pass: no rule"),
    ("more", 1, "gnn_edge_divide[torch_eager-unbounded]: pass: ≠ 0/shape: shape 1"),
])
def test_check_exits_1_on_unexpected_recompiled_or_unruled_jobs(change, exit_code, says, tmp_path, capsys):
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from synthetic import job

    recs = job("gnn_edge_divide", "torch_tpu" if change == "norule" else "torch_eager", "unbounded",
               [1e-3] * 3, [1e-5] * 3, [0, 1, 1] if change == "more" else [0, 0, 0],
               status="pass")
    if change == "recompiled":
        recs[-1]["status"] = "recompiled"
    _records(tmp_path / "r.jsonl", recs)
    assert cli.main(["report", str(tmp_path / "r.jsonl"), "--check", "--csv", str(tmp_path / "r.csv")]) == exit_code
    assert says in capsys.readouterr().err
