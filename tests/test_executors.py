"""The per-executor table: bounded against unbounded for each executor of our module."""

from __future__ import annotations

import pandas as pd

from harness import executors, leaderboard


def _board(rows):
    base = dict.fromkeys(leaderboard.COLUMNS)
    return pd.DataFrame([{**base, **r} for r in rows], columns=leaderboard.COLUMNS)


def test_each_executor_gets_its_modes_side_by_side_and_others_are_left_out():
    board = _board(
        [
            {"backend": "stablehlo_xla", "mode": "bounded", "passed": 9, "run": 10, "once": 9, "cached_vs_eager": 0.66},
            {"backend": "stablehlo_xla", "mode": "unbounded", "passed": 10, "run": 10, "once": 1, "cached_vs_eager": 0.4},
            {"backend": "stablehlo_iree", "mode": "unbounded", "passed": 8, "run": 10, "once": 8, "cached_vs_eager": 0.2},
            {"backend": "torch_eager", "mode": "unbounded", "passed": 10, "run": 10, "once": 10, "cached_vs_eager": 1.0},
        ]
    )
    t = executors.table(board).set_index("backend")
    assert list(t.index) == ["stablehlo_xla", "stablehlo_iree"]
    assert (t.loc["stablehlo_xla", "bounded_once"], t.loc["stablehlo_xla", "unbounded_once"]) == (9, 1)
    assert pd.isna(t.loc["stablehlo_iree", "bounded_run"])
    md = executors.markdown(board)
    assert "| XLA (jaxlib's CPU client) | stablehlo_xla | 9/10 | 9 | 0.66× | 10/10 | 1 | 0.40× |" in md
    assert "| IREE (iree-compile, llvm-cpu) | stablehlo_iree | not run | – | – | 8/10 | 8 | 0.20× |" in md
    assert "torch_eager" not in md
    assert "<table class='summary executors'>" in executors.to_html(board)


def test_no_executor_of_ours_ran_gives_no_table():
    board = _board([{"backend": "torch_eager", "mode": "unbounded", "passed": 1, "run": 1, "once": 1}])
    assert executors.markdown(board) == "" and executors.to_html(board) == ""
    assert executors.markdown(_board([])) == ""


def test_every_backend_that_runs_our_module_names_its_executor():
    from backends.stablehlo_base import StablehloTorch, TorchLowered
    from harness import registry

    # ours: the program keeps TorchLowered's lowering (torchax's, torch-mlir's override it)
    ours = {
        name
        for name, b in registry.backends().items()
        if isinstance(b, StablehloTorch) and b.program.stablehlo is TorchLowered.stablehlo
    }
    assert "stablehlo_xla" in ours, "found no backend running our module: the registry's API changed"
    assert ours == set(executors.EXECUTORS)
