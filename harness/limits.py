"""A worker's memory limit: parsed from ``--max-memory``, applied in the worker.

The limit is ``RLIMIT_DATA`` (set with :mod:`resource`): since Linux 4.7 it
bounds the heap and every private writable mapping, so an allocation past it
fails (``MemoryError`` in Python, ``std::bad_alloc`` in C++) instead of the
kernel's OOM killer taking the machine down. Address-space reservations
(``PROT_NONE``) that runtimes make up front do not count against it, unlike
``RLIMIT_AS``.

What it bounds is what the job allocates once its backend has started: the
worker applies it after ``Backend.startup``, on top of the data the process
holds then (:func:`data_bytes`). A worker forked from the fork server holds
every module the server preloaded (about 350 MiB of torch, jax and inductor),
a spawned one only what its backend imported; counting from the interpreter's
start charged a forked job for the preload, so a limit under ~350 MiB made
every forked job ``oom`` while spawned ones passed.
"""

from __future__ import annotations

import os
import re

#: the default limit: this fraction of the machine's physical memory
DEFAULT_FRACTION = 0.5
#: the smallest limit a worker can start under (an interpreter with numpy)
MIN_BYTES = 64 << 20

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class LimitError(ValueError):
    """A memory limit that cannot be parsed or is out of range."""


def machine_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_bytes() -> int:
    return int(machine_bytes() * DEFAULT_FRACTION)


def parse(text: str) -> int | None:
    """``"8G"``, ``"512M"``, ``"1.5g"``, ``"50%"`` (of the machine) or ``"0"``
    / ``"none"`` (no limit) to bytes (``None``: no limit)."""
    t = str(text).strip().lower()
    if t in ("0", "none", "off"):
        return None
    total = machine_bytes()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(%|[kmgt]?)(?:i?b)?", t)
    if not m:
        raise LimitError(f"cannot read memory size {text!r}: give e.g. 8G, 512M, 50% (of {fmt(total)}) or 0 (no limit)")
    value, unit = float(m.group(1)), m.group(2)
    n = int(total * value / 100) if unit == "%" else int(value * _UNITS[unit])
    if not MIN_BYTES <= n <= total:
        raise LimitError(
            f"memory limit {text!r} = {fmt(n)} is outside the allowed range "
            f"[{fmt(MIN_BYTES)}, {fmt(total)}] (this machine's memory), or 0 for no limit"
        )
    return n


def fmt(n: int | None) -> str:
    if n is None:
        return "no limit"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def data_bytes() -> int:
    """This process's data memory as ``RLIMIT_DATA`` counts it (``VmData``;
    0 where ``/proc`` does not say)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def apply(limit: int | None, above: int = 0) -> None:
    """Cap this process's data memory at ``above + limit`` bytes (in the worker,
    once its backend has started, with ``above`` its :func:`data_bytes` then)."""
    if limit is None:
        return
    limit += above
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), so
    a killed harness leaves no worker behind."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)
