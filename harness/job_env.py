"""The environment a job's worker runs with.

It starts from the parent's (:func:`parent_env`), then adds the job's
environment's variables (``PYTHONPATH`` to the repository, the env's own), the
compile caches (:func:`cache_env`: a fresh directory per job, so novel means
novel), the thread policy and the backend's own (:meth:`Backend.job_env`: a
run's service, such as torch_xla's export server). Variables that nothing the
fork server preloads reads at import (:data:`harness.forkserver.PER_JOB`) may
differ from job to job; any other difference starts another fork server.
"""

from __future__ import annotations

import os

from backends import envs
from cases import libs

from . import forkserver, threads

#: variables a library sets in its own process, for itself, before it reads them
#: (inductor: an address, before it loads each compiled module): a worker does not
#: inherit the parent's, so that a parent that compiled in-process starts its jobs
#: with the environment (and the fork server) of one that did not
PROCESS_LOCAL = ("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR",)


def parent_env() -> dict[str, str]:
    """The environment a job starts from: this process's, with the model libraries'
    settings (:data:`cases.libs.ENV`) whether or not this process loaded one, less
    :data:`PROCESS_LOCAL`. Variables a test or a library set in this process would
    otherwise give each of its later jobs a zygote of its own (~9 CPU-s to start)."""
    env = {k: v for k, v in os.environ.items() if k not in PROCESS_LOCAL}
    for k, v in libs.ENV.items():
        env.setdefault(k, v)
    return env


def cache_env(cache_dir: str | None) -> dict[str, str]:
    """Point on-disk compile caches at a fresh directory (so novel means novel),
    or at ``results/.cache`` when warm caches are asked for."""
    if cache_dir is None:
        root = envs.ROOT / "results" / ".cache"
        return {
            "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
            "JAX_COMPILATION_CACHE_DIR": str(root / "jax"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            "XLA_PERSISTENT_CACHE_PATH": str(root / "torch_xla"),
        }
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache_dir, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(cache_dir, "triton"),
        "JAX_ENABLE_COMPILATION_CACHE": "false",
    }


def compose(backend, cache_dir: str | None, n_threads: int | None, env_name: str | None = None) -> dict[str, str]:
    """The environment of a job of ``backend`` whose compile caches go to
    ``cache_dir`` (``None``: the warm ``results/.cache``), on ``n_threads`` threads,
    in environment ``env_name`` (default the backend's; a release's with ``--versions``)."""
    env = parent_env()
    env.update(envs.env_vars(env_name or backend.env))
    env.update(cache_env(cache_dir))
    env["PYTHONUNBUFFERED"] = "1"
    # one thread policy for torch, BLAS and XLA: small ops on a shared
    # 2-core machine time far more steadily on one thread
    env.update(threads.env_for(n_threads, env))
    env.update(backend.job_env({k: v for k, v in env.items() if k not in forkserver.PER_JOB}))  # a run's service
    return env
