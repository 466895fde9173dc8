"""The zoo in the reports (issue 45): the cost of each row from its records, the
zoo table and leaderboard per library, and ``history --rows``: a row's pass
rate and compiles by commit, with what changed."""

from __future__ import annotations

import pandas as pd
from synthetic import job

from harness import cli, history, results, row_cost, row_history, zoo_reports, zoo_table


def _timed(recs, started: str | None, seconds: list[float], **extra) -> list[dict]:
    """``recs`` with their job's ``started``, each record's timestamp ``seconds`` after 00:00,
    and the versions a worker reports (a job that ran one)."""
    return [
        dict(
            r,
            started=started,
            versions={"python": "3.11"},
            timestamp=f"2026-12-05T00:{int(s) // 60:02d}:{s % 60:06.3f}+00:00",
            **extra,
        )
        for r, s in zip(recs, seconds, strict=True)
    ]


def _job(case, backend, mode="unbounded", **kw):
    return job(case, backend, mode, [0.1] * 3, [0.01] * 3, [1, 1, 1], **kw)


def test_a_rows_cost_is_the_sum_of_its_jobs_wall_times():
    t = "2026-12-05T00:00:{:06.3f}+00:00"
    recs = (
        _timed(_job("zoo_a", "lazy"), t.format(0), [1, 2, 3, 4, 5, 10])  # 10 s
        + _timed(_job("zoo_b", "lazy"), t.format(10), [11, 12, 13, 14, 15, 16])  # 6 s
        + _timed(_job("zoo_a", "torch_eager"), t.format(16), [17, 18, 19, 20, 21, 20], reused_from="old")  # 4 s, reused
    )
    frame = row_cost.costs(pd.DataFrame.from_records(recs, columns=list(results.FIELDS)))
    lazy = frame.set_index("backend").loc["lazy"]
    assert (lazy["jobs"], lazy["measured"], lazy["reused"], lazy["job_s"], lazy["span_s"]) == (2, 2, 0, 16.0, 16.0)
    eager = frame.set_index("backend").loc["torch_eager"]
    # a reused job's cost is the earlier run's; this run spent nothing on the row
    assert (eager["reused"], eager["job_s"]) == (1, 5.0) and pd.isna(eager["span_s"])
    assert "0:00:08" in row_cost.markdown(frame, jobs=2)  # 16 s of lazy jobs at --jobs 2


def test_a_job_decided_without_a_worker_costs_nothing():
    recs = _timed(_job("zoo_a", "lazy"), None, [1, 2, 3, 4, 5, 10])
    skipped = [dict(recs[0], status="unsupported", versions=None, shape_index=None, novel=None)]
    walls = row_cost.job_walls(
        pd.DataFrame.from_records(recs + [dict(r, case="zoo_b") for r in skipped], columns=list(results.FIELDS))
    )
    assert list(walls["case"]) == ["zoo_a"]


def test_without_started_a_job_starts_when_the_one_before_it_ended():
    recs = _timed(_job("zoo_a", "lazy"), None, [1, 2, 3, 4, 5, 10]) + _timed(
        _job("zoo_b", "lazy"), None, [11, 12, 13, 14, 15, 17]
    )
    walls = row_cost.job_walls(pd.DataFrame.from_records(recs, columns=list(results.FIELDS)))
    by = walls.set_index("case")
    assert by.loc["zoo_b", "wall_s"] == 7.0 and by["estimated"].all()
    assert pd.isna(by.loc["zoo_a", "wall_s"])  # the run's first job: nothing before it


def test_the_zoo_splits_by_library_then_all(monkeypatch):
    from cases import zoo

    monkeypatch.setattr(
        zoo,
        "table",
        lambda: {"zoo_timm": {"zoo_timm_a": {}}, "zoo_diffusers": {"zoo_diff_b": {}}, "zoo_hf": {"zoo_hf_c": {}}},
    )
    recs = [r for c in ("zoo_timm_a", "zoo_diff_b", "zoo_hf_c", "gnn_x") for b in ("torch_eager", "lazy") for r in _job(c, b)]
    df = pd.DataFrame.from_records(recs, columns=list(results.FIELDS))
    parts = zoo_table.by_library(df)
    assert list(parts) == ["transformers", "timm", "diffusers", "all"]
    assert set(parts["timm"]["case"]) == {"zoo_timm_a"} and set(parts["all"]["case"]) == {"zoo_timm_a", "zoo_diff_b", "zoo_hf_c"}
    text = zoo_reports.by_library_markdown(df)
    assert "### timm (1 architectures)" in text and "### all (3 architectures)" in text
    assert text.count("| lazy | unbounded | 1/1 |") == 3 and "| lazy | unbounded | 3/3 |" in text


def test_history_rows_show_a_pass_rate_and_compile_change_per_row(tmp_path, capsys):
    """Two commits of a two-architecture zoo row: at the second, one architecture
    mismatches and one compiles per size; the row's counts move and the job is named."""
    out = tmp_path / "results"
    for i, commit in enumerate(("a" * 40, "b" * 40)):
        recs = job("zoo_x", "lazy", "unbounded", [0.1] * 3, [0.01] * 3, [1, 2, 3] if i else [1, 1, 1], run_id=f"r{i}")
        recs += job(
            "zoo_y", "lazy", "unbounded", [0.1] * 3, [0.01] * 3, [1, 1, 1], status="mismatch" if i else "pass", run_id=f"r{i}"
        )
        with results.Writer(out / f"r{i}.jsonl") as w:
            for r in recs:
                w.write(dict(r, commit=commit, machine={"host": "vm"}, timestamp=f"2026-12-0{i + 1}T00:00:00.000+00:00"))
    rows = row_history.rows(history.history(results_dir=out))
    assert list(rows["passed"]) == [2, 1] and list(rows["once"]) == [2, 0]
    assert rows["d_passed"].iloc[1] == -1 and rows["d_compiles"].iloc[1] == 2
    assert rows["changed"].iloc[1] == "zoo_y pass→mismatch"
    assert cli.main(["history", "--rows", "--results", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| 1 (-1) | 0 (-2) |" in printed and "zoo_y pass→mismatch" in printed
