"""The leaderboard: one row per (backend, mode), in the report's Markdown and at the top of its HTML."""

import math

import pytest
from synthetic import frame, job

from harness import cli, leaderboard, results

EAGER = [5e-4, 4e-5, 3e-5, 3e-5]


def _records(symbolic_b=(1, 1, 1, 1)):
    """Two cases; einx recompiles per shape, einx_symbolic compiles once (on case b: ``symbolic_b``)."""
    return frame(
        job("a", "torch_eager", "unbounded", EAGER, [1e-5] * 4, [0, 0, 0, 0]),
        job("a", "einx", "static", [1.0, 0.02, 0.02, 0.02], [4e-5] * 4, [1, 2, 3, 4]),
        job("a", "einx_symbolic", "unbounded", [6e-4, 1e-4, 3e-5, 3e-5], [2e-5] * 4, [1, 1, 1, 1]),
        job("b", "torch_eager", "unbounded", EAGER, [1e-5] * 4, [0, 0, 0, 0]),
        job("b", "einx_symbolic", "unbounded", [6e-4, 1e-4, 3e-5, 3e-5], [8e-5] * 4, list(symbolic_b)),
        job("b", "einx", "static", [1.0, 0.02], [4e-5] * 2, [1, 2], status="mismatch"),
        [
            results.record(
                run_id="r", case="b", backend="jax_jit", mode="unbounded", status="unsupported", message="no unbounded mode"
            )
        ],
    )


def _rows(board):
    return {(r["backend"], r["mode"]): r for r in board.to_dict("records")}


def test_a_row_per_backend_and_mode_with_its_counts_and_ratios():
    board = leaderboard.leaderboard(_records())
    rows = _rows(board)
    # a (backend, mode) whose every job is unsupported ran nothing: no row
    assert set(rows) == {("torch_eager", "unbounded"), ("einx_symbolic", "unbounded"), ("einx", "static")}
    sym, einx = rows[("einx_symbolic", "unbounded")], rows[("einx", "static")]
    assert (sym["passed"], sym["run"], sym["once"]) == (2, 2, 2)
    assert sym["compiles_per_shape"] == pytest.approx(2 / 8)
    # a mismatch runs but does not pass; its compiles still count per shape
    assert (einx["passed"], einx["run"], einx["once"]) == (1, 2, 0)
    assert einx["compiles_per_shape"] == pytest.approx(6 / 6)
    # geometric mean over the passing jobs of the cached ratio to eager on the same case: 2× and 8×
    assert sym["cached_vs_eager"] == pytest.approx(math.sqrt(2 * 8))
    assert (sym["cached_q25"], sym["cached_q75"]) == (pytest.approx(3.5), pytest.approx(6.5))
    # ordered by pass rate, then compiled once
    assert list(board["backend"]) == ["torch_eager", "einx_symbolic", "einx"]


def test_a_row_changes_when_a_backend_compiles_again():
    before = _rows(leaderboard.leaderboard(_records()))[("einx_symbolic", "unbounded")]
    after = _rows(leaderboard.leaderboard(_records(symbolic_b=(1, 1, 2, 3))))[("einx_symbolic", "unbounded")]
    assert (before["once"], after["once"]) == (2, 1)
    assert after["compiles_per_shape"] == pytest.approx(4 / 8) != before["compiles_per_shape"]
    # so does its Markdown row
    line = [r for r in leaderboard.markdown(leaderboard.leaderboard(_records((1, 1, 2, 3)))).splitlines() if "einx_symbolic" in r]
    assert line == ["| einx_symbolic | unbounded | 2/2 | 1 | 0 | 0.50 | 1.27× (1.27–1.27) | 4.00× (3.50–6.50) |"]


def test_harness_report_prints_the_leaderboard_above_the_jobs(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    with results.Writer(path) as w:
        for rec in _records().to_dict("records"):
            w.write(rec)
    assert cli.main(["report", str(path), "--csv", str(tmp_path / "r.csv")]) in (0, 1)
    out = capsys.readouterr().out
    head = out.index("| backend | mode | passed / run | compiled once |")
    assert head < out.index("| case |") and "| einx | static | 1/2 | 0 | 0 | 1.00 |" in out


def test_our_crashes_have_their_own_column():
    """A job where our engines raised an internal error (status ``crash``) counts in
    ``crash``, not among the passes, and not as the system's failure."""
    crashed = job("c", "einx_symbolic", "unbounded", [6e-4], [], [1], status="crash")
    board = _rows(leaderboard.leaderboard(frame(*[_records().to_dict("records")], crashed)))
    sym = board[("einx_symbolic", "unbounded")]
    assert (sym["passed"], sym["run"], sym["crash"]) == (2, 3, 1)
    assert board[("einx", "static")]["crash"] == 0


def test_leaderboard_and_zoo_table_agree_on_compiled_once():
    """Over a zoo run's every job, the leaderboard's ``once`` and the zoo table's
    ``compiled_once`` are the one definition (:func:`harness.sweep.compiled_once`)."""
    from harness import frames, zoo_table

    jobs = [
        job("zoo_a", "lazy", "unbounded", [0.02] * 3, [0.004] * 3, [2, 2, 2]),  # two graphs on shape 0, then none
        job("zoo_b", "lazy", "unbounded", [0.02] * 3, [0.004] * 3, [1, 2, 3]),  # a trace per size
        job("zoo_c", "stablehlo_xla", "bounded", [0.1] * 3, [0.01] * 3, [2, 2, 2], stages={"lowering": 1, "xla": 1}),
        job("zoo_d", "stablehlo_xla", "bounded", [0.1] * 3, [0.01] * 3, [2, 2, 2], status="mismatch"),
        job("zoo_e", "jax_export", "unbounded", [0.1] * 3, [0.01] * 3, [2, 3, 4], stages={"export": 1, "xla": 3}),
        job("zoo_f", "torch_export", "unbounded", [0.1], [0.01], [1]),  # one shape: not a sweep
    ]
    df = frame(*jobs)
    flat = frames.flat(df)
    keys = frames.RUN + frames.JOB
    board = leaderboard.once_per_job(flat, keys)
    board_once = {(k[2], k[3], k[4]): bool(v) for k, v in board.items()}
    zoo_once = {(j["case"], j["backend"], j["mode"]): zoo_table.compiled_once(j) for j in zoo_table.jobs(df)}
    assert board_once == zoo_once
    assert [k[0] for k, v in sorted(zoo_once.items()) if v] == ["zoo_a", "zoo_c"]


def test_compiled_once_is_judged_for_every_job_and_false_where_none_passed():
    from harness import frames

    flat = frames.flat(_records())
    once = leaderboard.once_per_job(flat, frames.JOB)
    assert len(once) == 7 and once.dtype == bool
    assert {k for k, v in once.items() if v} == {(c, b, "unbounded") for c in "ab" for b in ("torch_eager", "einx_symbolic")}
    assert not once[("b", "jax_jit", "unbounded")] and not once[("b", "einx", "static")]  # unsupported; mismatch
    assert not leaderboard.once_per_job(flat[flat["status"] != "pass"], frames.JOB).any()
