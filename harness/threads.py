"""One thread policy for every framework in a worker.

``--threads N`` becomes environment variables that torch (OpenMP/MKL) and
NumPy's BLAS (OpenBLAS/MKL) read at start-up, set before the worker's
interpreter starts. XLA's CPU backend has no thread-count flag that jaxlib
0.10.2 honours (``--intra_op_parallelism_threads`` aborts as unknown); with
``N = 1`` its Eigen kernels run on the calling thread
(``--xla_cpu_multi_thread_eigen=false``), for ``N > 1`` XLA keeps its own pool.
Inductor compiles with ``N`` threads too (``TORCHINDUCTOR_COMPILE_THREADS``):
left to itself it takes one per core and, above one, compiles through a pool
of worker processes, beside the job it is timing (eight torch_compile jobs,
back to back: 30.6 CPU-s with two compile threads, 28.4 with one).
``observed()`` reports what the worker actually runs with, for the record.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping

#: the XLA CPU flag that keeps an XLA computation's Eigen kernels on the calling thread
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"


def env_for(n: int | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables that limit every framework in a worker to ``n`` threads
    (``None`` or 0: the frameworks' defaults, nothing set)."""
    if not n:
        return {}
    environ = os.environ if environ is None else environ
    out = {k: str(n) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")}
    prior = environ.get("XLA_FLAGS", "").strip()
    if n == 1 and XLA_ONE_THREAD not in prior:
        out["XLA_FLAGS"] = f"{prior} {XLA_ONE_THREAD}".strip()
    return out


def observed() -> dict[str, object]:
    """The thread settings this process runs with: the policy variables, torch's
    intra-op thread count where torch is loaded, inductor's compile threads where
    its config is loaded, and the OS threads alive."""
    keys = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS", "TORCHINDUCTOR_COMPILE_THREADS")
    out: dict[str, object] = {k: os.environ.get(k) for k in keys}
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_num_threads"):
        out["torch_threads"] = torch.get_num_threads()
    inductor = sys.modules.get("torch._inductor.config")
    if inductor is not None:
        out["inductor_compile_threads"] = getattr(inductor, "compile_threads", None)
    with contextlib.suppress(OSError):
        out["os_threads"] = len(os.listdir("/proc/self/task"))
    return out
