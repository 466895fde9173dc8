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
from .forkserver import preload_of
from .runner import SETTINGS as RUN_SETTINGS

#: the Runner settings a node needs to run a job as the local executor would (its
#: memory limit is the node's own default: the submitting machine's says nothing of
#: it), and whether it forks workers from a fork server (``--no-fork-server``)
SETTINGS = (*(k for k in RUN_SETTINGS if k != "max_memory"), "fork_server")
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
            raise results.ResultsError(
                f"--scheduler {address}: not a scheduler address ({e}); give e.g. tcp://127.0.0.1:8786"
            ) from None
        except (OSError, TimeoutError) as e:
            raise results.ResultsError(
                f"--scheduler {address}: no Dask scheduler answered within {CONNECT_TIMEOUT_S:.0f} s ({e})"
            ) from None
    cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def run_job(settings: dict, run_id: str, case: str, backend: str, mode: str, queue: str) -> int:
    """On a Dask worker: run one job, putting each record on ``queue`` and
    then a ``done`` message, all tagged with this attempt (a task runs again
    when a worker is lost: the client keeps one finished attempt per job)."""
    from distributed import Queue, get_worker

    from . import runner

    (combo,) = runner.plan(case, backend, mode)  # names are identifiers: each glob matches itself
    r = runner.Runner("results", run_id=run_id, progress=False, **settings)
    q = Queue(queue)
    node = f"{socket.gethostname()} ({get_worker().address})"
    tag = {"job": combo.id, "attempt": secrets.token_hex(6)}
    n = len(r.run_one(combo, lambda rec: q.put(dict(tag, record=dict(rec, node=node)))))
    q.put(dict(tag, done=n))
    return n


class _Attempts:
    """The client's side of the records stream: each attempt's records are
    held until its ``done`` arrives, then the first finished attempt of a job
    is written and any other (a partial attempt on a lost worker, a finished
    job run again) goes to ``<run_id>.incomplete``, as ``--resume`` sets
    aside the records of a job cut short: kept, out of the reports' way."""

    def __init__(self, writer: results.Writer, aside: Path):
        self.writer, self.aside = writer, aside
        self.held: dict[tuple[str, str], list[dict]] = {}
        #: job id → the attempt whose records are in the run
        self.finished: dict[str, str] = {}

    def take(self, msg: dict) -> str | None:
        """File one message; the job id when it finished an attempt."""
        key = (msg["job"], msg["attempt"])
        if "record" in msg:
            self.held.setdefault(key, []).append(msg["record"])
            return None
        recs = self.held.pop(key, [])
        if msg["job"] in self.finished:
            self.set_aside(recs)
        else:
            self.finished[msg["job"]] = msg["attempt"]
            for rec in recs:
                self.writer.write(rec)
        return msg["job"]

    def set_aside(self, recs: list[dict]) -> None:
        if recs:
            with results.Writer(self.aside) as w:
                for rec in recs:
                    w.write(rec)

    def close(self) -> None:
        """Set aside every attempt that never finished."""
        for recs in self.held.values():
            self.set_aside(recs)
        self.held.clear()


def run(runner, combos, address: str | None = None, jobs: int = 1) -> Path:
    """Run ``combos`` on the cluster at ``address`` (``None``: a LocalCluster
    of ``jobs`` workers), appending every record to ``runner.path``.

    A job's records reach the run when its attempt finishes, and the job's
    task is released then, so a worker lost later costs no finished job; a
    job whose worker is lost mid-run is run again by Dask, and only the
    finished attempt's records are kept in the run (the others in
    ``<run_id>.incomplete``)."""
    from distributed import Queue

    client, cluster = _client(address, jobs)
    runner.write_plan(list(combos))
    try:
        name = f"dynshape-{runner.run_id}-{secrets.token_hex(3)}"
        q = Queue(name, client=client)
        # every node's zygote preloads what the whole run's backends name, as a local run's does
        settings = {k: getattr(runner, k) for k in SETTINGS} | {"zygote_preload": preload_of(combos)}
        with results.Writer(runner.path) as writer:  # the jobs that need no worker, grouped, as a local run writes them
            combos = runner.write_idle(list(combos), writer.write)
        futures = {
            client.submit(
                run_job,
                settings,
                runner.run_id,
                c.case.name,
                c.backend.name,
                c.mode,
                name,
                pure=False,
                key=f"dynshape-{runner.run_id}-{c.id}",
            ): c
            for c in combos
        }
        by_id = {c.id: f for f, c in futures.items()}
        with results.Writer(runner.path) as writer:
            attempts = _Attempts(writer, runner.path.with_suffix(".incomplete"))
            try:
                pending = set(futures)
                while pending or q.qsize():
                    for msg in _drain(q):
                        job = attempts.take(msg)
                        f = by_id.get(job)
                        if f is not None and f in pending:  # its result is not needed: a lost worker must not recompute it
                            pending.discard(f)
                            f.release()
                    for f in [f for f in pending if f.done()]:
                        pending.discard(f)
                        if f.status != "finished":  # the task itself failed (node lost, import error)
                            c = futures[f]
                            writer.write(
                                results.record(
                                    **runner._common,
                                    case=c.case.name,
                                    backend=c.backend.name,
                                    mode=c.mode,
                                    env=c.env_name,
                                    timestamp=_now(),
                                    status="error",
                                    ok=False,
                                    message=f"dask task failed: {f.exception()!r}",
                                )
                            )
            finally:
                attempts.close()
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
