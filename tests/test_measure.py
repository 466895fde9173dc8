"""The measurement loop, end to end in a worker: per-call compile deltas, the
cached phase checked and watched for compiles, one timing rule for start-up,
prepare and first calls."""

import pytest

import cases
from harness import expectations, oracle, runner


def _run(backend, tmp_path, case="gnn_edge_divide", mode="unbounded", preload=None):
    combo = runner.Combo(cases.get(case), backend, mode)
    r = runner.Runner(tmp_path, profile="quick", repeats=2, warmup=1, progress=False, zygote_preload=preload)
    got = []
    r.run_one(combo, got.append)
    return got


def test_each_record_carries_the_compiles_of_its_own_call(fake_backends, tmp_path):
    got = _run(fake_backends("CompilesTwiceFirst"), tmp_path)
    novel = [r for r in got if r["novel"]]
    assert [r["compile_delta"] for r in novel] == [{"fake": 2}, {"fake": 1}, {"fake": 0}]
    assert [r["compiles"] for r in novel] == [2, 3, 3]
    assert novel[0]["compile_reasons"] == ["fake: call 1 compiled 2"]
    assert novel[2]["compile_reasons"] is None
    assert novel[1]["compile_times"] == {"fake": pytest.approx(0.003)}


def test_the_gate_fails_a_wrong_per_shape_count_shape_by_shape(fake_backends, tmp_path):
    got = _run(fake_backends("CompilesTwiceFirst"), tmp_path)
    v = expectations.verdict(got, expectations.Rule(per_shape="1"))
    assert v.outcome == "fail"
    assert [p.split(":")[0] for p in v.problems] == ["shape 0 {'e'", "shape 2 {'e'"]
    assert "2 compile(s) (fake=2), expected 1 = 1" in v.problems[0]
    # a job total of one per shape would have let it through
    assert expectations.verdict(got, expectations.Rule(compiles="n_shapes")).outcome == "pass"


def test_a_compile_in_the_cached_phase_is_recorded_as_recompiled(fake_backends, tmp_path):
    got = _run(fake_backends("RecompilesWhenCached"), tmp_path)
    assert [r["status"] for r in got if r["novel"]] == ["pass"] * 3
    cached = [r for r in got if r["novel"] is False]
    assert [r["status"] for r in cached] == ["recompiled", "pass", "pass"]
    assert cached[0]["compile_delta"] == {"fake": 1}
    assert "1 compile(s) in the cached phase" in cached[0]["message"]
    assert "call 4 compiled 1" in cached[0]["message"]
    v = expectations.verdict(got, expectations.Rule(per_shape="1"))
    assert v.outcome == "fail" and "(cached): recompiled" in v.problems[0]


def test_cached_calls_are_checked_against_the_oracle(fake_backends, tmp_path):
    got = _run(fake_backends("WrongWhenCached"), tmp_path)
    assert [r["status"] for r in got if r["novel"]] == ["pass"] * 3
    cached = [r for r in got if r["novel"] is False]
    assert [r["status"] for r in cached] == ["mismatch"] * 3
    assert all(r["message"].startswith("cached call: ") and r["max_abs_err"] >= 0.99 for r in cached)


def test_startup_and_prepare_are_timed_apart_from_the_first_call(fake_backends, tmp_path):
    got = _run(fake_backends("SlowStart"), tmp_path)
    assert {r["status"] for r in got} == {"pass"}
    # the fixture sleeps 1 s in startup and 0.5 s in prepare; its calls are instant
    assert all(r["startup_s"] >= 1.0 for r in got)
    assert all(0.5 <= r["prepare_s"] < r["startup_s"] for r in got)
    assert all(r["latency_s"] < 0.5 for r in got if r["novel"])


