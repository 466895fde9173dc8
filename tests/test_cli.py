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
                     "--out", str(tmp_path), "--repeats", "2", "--no-progress"])
    assert code == 0
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
