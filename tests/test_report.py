"""Report arithmetic on synthetic records."""

import pandas as pd
import pytest
from synthetic import frame, job

import cases
from harness import columns, report, results


def _frame():
    return frame(
        job("c", "torch_eager", "unbounded", [0.001, 0.001, 0.002], [1e-5, 2e-5, 3e-5], [0, 0, 0], prepare_s=0.0),
        job(
            "c",
            "einx",
            "static",
            [0.1, 0.2, 0.3],
            [2e-5, 4e-5, 6e-5],
            [1, 2, 3],
            startup_s=1.5,
            reasons={0: ["einx_graph: new shapes ((1, 8),)"], 1: ["einx_graph: new shapes ((2, 8),)"]},
        ),
        job("c", "torch_compile", "unbounded", [2.0, 0.01, 0.01], [1e-5, 1e-5, 1e-5], [1, 1, 1], prepare_s=0.5),
        [
            results.record(
                run_id="r", case="c", backend="jax_jit", mode="unbounded", status="unsupported", message="no unbounded mode"
            )
        ],
    )


def _summary():
    return report.summary(_frame()).set_index(["backend", "mode"])


def test_compiles_shapes_and_times():
    s = _summary()
    einx = s.loc[("einx", "static")]
    assert einx["shapes"] == 3 and einx["compiles"] == 3 and einx["compiles_per_shape"] == 1.0
    assert einx["novel_sweep_s"] == pytest.approx(0.6)
    assert einx["cached_median_s"] == pytest.approx(4e-5)
    assert einx["max_abs_err"] == pytest.approx(3e-7)
    tc = s.loc[("torch_compile", "unbounded")]
    assert tc["compiles"] == 1 and tc["compiles_per_shape"] == pytest.approx(1 / 3)


def test_novel_sweep_includes_prepare_and_start_up_stands_apart():
    s = _summary()
    # every backend by one rule: prepare + the first calls
    assert s.loc[("torch_compile", "unbounded")]["novel_sweep_s"] == pytest.approx(0.5 + 2.02)
    assert s.loc[("torch_compile", "unbounded")]["prepare_s"] == pytest.approx(0.5)
    assert s.loc[("einx", "static")]["startup_s"] == pytest.approx(1.5)
    assert s.loc[("einx", "static")]["novel_sweep_s"] == pytest.approx(0.6)


def test_why_is_the_first_recompile_reason():
    s = _summary()
    assert s.loc[("einx", "static")]["why"] == "shape 1: einx_graph: new shapes ((2, 8),)"
    assert s.loc[("torch_compile", "unbounded")]["why"] == ""  # one compile, on the first shape


def test_ratios_against_torch_eager_fall_back_to_any_mode():
    s = _summary()
    # einx ran static; eager only unbounded: ratios use eager's unbounded row
    assert s.loc[("einx", "static")]["novel_vs_eager"] == pytest.approx(0.6 / 0.004)
    assert s.loc[("einx", "static")]["cached_vs_eager"] == pytest.approx(2.0)
    assert s.loc[("torch_eager", "unbounded")]["cached_vs_eager"] == pytest.approx(1.0)


def test_status_is_the_worst_record():
    df = frame(job("c", "b", "static", [0.1, 0.1], [], [1, 2]))
    df.loc[1, "status"] = "mismatch"
    df.loc[1, "message"] = "3 of 8 elements outside"
    s = report.summary(df).iloc[0]
    assert s["status"] == "mismatch" and "3 of 8" in s["message"]


def test_markdown_lists_measured_rows_and_not_run_jobs():
    text = report.markdown(_summary().reset_index())
    # human units, the cached median with its IQR, "–" where a value does not apply
    assert "| c | einx | static | pass | 3 | 3 | 1.00 | x=3 | 1.50 s | – | 600 ms | – | 40.0 µs (38.0–42.0) |" in text
    assert "Not run (1):\n- jax_jit, unsupported: no unbounded mode: c[unbounded]" in text
    assert "150.0×" in text  # einx novel sweep vs eager


def test_seconds_are_formatted_with_units():
    assert report.fmt_seconds(2.5) == "2.50 s"
    assert report.fmt_seconds(0.0123) == "12.3 ms"
    assert report.fmt_seconds(1.53e-5) == "15.3 µs"
    assert report.fmt_seconds(4.2e-6) == "4.20 µs"
    assert report.fmt_seconds(8.5e-8) == "85.0 ns"
    assert report.fmt_seconds(123.4) == "123 s"
    assert report.fmt_seconds(None) == "–"


def test_annotate_states_what_the_expectations_file_says():
    from harness import expectations as ex

    rules = [
        ex.Rule(backend="einx", per_shape="1", index=0),
        ex.Rule(backend="torch_compile", per_shape="1", index=1),
        ex.Rule(backend="jax_jit", per_shape="0", xfail="known", match="x", index=2),
    ]
    df = _frame()
    s = report.annotate(report.summary(df), df, rules).set_index(["backend", "mode"])
    assert s.loc[("einx", "static")]["expected"] == "= 1/shape"
    assert s.loc[("torch_compile", "unbounded")]["expected"] == (
        "≠ 1/shape: shape 1: 0 compile(s) (none), expected 1 = 1 (rule #2 (case=* backend=torch_compile mode=*))"
    )
    assert s.loc[("torch_eager", "unbounded")]["expected"] == "no rule"
    assert s.loc[("jax_jit", "unbounded")]["expected"] == ""  # unsupported rows are not judged


