"""compare: compile deltas, latency ratios and the verdict; the CLI's exit code."""

import pytest

from harness import cli, compare, results

from synthetic import frame, job


def _runs(b_compiles, b_cached, b_status="pass"):
    a = frame(job("c", "x", "static", [0.1, 0.1], [1e-4, 1e-4], [1, 1], run_id="A"))
    b = frame(job("c", "x", "static", [0.1, 0.1], [b_cached, b_cached], b_compiles, status=b_status, run_id="B"))
    return compare.compare(a, b, max_slowdown=1.5).iloc[0]


def test_same_figures_are_ok():
    r = _runs([1, 1], 1e-4)
    assert r["verdict"] == "ok" and not r["regression"] and r["cached_ratio"] == pytest.approx(1.0)


def test_more_compiles_is_a_regression():
    r = _runs([1, 2], 1e-4)
    assert r["compile_delta"] == 1 and r["regression"] and "more compiles" in r["verdict"]


def test_slowdown_beyond_threshold_is_a_regression_within_is_not():
    assert _runs([1, 1], 1.6e-4)["regression"]
    assert not _runs([1, 1], 1.4e-4)["regression"]


def test_improvements_are_reported_not_failed():
    r = _runs([0, 0], 0.5e-4)
    assert not r["regression"] and r["verdict"] == "fewer compiles, faster"


def test_status_change_is_a_regression():
    assert _runs([1, 1], 1e-4, b_status="mismatch")["regression"]


def _write(path, df):
    with results.Writer(path) as w:
        for rec in df.to_dict("records"):
            w.write(rec)


def test_cli_exit_codes_and_resolution_by_run_id(tmp_path, capsys):
    a = frame(job("c", "x", "static", [0.1, 0.1], [1e-4, 1e-4], [1, 1], run_id="A"))
    b = frame(job("c", "x", "static", [0.1, 0.1], [1e-4, 1e-4], [1, 2], run_id="B"))
    _write(tmp_path / "A.jsonl", a)
    _write(tmp_path / "B.jsonl", b)
    assert cli.main(["compare", "A", "A", "--results", str(tmp_path)]) == 0
    assert cli.main(["compare", "A", "B", "--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "| c | x | static | 1 | 2 |" in out and "more compiles" in out
    assert cli.main(["compare", "A", "nonexistent", "--results", str(tmp_path)]) == 2
