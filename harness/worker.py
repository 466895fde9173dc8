"""Worker process: ``python -m harness.worker JOB_JSON`` (spawned, or forked from
the environment's fork server, :mod:`harness.forkserver`, which runs this module the same way).

Runs one job and writes one JSON line per record to the protocol stream
(the original stdout); anything the frameworks print goes to stderr. Lines:
``hello`` (the versions installed) as soon as the interpreter runs; ``ready`` after
``Backend.startup`` (its wall-clock time, so the parent can compute the job's
``startup_s`` from the moment it spawned the process, and the thread policy
seen; for a forked worker the parent counts from the fork request, so the
imports the fork server did once are not in it); one ``record`` per measured
call (with ``versions``: those of the modules its job imported, :func:`harness.meta.imported_versions`); last ``{"done": true}``, whose absence tells the parent the worker died;
``oom`` when an allocation failed under the job's memory limit
(``max_memory``: what the job may allocate once its backend has started, the
same whether the worker was spawned or forked, :mod:`harness.limits`);
``late_imports`` before ``done`` when the job imported a module of the job's
``watch`` list (:func:`harness.forkserver.catalogue`, which the parent
computed) after its startup (one its backend's ``preload``/``warmup`` does not
name: the parent warns).
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import sys
import time


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    before = set(sys.modules)  # a forked worker's: what its zygote imported (meta.imported_versions)
    job = json.loads(argv[0])
    from . import limits

    limits.die_with_parent()
    faulthandler.enable()  # a segfault leaves its Python stack in stderr
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # library prints must not corrupt the protocol
    sys.stdout = sys.stderr

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg, default=str) + "\n")
        proto.flush()

    from . import measure, meta, threads
    from .registry import load_spec

    send({"hello": True, "versions": meta.versions(), "pid": os.getpid()})
    try:
        backend = load_spec(job["spec"])
        try:
            for entry in (*backend.preload, *backend.warmup):  # no-ops where the fork server imported them
                importlib.import_module(entry.partition(":")[0])
            backend.startup()
        except MemoryError:
            raise
        except Exception:
            send({"fatal": "startup failed: " + measure.describe_exception()})
            return 1
        # counted from here, so that a forked worker's preloaded modules (which a
        # spawned one never imports) do not count against the job's limit
        limits.apply(job.get("max_memory"), above=limits.data_bytes())
        send({"ready": {"wall": time.time(), "threads": threads.observed()}})
        watched = [m for m in job.get("watch", ()) if m not in sys.modules]
        try:
            own = [e.partition(":")[0] for e in backend.preload] + list(backend.requires)

            def record(rec: dict) -> None:
                # each record says the versions of what its job has imported so far
                send({"record": {**rec, "versions": meta.imported_versions(before, own)}})

            measure.run(job, backend, record)
        finally:
            backend.teardown()
        late = [m for m in watched if m in sys.modules]
        if late:
            send({"late_imports": late, "backend": type(backend).__name__, "job": f"{job['case']}[{backend.name}-{job['mode']}]"})
    except MemoryError:
        send({"oom": measure.describe_exception()})
        return 1
    except Exception:
        send({"fatal": measure.describe_exception()})
        return 1
    send({"done": True})
    return 0


def shed_exit_work() -> None:
    """Skip the exit-time work of a worker that has nothing to undo: torch
    deregisters every operator library it loaded (one ``weakref.finalize`` each,
    ~40 ms once dynamo is imported) and dynamo tabulates its compile times for a
    log that is off unless ``TORCH_LOGS`` turns it on (~15 ms). Paid once per job,
    after its ``done``; every other exit handler (temporary directories, compile
    worker pools, jax) still runs."""
    import atexit
    import logging
    import weakref

    library = sys.modules.get("torch.library")
    if library is not None:
        for finalizer, info in list(weakref.finalize._registry.items()):  # type: ignore[attr-defined]
            if info.func is library._del_library:
                finalizer.atexit = False
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is not None and not logging.getLogger(utils.__name__).isEnabledFor(logging.INFO):
        atexit.unregister(utils.dump_compile_times)


if __name__ == "__main__":
    code = main()
    shed_exit_work()
    sys.exit(code)
