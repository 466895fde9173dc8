"""The pandas API: the flat record frame and its groupby/merge views."""

import pandas as pd
import pytest
from synthetic import frame, job

from harness import expectations, report, results


def _at(records, run_id, host, commit="c0", day=1, **extra):
    """``records`` as measured in run ``run_id`` on ``host`` at ``commit``."""
    return [
        dict(
            r,
            run_id=run_id,
            machine={"host": host, "cpu": "EPYC", "cores": 2, "threads": 1},
            commit=commit,
            timestamp=f"2026-11-{day:02d}T00:00:00.000+00:00",
            profile="quick",
            **extra,
        )
        for r in records
    ]


def _run(run_id, host, eager_cached, einx_cached, commit="c0", day=1, einx_compiles=(1, 2, 3)):
    return [
        *_at(job("c", "torch_eager", "static", [1e-3] * 3, [eager_cached] * 3, [0, 0, 0]), run_id, host, commit, day),
        *_at(
            job(
                "c",
                "einx",
                "static",
                [0.1, 0.01, 0.01],
                [einx_cached] * 3,
                list(einx_compiles),
                reasons={1: ["einx_graph: new shapes ((2, 8),)"]},
            ),
            run_id,
            host,
            commit,
            day,
        ),
    ]


def test_flat_has_scalar_columns_and_pandas_types():
    recs = _run("r", "vm", 1e-5, 4e-5)
    for _i, r in enumerate(recs):
        r["sizes"] = {"e": 1000 + r["shape_index"], "d": 8}
    df = results.flat(frame(recs))
    assert {"size_e", "size_d", "compiles_x", "new_compiles", "new_compiles_x", "machine_cpu"} <= set(df.columns)
    assert str(df["size_e"].dtype) == "Int64" and str(df["compiles"].dtype) == "Int64"
    assert df["status"].dtype == pd.CategoricalDtype(results.STATUS_ORDER, ordered=True)
    assert list(df["status"].cat.categories[[0, -1]]) == ["pass", "crashed"]
    assert str(df["timestamp"].dtype).startswith("datetime64") and df["machine"].iloc[0] == "vm"
    einx = df[(df["backend"] == "einx") & df["novel"]]
    assert list(einx["new_compiles"]) == [1, 1, 1] and list(einx["size_e"]) == [1000, 1001, 1002]
    assert results.flat(df) is df  # idempotent


def test_load_flatten(tmp_path):
    with results.Writer(tmp_path / "r.jsonl") as w:
        for rec in _run("r", "vm", 1e-5, 4e-5):
            w.write(rec)
    df = results.load([tmp_path], flatten=True)
    assert len(df) == 12 and "compiles_x" in df.columns and df.attrs["flat"]
    df.loc[0, "status"] = "crashed"
    assert df.groupby("backend", observed=True)["status"].max()["torch_eager"] == "crashed"


def test_ratios_to_eager_stay_within_run_and_machine():
    # two runs on two machines: eager is 10 µs on one, 40 µs on the other
    df = frame(_run("r1", "fast", 1e-5, 4e-5), _run("r2", "slow", 4e-5, 8e-5))
    s = report.summary(df).set_index(["machine", "backend"])
    assert s.loc[("fast", "einx"), "cached_vs_eager"] == pytest.approx(4.0)
    assert s.loc[("slow", "einx"), "cached_vs_eager"] == pytest.approx(2.0)
    assert s.loc[("fast", "einx"), "compiles"] == 3 and s.loc[("fast", "einx"), "shapes"] == 3
    assert s.loc[("fast", "einx"), "novel_sweep_s"] == pytest.approx(0.12)
    # the Markdown summary keeps them apart too
    text = report.markdown(report.summary(df))
    assert "| c | einx | static | pass |" in text and "| r1 | fast |" in text and "4.00×" in text and "2.00×" in text


