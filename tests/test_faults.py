"""Fault injection: a worker that segfaults, aborts, raises in prepare, hangs
or allocates without bound becomes one record saying so (with the signal and
its last words on stderr); the run goes on to the next job."""

import pytest

import cases
from harness import limits, runner

CASE = "gnn_edge_divide"


def _run(backend, tmp_path, **kw):
    combo = runner.Combo(cases.get(CASE), backend, "unbounded")
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False, **kw)
    got = []
    r.run_one(combo, got.append)
    return got


def test_segfault_is_crashed_with_signal_and_stderr(fake_backends, tmp_path):
    got = _run(fake_backends("Segfaulter"), tmp_path)
    assert [r["status"] for r in got] == ["pass", "crashed"]
    msg = got[1]["message"]
    assert msg.startswith(
        "worker died (signal SIGSEGV) after 1 records; stderr: fake: dereferencing NULL | Fatal Python error: Segmentation fault"
    )
    assert 'dynshape_fake_backends.py", line' in msg and msg.endswith(" in misbehave")  # innermost frames


def test_abort_is_crashed_with_the_last_stderr_line(fake_backends, tmp_path):
    got = _run(fake_backends("Crasher"), tmp_path)
    assert got[1]["status"] == "crashed"
    assert got[1]["message"].startswith(
        "worker died (signal SIGABRT) after 1 records; stderr: error: unknown op 'stablehlo.frobnicate' | "
        "Fatal Python error: Aborted"
    )


def test_exception_in_prepare_is_one_error_record(fake_backends, tmp_path):
    got = _run(fake_backends("PrepareRaiser"), tmp_path)
    assert [(r["status"], r["novel"]) for r in got] == [("error", None)]
    assert got[0]["message"] == "prepare failed: ValueError: cannot lower gnn_edge_divide: deliberate failure in prepare"


def test_python_allocation_past_the_limit_is_oom(fake_backends, tmp_path):
    got = _run(fake_backends("MemoryHog"), tmp_path, max_memory=1 << 30)
    assert [r["status"] for r in got] == ["pass", "oom"]
    msg = got[1]["message"]
    assert msg.startswith(
        "worker ran out of memory under its memory limit of 1.0 GiB (--max-memory) "
        "(exit code 1) after 1 records: numpy._core._exceptions._ArrayMemoryError: "
        "Unable to allocate 256. MiB"
    ), msg
    assert msg.endswith("stderr: fake: allocating without bound")


def test_native_allocation_past_the_limit_is_oom(fake_backends, tmp_path):
    got = _run(fake_backends("NativeMemoryHog"), tmp_path, max_memory=1 << 30)
    assert [r["status"] for r in got] == ["pass", "oom"], got[-1].get("message")
    assert got[1]["message"].startswith(
        "worker ran out of memory under its memory limit of 1.0 GiB (--max-memory) (signal SIGABRT) after 1 records: "
        "(no Python error); stderr: terminate called after throwing an instance of 'std::bad_alloc' | "
        "what():  std::bad_alloc"
    )


def test_every_fault_is_recorded_and_the_run_goes_on(fake_backends, tmp_path):
    names = ["Segfaulter", "Crasher", "PrepareRaiser", "MemoryHog", "Sleepy"]
    combos = [runner.Combo(cases.get(CASE), fake_backends(n), "static") for n in names]
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False, max_memory=1 << 30)
    from harness import results

    df = results.load([r.run(combos)])
    worst = {b: set(g["status"]) - {"pass"} for b, g in df.groupby("backend")}
    assert worst == {
        "segfaulter": {"crashed"},
        "crasher": {"crashed"},
        "prepare_raiser": {"error"},
        "memory_hog": {"oom"},
        "sleepy": set(),
    }


@pytest.mark.parametrize("text,want", [("1G", 1 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29), ("0", None), ("none", None)])
def test_max_memory_parses(text, want):
    assert limits.parse(text) == want


def test_max_memory_percent_is_of_the_machine():
    assert limits.parse("50%") == int(limits.machine_bytes() * 0.5)
    assert limits.default_bytes() == int(limits.machine_bytes() * limits.DEFAULT_FRACTION)


@pytest.mark.parametrize("fork", [True, False])
def test_a_small_limit_judges_forked_and_spawned_jobs_alike(fork, fake_backends, tmp_path):
    """The limit counts what the job allocates once its backend started: a job
    well within 100 MiB passes forked (the fork server's ~350 MiB of preloaded
    modules are not charged to it) as it does spawned, and one allocating
    without bound is ``oom`` either way."""
    from harness import registry

    combo = runner.Combo(cases.get(CASE), registry.backends()["torch_eager"], "static")
    ok = []
    runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False, max_memory=100 << 20, fork_server=fork).run_one(
        combo, ok.append
    )
    assert {r["status"] for r in ok} == {"pass"}, [r["message"] for r in ok]
    assert {r["machine"]["worker_start"]["how"] for r in ok} == {"fork" if fork else "spawn"}
    hog = _run(fake_backends("MemoryHog"), tmp_path, max_memory=100 << 20, fork_server=fork)
    assert [r["status"] for r in hog] == ["pass", "oom"]