def test_select_filters_by_globs():
    s = _summary().reset_index()
    assert set(report.select(s, backends="torch_*")["backend"]) == {"torch_eager", "torch_compile"}
    assert set(report.select(s, modes="static")["backend"]) == {"einx"}
    with pytest.raises(cases.CaseError, match="unknown backend 'tpu'; valid: einx, jax_jit, torch_compile, torch_eager"):
        report.select(s, backends="tpu")


def test_a_runs_summary_is_a_screenful_however_many_jobs():
    """``harness run`` ends with this summary: 1,800 jobs (600 of them not run, as
    on the catalogue) still give a handful of lines, with the report's paths."""
    from harness import expectations as ex

    rows, verdicts = [], {}
    for i in range(1800):
        status = "pass" if i < 1150 else "error" if i < 1170 else "unsupported" if i < 1500 else "skipped"
        key = (f"case{i // 30}", f"backend{i % 6}", ("static", "unbounded", "bounded", "bucketed", "x")[i % 5])
        rows.append(
            {
                "case": key[0],
                "backend": key[1],
                "mode": key[2],
                "status": status,
                "message": "no such mode" if status in ("unsupported", "skipped") else "",
            }
        )
        outcome = {"pass": "pass", "error": "xfail"}.get(status, "idle")
        verdicts[key] = ex.Verdict("fail" if i == 7 else outcome, ["shape 1: 2 compiles"] if i == 7 else [])
    text = report.run_summary(
        pd.DataFrame(rows),
        verdicts,
        "results/r.jsonl",
        {"HTML report": "results/r.report.html", "report CSV": "results/r.report.csv"},
    )
    lines = text.splitlines()
    assert len(lines) <= 8, text
    # what ran first, then one line for what was planned and did not run, by reason
    assert lines[0] == "1170 jobs ran: 1150 pass, 20 error"
    assert lines[1] == "by expectation: 1149 pass, 20 xfail, 1 fail (1 unexpected: listed below)"
    assert lines[2].startswith("planned, not run: 630 (330 no such mode, 300 unavailable here); the reasons: ")
    assert "HTML report: results/r.report.html" in lines and "report CSV: results/r.report.csv" in lines
    assert "the full table: dynshape report results/r.jsonl" in lines


def test_a_new_column_is_one_definition(monkeypatch, tmp_path):
    """A column is one entry of ``harness.columns.COLUMNS``: with ``agg`` the
    summary computes it, and Markdown, the CSV and the HTML report show it."""
    from harness import columns
    from harness import html_report as html

    col = columns.Column(
        "slowest_first_call_s",
        "slowest first call",
        "seconds",
        "the slowest first call",
        agg=lambda g: g["latency_s"][g["novel"].fillna(False)].max(),
    )
    monkeypatch.setattr(columns, "COLUMNS", [*columns.COLUMNS, col])
    monkeypatch.setattr(report, "NAMES", [c.name for c in columns.COLUMNS])
    df = _frame()
    rows = report.annotate(report.summary(df), df, rules=[])
    assert rows.set_index("backend").loc["torch_compile", "slowest_first_call_s"] == pytest.approx(2.0)
    assert "| slowest first call |" in report.markdown(rows) and "| 2.00 s |" in report.markdown(rows)
    assert "**slowest first call**: the slowest first call" in report.markdown(rows)
    report.csv_frame(rows).to_csv(tmp_path / "r.csv", index=False)
    assert "slowest_first_call_s" in pd.read_csv(tmp_path / "r.csv").columns
    page = html.render(df, rules=[])
    assert ">slowest first call</th>" in page and "<td class=n>2.00 s</td>" in page


def test_host_padding_and_copies_show_as_their_own_columns_where_recorded():
    df = _frame()
    assert "pad_s" not in report.summary(df).columns and "| pad |" not in report.markdown(report.summary(df))
    df = df.assign(pad_s=None, h2d_s=None, d2h_s=None)
    cached_tc = (df["backend"] == "torch_compile") & (df["novel"] == False)  # noqa: E712
    df.loc[cached_tc, ["pad_s", "h2d_s", "d2h_s"]] = [5e-6, 3e-6, 2e-6]
    s = report.summary(df).set_index("backend")
    assert s.loc["torch_compile", "end_to_end_s"] == pytest.approx(1e-5 + 1e-5)  # the call + pad + copies
    assert s.loc["torch_compile", "pad_s"] == pytest.approx(5e-6)
    text = report.markdown(s.reset_index())
    assert "| cached call | pad | host→device | device→host | end to end |" in text
    assert "| 10.0 µs (9.50–10.5) | 5.00 µs | 3.00 µs | 2.00 µs | 20.0 µs |" in text


def test_the_csv_keeps_the_jobs_that_ran_not_the_planned_ones():
    rows = report.summary(_frame())
    idle = rows.iloc[:1].assign(status="skipped", case="never_ran")
    kept = report.csv_frame(pd.concat([rows, idle], ignore_index=True))
    ran = rows[~rows["status"].astype(str).isin(columns.IDLE)]
    assert 0 < len(ran) == len(kept) and "never_ran" not in set(kept["case"])