def test_per_shape_has_sizes_compiles_and_reason():
    df = frame(_run("r", "vm", 1e-5, 4e-5))
    p = report.per_shape(df)
    einx = p[p["backend"] == "einx"]
    assert list(einx["new_compiles"]) == [1, 1, 1] and list(einx["shape_index"]) == [0, 1, 2]
    assert einx["reason"].iloc[1] == "einx_graph: new shapes ((2, 8),)"
    assert list(einx["first_call_s"]) == pytest.approx([0.1, 0.01, 0.01])
    assert list(einx["cached_s"]) == pytest.approx([4e-5] * 3)
    text = report.per_shape_markdown(einx)
    assert "| einx | static | 1 | 10.0 ms | 1 | 1 | 40.0 µs (38.0–42.0) | pass | einx_graph: new shapes ((2, 8),) |" in text


def test_conformance_matrix_pivots_status_expectation_and_reason():
    df = frame(_run("r", "vm", 1e-5, 4e-5))
    df.loc[(df["backend"] == "einx") & (df["shape_index"] == 2) & (df["novel"] == False), "status"] = "recompiled"  # noqa: E712
    rules = [expectations.Rule(backend="einx", per_shape="1", index=0)]
    m = report.conformance_matrix(df, rules=rules)
    assert m.loc["c", "einx/static"] == "recompiled" and m.loc["c", "torch_eager/static"] == "pass"
    assert report.conformance_matrix(df, "outcome", rules).loc["c", "torch_eager/static"] == "norule"
    assert report.conformance_matrix(df, "why", rules).loc["c", "einx/static"] == "shape 1: einx_graph: new shapes ((2, 8),)"


def test_history_over_three_commits():
    df = frame(
        _run("r1", "vm", 1e-5, 4e-5, "aaa", 1),
        _run("r2", "vm", 1e-5, 4e-5, "bbb", 2, (1, 1, 1)),
        _run("r3", "vm", 1e-5, 4e-5, "ccc", 3, (1, 1, 1)),
        _run("r3b", "vm", 1e-5, 4e-5, "ccc", 4, (1, 2, 2)),
    )
    h = report.history(df)
    einx = h[h["backend"] == "einx"]
    assert list(einx["commit"]) == ["aaa", "bbb", "ccc"]
    # per shape: a compile per shape, then one compile; at ccc the latest run (r3b) counts
    assert list(einx["compiles_by_shape"]) == [(1, 1, 1), (1, 0, 0), (1, 1, 0)]
    assert list(einx["compiles"]) == [3, 1, 2] and list(einx["run_id"]) == ["r1", "r2", "r3b"]


def test_compile_patterns_and_family_table_classify_each_job_by_its_compiles_shape_by_shape():
    four = [1e-3] * 4
    df = frame(
        job("a1", "torch_eager", "unbounded", four, four, [0, 0, 0, 0]),
        job("a1", "sym", "unbounded", four, four, [1, 1, 1, 1]),
        job("a2", "sym", "unbounded", four, four, [1, 1, 2, 2]),  # once, then again: mixed
        job("a1", "jit", "static", four, four, [1, 2, 3, 4]),
        job("a1", "jit", "bucketed", four, four, [1, 1, 2, 2]),  # two buckets touched
        job("a2", "jit", "bucketed", four, four, [1, 2, 3, 4]),  # a new bucket every shape
        job("b1", "sym", "unbounded", four, four, [1, 1, 1, 1], status="mismatch"),
        job("b1", "jit", "static", [1e-3], [1e-3], [1]),  # one shape: once, never per shape
        [
            results.record(run_id="r", case=c, backend="nope", mode="bounded", status="unsupported", ok=False)
            for c in ("a1", "b1")
        ],
        [results.record(run_id="r", case="b1", backend="jit", mode="bucketed", status="unsupported", ok=False)],
    )
    p = report.compile_patterns(df).set_index(["case", "backend", "mode"])["pattern"]
    assert p[("a1", "torch_eager", "unbounded")] == "none"
    assert p[("a1", "sym", "unbounded")] == "once"
    assert p[("a2", "sym", "unbounded")] == "mixed"
    assert p[("a1", "jit", "static")] == "per shape"
    assert p[("a1", "jit", "bucketed")] == "per bucket"
    assert p[("a2", "jit", "bucketed")] == "per shape"
    assert p[("b1", "sym", "unbounded")] == "mismatch"
    assert p[("b1", "jit", "static")] == "once"
    t = report.family_table(df, families={"a1": "gnn", "a2": "gnn", "b1": "seq"})
    assert list(t.columns) == ["gnn", "seq"]
    assert t.loc["sym/unbounded", "gnn"] == "once 1, mixed 1" and t.loc["sym/unbounded", "seq"] == "mismatch 1"
    assert t.loc["jit/bucketed", "gnn"] == "per bucket 1, per shape 1"
    assert t.loc["jit/bucketed", "seq"] == "unsupported 1" and t.loc["torch_eager/unbounded", "seq"] == "–"
    assert t.loc["jit/static", "gnn"] == "per shape 1" and t.loc["jit/static", "seq"] == "once 1"
    assert "nope/bounded" not in t.index  # a mode no case offers is no row


