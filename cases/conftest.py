"""Shared fixtures of the conformance gate, its markers and its records.

Every gate item is marked with its backend's name and its environment
(``-m "not xla"`` leaves out the torch_xla peers; ``-m einx`` runs only
einx; the markers are registered in the repository's ``conftest.py``). The records of the whole session go to one run file,
``<--dynshape-out>/gate-<id>.jsonl`` (xdist workers share it), which
``harness report`` and ``harness compare`` read like any run, with its plan
beside it (``gate-<id>.plan.json``).
"""

import json
import os
import secrets
from pathlib import Path

import pytest

from harness import expectations, results


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) names the run
        os.environ.setdefault("DYNSHAPE_GATE_RUN", "gate-" + secrets.token_hex(5))


@pytest.fixture(scope="session")
def rules():
    return expectations.load()


@pytest.fixture(scope="session")
def gate_run(request):
    """``(run_id, writer)``: the session's run id and the shared writer of its
    records (``writer`` is ``None`` with ``--dynshape-out none``). Beside the
    records goes the run's plan (``gate-<id>.plan.json``: the collected jobs
    that can run here, and the gate's settings), so ``harness report --check``
    of the gate's records notices a job that never ran, as it does for a run."""
    out = request.config.getoption("dynshape_out")
    run_id = os.environ.get("DYNSHAPE_GATE_RUN") or "gate-" + secrets.token_hex(5)
    if out == "none":
        yield run_id, None
        return
    path = (
        os.path.join(str(request.config.rootpath), out, f"{run_id}.jsonl")
        if not os.path.isabs(out)
        else os.path.join(out, f"{run_id}.jsonl")
    )
    writer = results.SharedWriter(path)
    _write_plan(path, run_id, request.session.items)
    yield run_id, writer
    writer.close()


def _collected(items) -> list:
    """The gate's jobs among the session's items."""
    return [it.callspec.params["combo"] for it in items if hasattr(it, "callspec") and "combo" in it.callspec.params]


@pytest.fixture(scope="session")
def gate_fingerprints():
    """The session's job fingerprints (each record's ``fingerprint``), its files read
    once, as one run's are: a Runner of its own per job would read and parse every
    backend's import closure again (~1-2 s a job)."""
    from harness import fingerprint

    return fingerprint.Fingerprints()


@pytest.fixture(scope="session")
def gate_preload(request):
    """What the session's zygotes preload: every ``Backend.preload``/``warmup`` entry of the jobs
    it collected, so that one zygote per environment serves all of them (a job run
    alone gets its own backend's, and a later job that wants more another zygote)."""
    from harness import forkserver

    return forkserver.preload_of(_collected(request.session.items))


def _write_plan(path: str, run_id: str, items) -> None:
    """The gate's plan, as :meth:`harness.runner.Runner.write_plan` writes a run's.
    Every xdist worker collected the same items, so each writes the same file;
    a unique temporary name and an atomic replace keep any reader from a torn one."""
    from cases.test_conformance import REPEATS
    from harness import runner

    jobs = [[c.case.name, c.backend.name, c.mode] for c in _collected(items) if c.skip_reason() is None]
    plan = {"run_id": run_id, "profile": "quick", "repeats": REPEATS, "warmup": 1, "processes": 1, "jobs": jobs}
    target = runner.plan_path(Path(path))
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)
