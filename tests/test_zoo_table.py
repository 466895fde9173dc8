"""The zoo's pass-rate table (harness/zoo_table.py) on synthetic records: each column counts what it says."""

from __future__ import annotations

import pytest

from harness import cli, results, zoo_table
from tests import synthetic

ONCE = {"lowering": 1, "xla": 1}


def _failed(case, backend, mode, status, message, stage=None):
    recs = synthetic.job(case, backend, mode, [0.5], [], [1], status=status)
    for r in recs:
        r["message"], r["stage"] = message, stage
    return recs


def _records(**change) -> list[dict]:
    """Five architectures on torch_eager and stablehlo_xla bounded, one more on lazy; ``change`` replaces a job."""
    eager = [synthetic.job(f"zoo_{c}", "torch_eager", "bounded", [0.01] * 3, [0.001] * 3, [0, 0, 0]) for c in "abcdef"]
    shlo = {
        "a": synthetic.job("zoo_a", "stablehlo_xla", "bounded", [0.04, 0.01, 0.01], [0.002] * 3, [2, 2, 2], stages=ONCE),
        "b": _failed(
            "zoo_b", "stablehlo_xla", "bounded", "unsupported", "StableHLO lowering: no lowering for aten::as_strided", "lowering"
        ),
        "c": _failed("zoo_c", "stablehlo_xla", "bounded", "error", "torch.export: Constraint violation for s18", "export"),
        "d": _failed(
            "zoo_d", "stablehlo_xla", "bounded", "error", "XlaRuntimeError: Reshape operation has mismatched element counts"
        ),
        "e": synthetic.job(
            "zoo_e", "stablehlo_xla", "bounded", [0.03] * 3, [0.001] * 3, [2, 2, 2], status="mismatch", stages=ONCE
        ),
        # a mode the dims rule out: not an attempt
        "f": _failed("zoo_f", "stablehlo_xla", "bounded", "unsupported", "bucketed padding is not neutral here"),
    }
    shlo.update(change)
    lazy = synthetic.job("zoo_a", "lazy", "bounded", [0.02] * 3, [0.004] * 3, [1, 2, 3])  # a trace per size
    other = synthetic.job("model_gpt2", "stablehlo_xla", "bounded", [1.0], [], [1], status="error")  # not a zoo case
    return [r for job in (*eager, *shlo.values(), lazy, other) for r in job]


def _jobs(**change):
    return synthetic.frame(_records(**change))


def test_each_column_counts_its_architectures():
    t = zoo_table.table(_jobs())
    row = t.loc[("stablehlo_xla", "bounded")]
    assert dict(row[list(zoo_table.COLUMNS[:7])]) == {
        "archs": 5,  # f is unsupported by its dims; model_gpt2 is no zoo case
        "exported": 4,  # c stops in torch.export
        "lowered": 3,  # b has no lowering
        "ran": 2,  # d fails at run time
        "oracle_equal": 1,  # e mismatches
        "compiled_once": 1,
        "per_size": 0,
    }
    assert row["first_x"] == pytest.approx(0.06 / 0.03) and row["cached_x"] == pytest.approx(2.0)
    lazy = t.loc[("lazy", "bounded")]
    assert (lazy["archs"], lazy["oracle_equal"], lazy["compiled_once"], lazy["per_size"]) == (1, 1, 0, 1)
    assert t.loc[("torch_eager", "bounded")]["archs"] == 6 and t.loc[("torch_eager", "bounded")]["first_x"] == 1.0


def test_a_planted_change_moves_its_column():
    fixed = synthetic.job("zoo_b", "stablehlo_xla", "bounded", [0.04] * 3, [0.002] * 3, [2, 2, 2], stages=ONCE)
    row = zoo_table.table(_jobs(b=fixed)).loc[("stablehlo_xla", "bounded")]
    assert (row["lowered"], row["ran"], row["oracle_equal"], row["compiled_once"]) == (4, 3, 2, 2)
    recompiles = synthetic.job("zoo_a", "stablehlo_xla", "bounded", [0.04] * 3, [0.002] * 3, [2, 4, 6], stages={"xla": 3})
    row = zoo_table.table(_jobs(a=recompiles)).loc[("stablehlo_xla", "bounded")]
    assert (row["oracle_equal"], row["compiled_once"], row["per_size"]) == (1, 0, 1)