def test_every_worker_runs_under_the_thread_policy(tmp_path):
    from harness import registry

    # a fork server that loaded inductor's config (as a run with torch_compile's jobs does)
    got = _run(registry.get("torch_eager"), tmp_path, mode="static", preload={"main": set(registry.get("torch_compile").warmup)})
    seen = got[0]["machine"]["worker_threads"]
    assert seen["OMP_NUM_THREADS"] == "1" and seen["OPENBLAS_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in seen["XLA_FLAGS"]
    assert seen["torch_threads"] == 1
    # inductor's config, loaded by the fork server
    assert seen["TORCHINDUCTOR_COMPILE_THREADS"] == "1" and seen["inductor_compile_threads"] == 1


def test_inf_must_match_with_its_sign():
    import numpy as np

    exp = np.array([np.inf, -np.inf, 1.0])
    assert oracle.compare(np.array([np.inf, -np.inf, 1.0], np.float32), exp, "float32", 1e-4, 1e-5).ok
    for got in ([1e38, -np.inf, 1.0], [np.inf, np.inf, 1.0], [0.0, -np.inf, 1.0], [np.inf, -np.inf, np.inf]):
        v = oracle.compare(np.array(got, np.float32), exp, "float32", 1e-4, 1e-5)
        assert not v.ok and "±inf" in v.message, got
    # the first round's hole: any finite value passed where the oracle had inf
    assert not oracle.compare(np.array([0.0, -np.inf]), np.array([np.inf, np.inf]), "float64", 1e-9, 1e-12).ok


def test_exact_cases_have_no_tolerance():
    import numpy as np

    case = cases.get("expand_over_batch")
    assert case.exact and (case.tol().rtol, case.tol().atol) == (0.0, 0.0)
    exp = np.array([1.0, 2.0])
    nudged = np.nextafter(exp.astype(np.float32), np.float32(3))
    assert oracle.compare(exp.astype(np.float32), exp, "float32", 0.0, 0.0).ok
    assert not oracle.compare(nudged, exp, "float32", 0.0, 0.0).ok


def test_trace_dir_sets_torch_trace_per_job(fake_backends, tmp_path):
    combo = runner.Combo(cases.get("gnn_edge_divide"), fake_backends("EnvReporter"), "static")
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False, trace_dir=tmp_path / "tr")
    got = []
    r.run_one(combo, got.append)
    assert got[0]["compile_reasons"] == [f"TORCH_TRACE={tmp_path / 'tr' / 'gnn_edge_divide-env_reporter-static'}"]


def test_processes_repeat_the_novel_phase_in_fresh_workers_and_keep_raw_samples(fake_backends, tmp_path):
    combo = runner.Combo(cases.get("gnn_edge_divide"), fake_backends("CompilesTwiceFirst"), "unbounded")
    r = runner.Runner(tmp_path, profile="quick", repeats=3, warmup=1, progress=False, processes=3)
    got = []
    r.run_one(combo, got.append)
    novel = [(x["process"], x["shape_index"], x["compile_delta"]["fake"]) for x in got if x["novel"]]
    # each process is fresh: its first shape compiles again, as in the first process
    assert novel == [(p, i, n) for p in range(3) for i, n in enumerate((2, 1, 0))]
    cached = [x for x in got if x["novel"] is False]
    assert [x["process"] for x in cached] == [0, 0, 0]  # the cached phase runs once
    assert all(len(x["cached_samples_s"]) == 3 and x["cached_latency_s"] in x["cached_samples_s"] for x in cached)
    import pandas as pd

    from harness import report, results

    s = report.summary(pd.DataFrame.from_records(got, columns=list(results.FIELDS))).iloc[0]
    assert s["shapes"] == 3 and s["compiles"] == 3


def test_a_worker_runs_no_oracle_check(fake_backends, monkeypatch):
    """The parent checked every oracle when it planned the job; a worker (and
    each of 30+ cases' oracles) must not pay for it again per job."""
    from harness import measure

    monkeypatch.setattr(cases, "_CHECKED", set())
    monkeypatch.setattr(cases.Case, "check_oracle", lambda self: pytest.fail(f"{self.name}: oracle checked in the worker"))
    got = []
    job = {"case": "gnn_edge_divide", "mode": "unbounded", "profile": "quick", "repeats": 1, "warmup": 0}
    measure.run(job, fake_backends("CompilesTwiceFirst"), got.append)
    assert [r["status"] for r in got] == ["pass"] * 6


@pytest.mark.parametrize(
    "call_s, repeats, want",
    [
        (0.25, 7, 3),  # slow calls: the budget ends it, never under MIN_SAMPLES
        (0.125, 7, 4),  # 0.5 s of samples
        (2**-20, 7, 7),  # fast calls: ``number`` calls a sample, all repeats
        (0.25, 2, 2),  # asking for fewer than MIN_SAMPLES gets what was asked
    ],
)
def test_the_cached_phase_stops_at_repeats_or_its_time_budget(call_s, repeats, want, monkeypatch):
    """One rule for every backend, on a fake clock: samples until ``repeats``,
    or until they took CACHED_BUDGET_S (at least MIN_SAMPLES); the output
    checked are each sample's last call's (every ``number``-th), and no call is made after the last sample."""
    from harness import measure

    clock = [0.0]
    calls = []

    class P:  # a Program: its call and its sync
        def __call__(self):
            clock[0] += call_s
            calls.append(len(calls))
            return calls[-1]

        def sync(self, out):
            return out

    monkeypatch.setattr(measure.time, "perf_counter", lambda: clock[0])
    checked = []
    samples, every = measure._time_cached(P(), (), warmup=2, repeats=repeats, budget_s=0.5, check=checked.append)
    number = max(1, min(1000, int(1e-3 / call_s)))
    assert len(samples) == want and samples == pytest.approx([call_s] * want)
    assert len(calls) == 2 + want * number and every == number
    assert checked == [2 + number * (k + 1) - 1 for k in range(want)] and checked[-1] == calls[-1]