def test_report_families_prints_the_table(tmp_path, capsys):
    from harness import cli

    with results.Writer(tmp_path / "r.jsonl") as w:
        for rec in _run("r", "vm", 1e-5, 4e-5):
            w.write(rec)
    assert cli.main(["report", str(tmp_path / "r.jsonl"), "--families", "--csv", str(tmp_path / "f.csv")]) == 0
    out = capsys.readouterr().out
    assert "| einx/static" in out and "per shape 1" in out and "none 1" in out
    assert (tmp_path / "f.csv").read_text().startswith("backend/mode,")


def test_verdicts_judge_each_jobs_records_together_whatever_their_order():
    """:func:`frames.verdicts` makes the frame plain once and groups it by job: each job's
    records, in file order, judged as the job alone would be; jobs in order of first record."""
    from harness import frames

    rules = [expectations.Rule(backend="einx", per_shape="1", index=0), expectations.Rule(per_shape="0", index=1)]
    eager = job("c", "torch_eager", "static", [1e-3] * 3, [1e-5] * 3, [0, 0, 0])
    einx = job("c", "einx", "static", [1e-2] * 3, [2e-5] * 3, [1, 2, 4])  # shape 2 compiled twice
    idle = [
        results.record(run_id="r", case=f"z{i}", backend="einx", mode="static", status="skipped", message="m") for i in range(3)
    ]
    mixed = [r for pair in zip(eager, einx, strict=True) for r in pair] + idle  # interleaved, as --jobs 2 writes them
    df = pd.DataFrame.from_records(mixed, columns=list(results.FIELDS))
    got = frames.verdicts(df, rules, ci=False)  # CI=true in the environment would judge the skips "missing"
    assert list(got) == [("c", "torch_eager", "static"), ("c", "einx", "static")] + [
        (f"z{i}", "einx", "static") for i in range(3)
    ]
    for (case, backend, mode), v in got.items():
        alone = [r for r in mixed if (r["case"], r["backend"], r["mode"]) == (case, backend, mode)]
        want = expectations.verdict(alone, expectations.lookup(rules, case, backend, mode), ci=False)
        assert (v.outcome, v.problems, v.rule) == (want.outcome, want.problems, want.rule)
    assert got[("c", "einx", "static")].outcome == "fail" and got[("c", "torch_eager", "static")].outcome == "pass"
    assert got[("z0", "einx", "static")].outcome == "idle"
    assert frames.verdicts(df, rules, ci=True)[("z0", "einx", "static")].outcome == "missing"
    # by a column some records lack (env: None), the jobs keep apart
    by_env = frames.verdicts(df.assign(env=["main"] * len(eager + einx) + [None] * 3), rules, by=["env"], ci=False)
    assert len(by_env) == 5 and by_env[("c", "einx", "static", "main")].outcome == "fail"