def test_failure_classes_group_by_stage_and_message():
    rows = zoo_table.failures(_jobs())
    stages = {(r["backend"], r["stage"]): r for r in rows}
    assert set(stages) == {("stablehlo_xla", s) for s in ("export", "lowering", "run", "oracle")}
    assert stages[("stablehlo_xla", "lowering")]["cases"] == ["zoo_b"]
    assert "as_strided" in stages[("stablehlo_xla", "lowering")]["example"]
    assert "s18" not in stages[("stablehlo_xla", "export")]["class"] and "sN" in stages[("stablehlo_xla", "export")]["class"]


def test_a_module_the_per_shape_executor_refuses_stops_at_run():
    """A data-dependent size refused by XLA's per-shape program (``status`` unsupported) is a
    module we built that did not run: its refusal is recorded in stage ``xla``, which the
    table reads as ``run``, not ``idle`` (left out of the table) nor ``export``."""
    from types import SimpleNamespace

    from backends.base import Program, Unsupported, failed_stage
    from backends.stablehlo_base import xla_executor

    module = SimpleNamespace(text="%y = stablehlo.set_dimension_size %x, %n, dim = 0", label="zoo_pyg_x (unbounded)")
    program = Program(SimpleNamespace(counters={}), None, "unbounded", call=lambda: None)
    with pytest.raises(Unsupported) as e:
        xla_executor(program, module)
    assert zoo_table.stage_of("unsupported", failed_stage(e.value)) == "run"
    assert zoo_table.stage_of("unsupported", None) == "idle"  # refused outside every stage: the mode's dims


def test_the_stage_is_the_one_a_failure_left():
    """An exception leaving ``Program.counting(stage)`` carries that stage; a refusal naming
    its own (torch.export's, inside a lowering's stage) keeps it."""
    from types import SimpleNamespace

    from backends.base import Program, Unsupported, failed_stage

    program = Program(SimpleNamespace(counters={}), None, "unbounded", call=lambda: None)
    for raised, want in ((KeyError("x"), "lowering"), (Unsupported("no", stage="export"), "export")):
        with pytest.raises(type(raised)) as e, program.counting("lowering"):
            raise raised
        assert failed_stage(e.value) == want
    assert zoo_table.stage_of("error", "lowering") == "lowering" and zoo_table.stage_of("error", None) == "run"


def test_zoo_table_holds_no_regex_over_messages():
    """Stages are recorded where they happen, never guessed from a message's words."""
    import inspect

    src = inspect.getsource(zoo_table)
    assert "import re" not in src and "re.compile" not in src


def test_a_worker_traceback_is_classed_by_its_exception_line():
    """A worker's failure message is the tail of a traceback: its class is the exception it
    raised, so two models failing the same way share one class (not the cut-off first line)."""
    from harness import messages

    tb = 'worker failed: rness/worker.py", line 74, in main\n    measure.run(job)\n  File "cases/m.py", line {n}, in f\n'
    tb += "    return model(x)\nRuntimeError: The size of tensor a ({a}) must match the size of tensor b ({b})"
    assert (
        messages.headline(tb.format(n=1, a=38, b=37))
        == "RuntimeError: The size of tensor a (38) must match the size of tensor b (37)"
    )
    assert messages.headline("Unsupported: no lowering\nfor aten.nonzero") == "Unsupported: no lowering"
    assert messages.headline("Constraints violated (p)!", {"words": "torch.export needs p ≥ 4"}) == "torch.export needs p ≥ 4"


