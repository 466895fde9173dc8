"""``harness run --scheduler [ADDRESS]``: jobs on a Dask distributed cluster.

Each job (case, backend, mode) is a task; the Dask worker that takes it runs
the job exactly as the local executor does (``Runner.run_one``: the job's own
worker process, in the backend's environment, on that node) and streams every
record back through a Dask queue to the one results file, tagged with the node
(``node``: host name and Dask worker address) and that node's ``machine``.
With no address a :class:`distributed.LocalCluster` of ``jobs`` single-threaded
worker processes is started (and closed) here. Needs the optional
``distributed`` extra (``pip install -e '.[distributed]'``).
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

from . import results
from .runner import SETTINGS as RUN_SETTINGS

#: the Runner settings a node needs to run a job as the local executor would (its
#: memory limit is the node's own default: the submitting machine's says nothing of it)
SETTINGS = tuple(k for k in RUN_SETTINGS if k != "max_memory")
#: seconds to reach the scheduler before ``--scheduler ADDRESS`` is a usage error
CONNECT_TIMEOUT_S = 10.0


def _client(address: str | None, jobs: int):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise results.ResultsError("--scheduler needs the 'distributed' package: pip install -e '.[distributed]'") from None
    if address:
        try:
            return Client(address, timeout=CONNECT_TIMEOUT_S), None
        except (ValueError, TypeError) as e:  # not an address (``banana``: no port)
            raise results.ResultsError(f"--scheduler {address}: not a scheduler address ({e}); give e.g. "
                                       "tcp://127.0.0.1:8786") from None
        except (OSError, TimeoutError) as e:
            raise results.ResultsError(f"--scheduler {address}: no Dask scheduler answered within "
                                       f"{CONNECT_TIMEOUT_S:.0f} s ({e})") from None
    cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def run_job(settings: dict, run_id: str, case: str, backend: str, mode: str, queue: str) -> int:
    """On a Dask worker: run one job and put each record on ``queue``."""
    from distributed import Queue, get_worker

    from . import runner

    combo, = runner.plan(case, backend, mode)  # names are identifiers: each glob matches itself
    r = runner.Runner("results", run_id=run_id, progress=False, **settings)
    q = Queue(queue)
    node = f"{socket.gethostname()} ({get_worker().address})"
    return len(r.run_one(combo, lambda rec: q.put(dict(rec, node=node))))


def run(runner, combos, address: str | None = None, jobs: int = 1) -> Path:
    """Run ``combos`` on the cluster at ``address`` (``None``: a LocalCluster
    of ``jobs`` workers), appending every record to ``runner.path``."""
    from distributed import Queue

    client, cluster = _client(address, jobs)
    runner.write_plan(list(combos))
    try:
        name = f"dynshape-{runner.run_id}-{secrets.token_hex(3)}"
        q = Queue(name, client=client)
        settings = {k: getattr(runner, k) for k in SETTINGS}
        futures = {client.submit(run_job, settings, runner.run_id, c.case.name, c.backend.name, c.mode, name,
                                 pure=False, key=f"dynshape-{runner.run_id}-{c.id}"): c for c in combos}
        with results.Writer(runner.path) as writer:
            pending = set(futures)
            while pending or q.qsize():
                for rec in _drain(q):
                    writer.write(rec)
                for f in [f for f in pending if f.done()]:
                    pending.discard(f)
                    if f.status != "finished":  # the task itself failed (node lost, import error)
                        c = futures[f]
                        writer.write(results.record(**runner._common, case=c.case.name, backend=c.backend.name,
                                                    mode=c.mode, env=c.backend.env, timestamp=_now(), status="error",
                                                    ok=False, message=f"dask task failed: {f.exception()!r}"))
        return runner.path
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _drain(q, wait: float = 0.2) -> list[dict]:
    """What the queue holds now (waiting up to ``wait`` s for the first item)."""
    n = q.qsize()
    if not n:
        try:
            return [q.get(timeout=wait)]
        except Exception:  # distributed raises a TimeoutError of its own flavour
            return []
    return list(q.get(batch=n))


def _now() -> str:
    from . import meta

    return meta.now()
