"""The zoo's probe on a Dask cluster: ``dynshape zoo-probe --scheduler [ADDRESS]``.

Each architecture is a task; the Dask worker that takes it probes it in its
probe server, a process it keeps for the next task (:func:`cases.zoo.probe_isolated`:
the probe's alarm and memory cap are that process's, and an architecture that kills
it is recorded as crashed, as the sequential probe records it), and the entries come back to
the client, which writes ``cases/zoo.json`` as they arrive. The table is the
one the sequential probe writes (``tests/test_zoo_cluster.py`` compares them).
The client and the cluster are :func:`harness.cluster._client`'s: an address,
or a LocalCluster of ``jobs`` single-threaded workers.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from . import cluster


class Pool:
    """A Dask client held for one probe (every family's architectures): call it
    with a family and its specs for their entries, in the order they finish."""

    def __init__(self, address: str | None = None, jobs: int = 2):
        self.address, self.jobs = address, jobs
        self.client: Any = None
        self.cluster: Any = None

    def __enter__(self) -> Pool:
        self.client, self.cluster = cluster._client(self.address, self.jobs)
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __call__(self, family: str, specs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed

        from cases import zoo

        token = secrets.token_hex(3)
        futures = {
            self.client.submit(zoo.probe_isolated, family, spec, pure=False, key=f"zoo-probe-{spec['name']}-{token}"): spec
            for spec in specs
        }
        for f in as_completed(futures):
            if f.status == "finished":
                yield f.result()
            else:  # the task itself failed (its node lost): said as the sequential probe says a lost process
                yield {**futures[f], "skipped": f"{zoo.CRASHED} (dask task failed: {f.exception()!r})"}
            f.release()