def test_two_cases_failing_alike_share_one_class(monkeypatch):
    """A message naming its case and its module's hash is classed without them."""

    def job(case, digest):
        msg = f"ExecutionError: {case} (unbounded) [{digest}]: shape refinement failed for argument shapes (2, 7)"
        return {"case": case, "backend": "peer", "mode": "unbounded", "stage": "run", "status": "error", "message": msg}

    monkeypatch.setattr(zoo_table, "jobs", lambda df: [job("zoo_hf_llama", "f3d2d1f0aa"), job("zoo_hf_opt7", "0767cf79824d")])
    (row,) = zoo_table.failures(None)
    assert row["n"] == 2 and row["cases"] == ["zoo_hf_llama", "zoo_hf_opt7"] and "CASE (unbounded) […]" in row["class"]


def test_zoo_table_command_prints_markdown(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    writer = results.Writer(path)
    for rec in _records():
        writer.write(rec)
    writer.close()
    assert cli.main(["zoo-table", str(path), "--failures"]) == 0
    out = capsys.readouterr().out
    assert "| stablehlo_xla | bounded | 5 | 4 | 3 | 2 | 1 | 1 | 0 | 0 | 2.00x | 2.00x |" in out
    assert "| stablehlo_xla | bounded | lowering | 1 |" in out


def _goal_records(**change) -> list[dict]:
    """torch.export bounded exports a, b, c (d stops at capture); stablehlo_xla holds a, compiles b
    per size and gives c a wrong result; torch eager runs a, b; lazy recompiles b per size."""
    jobs = {
        "ex_a": synthetic.job("zoo_a", "torch_export", "bounded", [0.1] * 3, [0.01] * 3, [1, 1, 1]),
        "ex_b": synthetic.job("zoo_b", "torch_export", "bounded", [0.1] * 3, [0.01] * 3, [1, 1, 1]),
        "ex_c": synthetic.job("zoo_c", "torch_export", "bounded", [0.1] * 3, [0.01] * 3, [1, 1, 1], status="mismatch"),
        "ex_d": _failed(
            "zoo_d", "torch_export", "bounded", "unsupported", "torch.export could not keep zoo_d's dims dynamic", "export"
        ),
        "sh_a": synthetic.job("zoo_a", "stablehlo_xla", "bounded", [0.1] * 3, [0.01] * 3, [2, 2, 2], stages=ONCE),
        "sh_b": synthetic.job("zoo_b", "stablehlo_xla", "bounded", [0.1] * 3, [0.01] * 3, [2, 4, 6], stages={"xla": 3}),
        "sh_c": synthetic.job(
            "zoo_c", "stablehlo_xla", "bounded", [0.1] * 3, [0.01] * 3, [2, 2, 2], status="mismatch", stages=ONCE
        ),
        "eg_a": synthetic.job("zoo_a", "torch_eager", "unbounded", [0.01] * 3, [0.001] * 3, [0, 0, 0]),
        "eg_b": synthetic.job("zoo_b", "torch_eager", "unbounded", [0.01] * 3, [0.001] * 3, [0, 0, 0]),
        "lz_a": synthetic.job("zoo_a", "lazy", "unbounded", [0.02] * 3, [0.004] * 3, [2, 3, 3]),  # two graphs, once
        "lz_b": synthetic.job("zoo_b", "lazy", "unbounded", [0.02] * 3, [0.004] * 3, [1, 2, 3]),  # a trace per size
    }
    jobs.update(change)
    return [r for job in jobs.values() for r in job]


def test_goals_count_each_path_against_what_its_baseline_carried():
    got = {g["path"]: g for g in zoo_table.goals(synthetic.frame(_goal_records()))}
    shlo, lazy = got["stablehlo_xla"], got["lazy"]
    assert (shlo["carried"], shlo["held"]) == (3, 1)  # d never exported: not in the denominator
    assert shlo["wrong_or_run_error"] == ["zoo_c"] and shlo["missed"]["zoo_b"] == "3 compiles"
    assert (lazy["carried"], lazy["held"]) == (2, 1)  # a's second graph is not a per-size recompile
    assert lazy["missed"] == {"zoo_b": "recompiled per size"}


def test_a_planted_fix_moves_the_goal():
    fixed = synthetic.job("zoo_b", "lazy", "unbounded", [0.02] * 3, [0.004] * 3, [1, 1, 1])
    lazy = {g["path"]: g for g in zoo_table.goals(synthetic.frame(_goal_records(lz_b=fixed)))}["lazy"]
    assert (lazy["held"], lazy["share"]) == (2, 1.0)
    text = zoo_table.goals_markdown(zoo_table.goals(synthetic.frame(_goal_records())))
    assert "| lazy | unbounded | 2 run by torch eager | 1 | 50% | 0 |" in text


def _at(recs, run_id, timestamp):
    for r in recs:
        r["run_id"], r["timestamp"] = run_id, timestamp
    return recs


def test_a_rerun_replaces_the_attempt_it_completes():
    """Reruns of a job (after a fix, with a longer timeout) replace its earlier attempt; a rerun
    killed mid-sweep (novel records only, no failure) does not hide the attempt that finished."""
    first = _records()  # zoo_b stops at its lowering in run "r"
    for r in first:
        r["timestamp"] = "2026-12-02T10:00:00"
    fixed = _at(
        synthetic.job("zoo_b", "stablehlo_xla", "bounded", [0.04] * 3, [0.002] * 3, [2, 2, 2], stages=ONCE),
        "r2",
        "2026-12-02T11:00:00",
    )
    killed = _at(
        synthetic.job("zoo_a", "stablehlo_xla", "bounded", [0.04], [], [2], stages={"xla": 5}), "r3", "2026-12-02T12:00:00"
    )
    row = zoo_table.table(synthetic.frame(first, fixed, killed)).loc[("stablehlo_xla", "bounded")]
    assert (row["lowered"], row["oracle_equal"], row["compiled_once"]) == (4, 2, 2)
    only = {(j["case"], j["status"], j["max_stage"]) for j in zoo_table.jobs(synthetic.frame(first, fixed, killed))}
    assert ("zoo_b", "pass", 1) in only and ("zoo_a", "pass", 1) in only
    # the killed rerun is all there is of a job: it is kept, not dropped
    assert zoo_table.latest_complete(synthetic.frame(killed))["run_id"].unique().tolist() == ["r3"]


def test_a_latency_ratio_pairs_the_job_with_the_baseline_of_its_own_run():
    """Eager timed in another run under another load must not set the ratio when the
    run itself timed eager beside the backend."""
    beside = synthetic.job("zoo_a", "torch_eager", "bounded", [0.02] * 3, [0.002] * 3, [0, 0, 0], run_id="r1")
    elsewhere = synthetic.job("zoo_a", "torch_eager", "bounded", [0.01] * 3, [0.001] * 3, [0, 0, 0], run_id="r2")
    mine = synthetic.job("zoo_a", "lazy", "bounded", [0.04] * 3, [0.004] * 3, [1, 1, 1], run_id="r1")
    for recs, when in ((beside, "2026-12-01T00:00:00"), (mine, "2026-12-01T00:00:00"), (elsewhere, "2026-12-02T00:00:00")):
        for r in recs:  # elsewhere: the newer eager run, which the fallback would pick
            r["timestamp"] = when
    row = zoo_table.table(synthetic.frame(beside + elsewhere + mine)).loc[("lazy", "bounded")]
    assert row["first_x"] == pytest.approx(2.0) and row["cached_x"] == pytest.approx(2.0)
    alone = zoo_table.table(synthetic.frame(elsewhere + mine)).loc[("lazy", "bounded")]
    assert alone["cached_x"] == pytest.approx(4.0)  # no eager beside it: the other run's


def test_the_zoo_table_reads_the_reports_per_job_frame():
    """One per-job frame: every zoo job's status, novel shapes, novel sweep and cached
    call are :func:`harness.frames.summary`'s, as the report and the leaderboard show them."""
    from harness import frames

    df = _jobs()
    zoo = df[df["case"].str.startswith("zoo_")]
    summary = {(r["case"], r["backend"], r["mode"]): r for r in frames.summary(zoo).to_dict("records")}
    js = zoo_table.jobs(df)
    assert len(js) == len(summary) > 5
    for j in js:
        row = summary[(j["case"], j["backend"], j["mode"])]
        assert (j["status"], j["shapes"]) == (str(row["status"]), int(row["shapes"])), j
        for mine, theirs in (("first_s", "novel_sweep_s"), ("cached_s", "cached_median_s")):
            want = row[theirs]
            assert (j[mine] is None and (want is None or want != want)) or j[mine] == pytest.approx(float(want)), (j, theirs)


IREE = {"lowering": 1, "iree_compile": 1}


def _iree_records(**change) -> list[dict]:
    """The goal records plus our module on IREE (a held, b compiled twice though not per size, c not
    run: a shard)
    and torch-mlir -> IREE beside it."""
    jobs = {
        "si_a": synthetic.job("zoo_a", "stablehlo_iree", "unbounded", [0.1] * 3, [0.02] * 3, [2, 2, 2], stages=IREE),
        "si_b": synthetic.job(
            "zoo_b", "stablehlo_iree", "unbounded", [0.1] * 3, [0.02] * 3, [2, 2, 3], stages={"lowering": 1, "iree_compile": 2}
        ),
        "ir_a": synthetic.job("zoo_a", "iree", "unbounded", [0.1] * 3, [0.01] * 3, [1, 1, 1], stages={"iree_compile": 1}),
        "ir_b": synthetic.job("zoo_b", "iree", "unbounded", [0.1] * 3, [0.01] * 3, [1, 1, 1], stages={"iree_compile": 1}),
    }
    jobs.update(change)
    return _goal_records() + [r for job in jobs.values() for r in job]


def test_an_opt_in_goal_shows_only_where_its_path_ran():
    assert "stablehlo_iree" not in {g["path"] for g in zoo_table.goals(synthetic.frame(_goal_records()))}
    denominators = [r for r in _goal_records() if r["backend"] in ("torch_export", "torch_eager")]
    assert zoo_table.goals(synthetic.frame(denominators)) == []  # no path ran: no line of "not run"s
    iree = {g["path"]: g for g in zoo_table.goals(synthetic.frame(_iree_records()))}["stablehlo_iree"]
    assert (iree["carried"], iree["held"], iree["not_run"]) == (3, 1, 1)  # of a, b, c: c not run
    assert iree["missed"] == {"zoo_b": "2 compiles", "zoo_c": "not run"}  # held means one module, as XLA's
    text = zoo_table.goals_markdown(zoo_table.goals(synthetic.frame(_iree_records())))
    assert (
        "| stablehlo_iree | unbounded | 3 exported by torch.export with dynamic dims | 1 | 33%; 50% of the 2 run (1 not run) | 0 |"
        in text
    )


def test_versus_sets_the_cached_call_against_another_row_where_both_hold():
    from harness import zoo_versus

    rows = zoo_versus.versus(synthetic.frame(_iree_records()))
    (iree,) = [r for r in rows if r["other"] == ("iree", "unbounded")]
    assert (iree["n"], iree["ratio"], iree["faster"], iree["met"]) == (1, pytest.approx(2.0), 0, False)  # b is not held
    faster = synthetic.job("zoo_a", "stablehlo_iree", "unbounded", [0.1] * 3, [0.012] * 3, [2, 2, 2], stages=IREE)
    (iree,) = [r for r in zoo_versus.versus(synthetic.frame(_iree_records(si_a=faster))) if r["other"][0] == "iree"]
    assert iree["ratio"] == pytest.approx(1.2) and iree["met"] and iree["same_run"] == 1
    (xla,) = [r for r in rows if r["other"] == ("stablehlo_xla", "bounded")]
    assert (xla["n"], xla["ratio"], xla["limit"], xla["met"]) == (1, pytest.approx(2.0), 1.0, False)  # a only: c is wrong
    assert "| stablehlo_iree/unbounded | iree/unbounded | 1 | 2.00x | 2.00-2.00 | 0 | 1 | <= 1.5x | no |" in zoo_versus.markdown(
        rows
    )
    assert zoo_versus.markdown(zoo_versus.versus(synthetic.frame(_goal_records()))) == ""  # no IREE row: nothing
