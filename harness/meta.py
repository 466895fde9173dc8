"""Run metadata: commit, machine, package versions."""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import platform
import secrets
import subprocess
import sys
from collections.abc import Collection
from importlib import metadata

from backends.envs import ROOT

PACKAGES = ("numpy", "torch", "jax", "jaxlib", "einx", "torch_xla", "sympy")
#: the distributions whose versions a record carries when its job imported them
#: (:func:`imported_versions`), by the top-level module that imports them
IMPORTED = {
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "einx": "einx",
    "torch_xla": "torch_xla",
    "transformers": "transformers",
    "torchvision": "torchvision",
    "torch_geometric": "torch_geometric",
    "timm": "timm",
    "diffusers": "diffusers",
    "numpy": "numpy",
}


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def git_state(root=ROOT) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the repo, or ``(None, None)`` outside git."""
    try:
        commit = (
            subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
            or None
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10
        )
        return commit, bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def machine() -> dict:
    """What the run's figures were measured on: CPU model, cores (and those this
    process may use), the cgroup's CPU quota, memory, and the load at the start."""
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "host": platform.node(),
        "cpu": cpu_model() or platform.machine(),
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "cpu_quota": cgroup_cpu_quota(),
        "memory_gib": _gib(_meminfo_total()),
        "memory_limit_gib": _gib(_cgroup_memory_limit()),
        "load_avg": load,
        "system": f"{platform.system()} {platform.release()}",
    }


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def cpu_model(cpuinfo: str | None = None) -> str | None:
    """The CPU's model name from ``/proc/cpuinfo`` (``platform.processor()`` is
    empty on Linux)."""
    text = _read("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Hardware") and value.strip():
            return value.strip()
    return None


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs the cgroup allows (quota / period), or ``None`` when unlimited or unknown."""
    v2 = _read(f"{root}/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        return None if quota == "max" else round(int(quota) / int(period or 100000), 2)
    v1_quota, v1_period = _read(f"{root}/cpu/cpu.cfs_quota_us"), _read(f"{root}/cpu/cpu.cfs_period_us")
    if v1_quota and v1_period and int(v1_quota) > 0:
        return round(int(v1_quota) / int(v1_period), 2)
    return None


def _meminfo_total() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_memory_limit(root: str = "/sys/fs/cgroup") -> int | None:
    raw = _read(f"{root}/memory.max") or _read(f"{root}/memory/memory.limit_in_bytes")
    if not raw or raw == "max" or int(raw) >= 1 << 60:
        return None
    return int(raw)


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / 2**30, 1)


def versions() -> dict:
    """Versions of the packages this interpreter has (no imports)."""
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out


def imported_versions(before: Collection[str] = (), own: Collection[str] = ()) -> dict:
    """Versions of the :data:`IMPORTED` distributions whose module this process
    imported: those in ``sys.modules`` now but not in ``before`` (what a forked
    worker's zygote had imported, for whichever backends), plus those ``own``
    names (modules of the job's backend's ``preload``, which the zygote imported
    for it). With ``python`` always."""
    tops = {m.partition(".")[0] for m in own} | {m.partition(".")[0] for m in sys.modules if m not in before}
    out = {"python": sys.version.split()[0]}
    for dist, module in IMPORTED.items():
        if module in tops and module in sys.modules:
            v = _version(dist)
            if v:
                out[dist] = v
    return out


@functools.cache
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
