"""The zoo's pass-rate table (harness/zoo_table.py) on synthetic records: each column counts what it says."""

from __future__ import annotations

import pytest

from harness import cli, results, zoo_table
from tests import synthetic

ONCE = {"lowering": 1, "xla": 1}


def _failed(case, backend, mode, status, message):
    recs = synthetic.job(case, backend, mode, [0.5], [], [1], status=status)
    for r in recs:
        r["message"] = message
    return recs


def _records(**change) -> list[dict]:
    """Five architectures on torch_eager and stablehlo_xla bounded, one more on lazy; ``change`` replaces a job."""
    eager = [synthetic.job(f"zoo_{c}", "torch_eager", "bounded", [0.01] * 3, [0.001] * 3, [0, 0, 0]) for c in "abcdef"]
    shlo = {
        "a": synthetic.job("zoo_a", "stablehlo_xla", "bounded", [0.04, 0.01, 0.01], [0.002] * 3, [2, 2, 2], stages=ONCE),
        "b": _failed("zoo_b", "stablehlo_xla", "bounded", "unsupported", "StableHLO lowering: no lowering for aten::as_strided"),
        "c": _failed("zoo_c", "stablehlo_xla", "bounded", "error", "torch.export: Constraint violation for s18"),
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


def test_zoo_table_command_prints_markdown(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    writer = results.Writer(path)
    for rec in _records():
        writer.write(rec)
    writer.close()
    assert cli.main(["zoo-table", str(path), "--failures"]) == 0
    out = capsys.readouterr().out
    assert "| stablehlo_xla | bounded | 5 | 4 | 3 | 2 | 1 | 1 | 0 | 2.00x | 2.00x |" in out
    assert "| stablehlo_xla | bounded | lowering | 1 |" in out
