"""compare: compile deltas per shape, latency ratios tested for noise, refusal of
incomparable runs, and the verdict; the CLI's exit code."""

import pytest
from synthetic import frame, job

from harness import cli, compare, results, stats


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
    assert not r["regression"] and r["verdict"] == "fewer compiles (shape 0: 1→0), faster"


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


def _sampled(run_id, sweeps, cached, profile="quick", threads=1):
    """One single-shape job measured in ``len(sweeps)`` processes (novel-sweep
    totals ``sweeps``), its cached phase with raw samples ``cached``."""
    common = dict(
        run_id=run_id,
        case="c",
        backend="x",
        mode="static",
        profile=profile,
        machine={"host": "vm", "cpu": "EPYC", "cores": 2, "threads": threads},
    )
    recs = [
        results.record(
            **common,
            shape_index=0,
            novel=True,
            latency_s=t,
            compiles=1,
            compile_delta={"x": 1},
            process=p,
            status="pass",
            ok=True,
        )
        for p, t in enumerate(sweeps)
    ]
    med = sorted(cached)[len(cached) // 2]
    recs.append(
        results.record(
            **common,
            shape_index=0,
            novel=False,
            latency_s=med,
            cached_latency_s=med,
            cached_samples_s=list(cached),
            compiles=1,
            compile_delta={"x": 0},
            process=0,
            status="pass",
            ok=True,
        )
    )
    import pandas as pd

    return pd.DataFrame.from_records(recs, columns=list(results.FIELDS))


NOISY = [0.10, 0.16, 0.08, 0.13, 0.09, 0.15, 0.11]
CACHED = [1.0e-4, 1.3e-4, 0.9e-4, 1.2e-4, 0.95e-4, 1.25e-4, 1.1e-4]


def test_a_1_3x_change_within_noise_is_tilde_a_clean_3x_change_a_regression():
    a = _sampled("A", NOISY, CACHED)
    # 1.3× slower, but the samples overlap: the rank test cannot tell them apart
    shuffled = [NOISY[i] * 1.3 for i in (3, 0, 6, 1, 4, 2, 5)]
    r = compare.compare(a, _sampled("B", shuffled, [v * 1.3 for v in CACHED[::-1]])).iloc[0]
    assert r["novel_ratio"] == pytest.approx(1.3, rel=0.05)
    assert r["novel_mark"] == "~" and r["cached_mark"] == "~"
    assert r["verdict"] == "~" and not r["regression"]
    # a clean 3×: every B sample slower than every A sample
    clean = [0.100, 0.101, 0.102, 0.099, 0.100, 0.101, 0.100]
    r = compare.compare(_sampled("A", clean, CACHED), _sampled("B", [3 * v for v in clean], CACHED)).iloc[0]
    assert r["novel_mark"] == "+" and r["cached_mark"] == ""
    assert r["verdict"] == "slower" and r["regression"]


def test_a_significant_change_inside_the_threshold_is_not_a_regression():
    clean = [0.100, 0.101, 0.102, 0.099, 0.100, 0.101, 0.100]
    r = compare.compare(_sampled("A", clean, CACHED), _sampled("B", [1.2 * v for v in clean], CACHED)).iloc[0]
    assert r["novel_mark"] == "" and r["verdict"] == "ok" and not r["regression"]


def test_testable_uses_the_two_sided_bound():
    # six a side: the smallest two-sided p is 2/C(12, 6) = 2/924 = 0.00216, above asv's 0.002
    assert stats.min_p(6, 6) == pytest.approx(2 / 924) and not stats.testable(6, 6)
    assert stats.mann_whitney_u([1.0] * 6, [2.0] * 6)[1] == pytest.approx(2 / 924)
    assert stats.testable(7, 7) and stats.testable(6, 7) and stats.MIN_SAMPLES == 7
    # whenever testable says yes, a complete separation does reach the threshold
    for m in range(1, 12):
        for n in range(1, 12):
            sep = stats.mann_whitney_u([1.0] * m, [2.0] * n)[1] < stats.P_THRESHOLD
            assert stats.testable(m, n) == sep, (m, n)


def _default_runs(factor, seed):
    """A and B as ``run --processes MIN_SAMPLES`` records them with the default
    ``--repeats``: one shape, novel sweeps and cached samples noisy by up to
    20 %, B's ``factor`` times A's (B a fresh draw of the same noise)."""
    import random

    from harness.runner import DEFAULT_REPEATS

    rng = random.Random(seed)

    def draw(base, n):
        return [base * (1 + 0.2 * rng.random()) for _ in range(n)]

    a = _sampled("A", draw(0.1, stats.MIN_SAMPLES), draw(1e-4, DEFAULT_REPEATS))
    b = _sampled("B", draw(0.1 * factor, stats.MIN_SAMPLES), draw(1e-4 * factor, DEFAULT_REPEATS))
    return compare.compare(a, b).iloc[0]


@pytest.mark.parametrize("seed", range(5))
def test_a_2x_slowdown_is_flagged_at_the_default_samples_and_a_null_change_is_not(seed):
    r = _default_runs(2.0, seed)
    assert r["novel_mark"] == "+" and r["cached_mark"] == "+" and r["verdict"] == "slower" and r["regression"]
    r = _default_runs(1.0, seed)
    assert r["novel_mark"] in ("", "~") and r["cached_mark"] in ("", "~"), r
    assert not r["regression"] and r["verdict"] in ("ok", "~")


def test_the_advice_names_the_samples_the_test_needs(capsys):
    assert f"--processes {stats.MIN_SAMPLES}" in compare.markdown(_default_runs(1.0, 0).to_frame().T)
    from harness import cli

    helps = {a.dest: a.help for a in cli.parser()._subparsers._group_actions[0].choices["run"]._actions}
    assert f"compare needs {stats.MIN_SAMPLES}" in helps["processes"]


def test_too_few_samples_fall_back_to_the_ratio():
    assert not stats.testable(2, 2) and not stats.testable(5, 5) and not stats.testable(6, 6)
    r = compare.compare(_sampled("A", [0.1], CACHED[:2]), _sampled("B", [0.3], CACHED[:2])).iloc[0]
    assert r["novel_mark"] == "?+" and r["regression"]


def test_compiles_are_compared_per_shape():
    # the same total (2), but B compiles on shape 1 where A did not
    a = frame(job("c", "x", "static", [0.1] * 3, [1e-4] * 3, [1, 2, 2], run_id="A"))
    b = frame(job("c", "x", "static", [0.1] * 3, [1e-4] * 3, [1, 1, 2], run_id="B"))
    r = compare.compare(a, b).iloc[0]
    assert r["compile_delta"] == 0 and r["regression"]
    assert r["verdict"] == "more compiles (shape 2: 0→1)"


def test_runs_of_other_profiles_machines_or_threads_are_refused_unless_forced():
    a = _sampled("A", NOISY, CACHED)
    with pytest.raises(compare.CompareError, match=r"profile: A quick vs B full; threads: A 1 vs B 4"):
        compare.compare(a, _sampled("B", NOISY, CACHED, profile="full", threads=4))
    assert compare.compare(a, _sampled("B", NOISY, CACHED, profile="full"), force=True).iloc[0]["verdict"] == "ok"


def test_cli_refuses_and_forces(tmp_path, capsys):
    _write(tmp_path / "A.jsonl", _sampled("A", NOISY, CACHED))
    _write(tmp_path / "B.jsonl", _sampled("B", NOISY, CACHED, threads=2))
    assert cli.main(["compare", "A", "B", "--results", str(tmp_path)]) == 2
    assert "threads: A 1 vs B 2" in capsys.readouterr().err
    assert cli.main(["compare", "A", "B", "--results", str(tmp_path), "--force"]) == 0
    assert "Mann-Whitney" in capsys.readouterr().out
