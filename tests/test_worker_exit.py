"""A worker's exit skips the teardown nothing needs (torch's operator
libraries, dynamo's compile-time table nobody logs: ~60 ms of each job,
:func:`harness.worker.shed_exit_work`) and keeps every other exit handler."""

import atexit
import json
import logging
import tempfile
import weakref

import pytest
import torch._dynamo.utils
import torch.library

import cases
from harness import runner, worker


def _due(func) -> list[bool]:
    """Whether each finalizer of ``func`` runs at exit (``==``: a classmethod is bound anew each time)."""
    return [f.atexit for f, info in list(weakref.finalize._registry.items()) if info.func == func]


def test_shedding_skips_torchs_library_teardown_and_keeps_a_temporary_directorys(tmp_path):
    lib = torch.library.Library("dynshape_shed_test", "DEF")  # one more teardown finalizer
    scratch = tempfile.TemporaryDirectory(dir=tmp_path)
    assert any(_due(torch.library._del_library)) and _due(tempfile.TemporaryDirectory._cleanup) != []
    worker.shed_exit_work()
    assert _due(torch.library._del_library) and not any(_due(torch.library._del_library))
    assert all(_due(tempfile.TemporaryDirectory._cleanup))
    scratch.cleanup()
    del lib


@pytest.mark.parametrize("logged", [False, True], ids=["log-off", "log-on"])
def test_dynamos_compile_time_table_is_skipped_only_when_its_log_is_off(logged, monkeypatch):
    # atexit cannot be asked what it holds (an unregistered slot still counts in
    # _ncallbacks): watch what is unregistered instead
    gone: list = []
    monkeypatch.setattr(atexit, "unregister", gone.append)
    log = logging.getLogger(torch._dynamo.utils.__name__)
    level = log.level
    log.setLevel(logging.INFO if logged else logging.WARNING)  # setLevel: isEnabledFor caches
    try:
        worker.shed_exit_work()
    finally:
        log.setLevel(level)
    assert gone == ([] if logged else [torch._dynamo.utils.dump_compile_times])


@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "spawned"])
def test_a_jobs_worker_sheds_the_teardown_and_still_runs_its_exit_handlers(fake_backends, tmp_path, monkeypatch, fork_server):
    """End to end: when the job's own exit handler runs, no torch library teardown
    is due; after the worker has gone, that handler has run and the temporary
    directory its finalizer removes is gone."""
    monkeypatch.setenv("DYNSHAPE_FAKE_EXIT_DIR", str(tmp_path))
    combo = runner.Combo(cases.get("gnn_edge_divide"), fake_backends("ExitChecker"), "unbounded")
    r = runner.Runner(tmp_path / "run", profile="quick", repeats=1, warmup=0, progress=False, fork_server=fork_server)
    got: list = []
    r.run_one(combo, got.append)
    assert got and all(rec["status"] == "pass" for rec in got)
    assert {rec["machine"]["worker_start"]["how"] for rec in got} == {"fork" if fork_server else "spawn"}
    assert json.loads((tmp_path / "exit-handler.json").read_text()) == {"torch_library_teardowns": 0}
    assert [p.name for p in tmp_path.iterdir() if p.name != "run"] == ["exit-handler.json"]  # the directory went
