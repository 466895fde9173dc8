"""The zoo's probe sharded over a two-worker Dask LocalCluster writes the table
the sequential probe writes (issue 45: "the probe and the runs sharded over a
Dask cluster, with the same records as a local run"), and one that kills its
process is recorded as crashed either way."""

from __future__ import annotations

import json
import signal

import pytest

from cases import zoo

#: a few torch_geometric conv classes (cheap to build), one of each kind and one the
#: generic constructor cannot build: entries with an error, a parameter count and a reason
ONLY = "zoo_pyg_gcnconv_node,zoo_pyg_gcnconv_graph,zoo_pyg_sageconv_node,zoo_pyg_edgeconv_node"


def _probe(tmp_path, name, **kw) -> dict:
    out = tmp_path / f"{name}.json"
    zoo.probe(["zoo_pyg"], out=out, only=ONLY, **kw)
    return json.loads(out.read_text())["zoo_pyg"]


def test_a_two_worker_cluster_probes_as_the_local_probe(tmp_path, monkeypatch):
    # the sequential probe caps its process's memory: not this test process's
    monkeypatch.setattr(zoo, "_limit_memory", lambda: None)
    pytest.importorskip("torch_geometric", reason="the models extra is not installed")
    pytest.importorskip("distributed", reason="the 'distributed' extra is not installed (make setup installs it)")
    from harness import zoo_cluster

    local = _probe(tmp_path, "local")
    assert set(local) == set(ONLY.split(","))
    with zoo_cluster.Pool(None, jobs=2) as pool:
        dask = _probe(tmp_path, "dask", pool=pool)
        # both workers took tasks (a sharded probe, not one worker's)
        assert len(pool.client.scheduler_info()["workers"]) == 2
    assert dask == local


def test_an_architecture_that_kills_its_process_is_recorded_as_crashed(monkeypatch):
    """The probe server dies mid-probe (a fatal signal): the entry says crashed, as the
    sequential probe's table does, and the next architecture gets a new server."""
    spec = {"name": "zoo_pyg_gcnconv_node", "conv": "GCNConv", "kind": "node"}
    server = zoo._Server()
    real = server._start

    def start_then_die():
        real()
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()

    monkeypatch.setattr(server, "_start", start_then_die)
    assert server.probe("zoo_pyg", spec) == {**spec, "skipped": zoo.CRASHED}
    assert server.proc is None


def test_a_probe_of_nothing_is_a_usage_error(tmp_path):
    """An unknown family, or ``--only`` globs naming no architecture: one line naming it, exit 2."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "zoo.json"
    proc = subprocess.run(
        [sys.executable, "-m", "cases.zoo", "probe", "zoo_nope"], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "python -m cases.zoo: unknown zoo family zoo_nope; valid: zoo_hf, zoo_tv, zoo_pyg, zoo_timm, zoo_diffusers"
    ]
    pytest.importorskip("torch_geometric", reason="the models extra is not installed")
    with pytest.raises(zoo.ProbeError, match="'zoo_pyg_nope\\*' names no architecture of zoo_pyg"):
        zoo.probe(["zoo_pyg"], out=out, only="zoo_pyg_nope*", pool=lambda fam, specs: iter(()))
