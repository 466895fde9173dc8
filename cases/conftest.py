"""Shared fixtures of the conformance gate, its markers and its records.

Every gate item is marked with its backend's name and its environment
(``-m "not xla"`` leaves out the torch_xla peers; ``-m einx`` runs only
einx; the markers are registered in the repository's ``conftest.py``). The records of the whole session go to one run file,
``<--dynshape-out>/gate-<id>.jsonl`` (xdist workers share it), which
``harness report`` and ``harness compare`` read like any run.
"""

import os
import secrets

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
    records (``writer`` is ``None`` with ``--dynshape-out none``)."""
    out = request.config.getoption("dynshape_out")
    run_id = os.environ.get("DYNSHAPE_GATE_RUN") or "gate-" + secrets.token_hex(5)
    if out == "none":
        yield run_id, None
        return
    writer = results.SharedWriter(os.path.join(str(request.config.rootpath), out, f"{run_id}.jsonl")
                                  if not os.path.isabs(out) else os.path.join(out, f"{run_id}.jsonl"))
    yield run_id, writer
    writer.close()
