"""Run metadata: commit, machine, package versions."""

from __future__ import annotations

import datetime
import os
import platform
import secrets
import subprocess
import sys
from importlib import metadata

from .envs import ROOT

PACKAGES = ("numpy", "torch", "jax", "jaxlib", "einx", "torch_xla", "sympy")


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def git_state(root=ROOT) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the repo, or ``(None, None)`` outside git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip() or None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10
        )
        return commit, bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def machine() -> dict:
    return {
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
    }


def versions() -> dict:
    """Versions of the packages this interpreter has (no imports)."""
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
