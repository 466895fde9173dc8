"""Python environments that backends run in.

``main`` is the interpreter running the harness. ``xla`` is the second
virtual environment with torch 2.9.1 + torch_xla 2.9.0 (``make xla-env``).
Backends use this to say whether they can run and to start helper
processes; the harness uses it to start workers. It imports nothing of the
project.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

ENVS: dict[str, dict[str, Any]] = {
    "main": {"python": None, "hint": "the harness's own interpreter"},
    "xla": {
        "python": ROOT / ".venv-xla" / "bin" / "python",
        "override": "DYNSHAPE_XLA_PYTHON",
        "hint": "torch 2.9.1 + torch_xla 2.9.0, ~3 min and ~7 GB the first time",
        "create": "make xla-env",
        "vars": {"PJRT_DEVICE": "CPU", "EXPERIMENTAL_XLA_UNBOUNDED_DYNAMISM": "1"},
    },
}


class EnvError(RuntimeError):
    pass


def python_for(env: str) -> str:
    """The interpreter of environment ``env``; raises :class:`EnvError` if absent."""
    if env not in ENVS:
        raise EnvError(f"unknown environment {env!r}; valid: {', '.join(ENVS)}")
    spec = ENVS[env]
    if spec["python"] is None:
        return sys.executable
    path = Path(os.environ.get(spec.get("override", ""), "") or spec["python"])
    if not path.exists():
        raise EnvError(f"environment {env!r} not found at {path}: create it with `{create_command(env)}` ({spec['hint']})")
    return str(path)


def create_command(env: str) -> str:
    """The command that creates (or repairs) environment ``env``, run in the repository root."""
    spec = ENVS[env]
    override = os.environ.get(spec.get("override", ""), "")
    if override and Path(override).parent.name == "bin":
        # the Makefile's knob for a venv elsewhere (mk/xla.mk: XLA_VENV)
        return f"{spec['create']} XLA_VENV={Path(override).parent.parent}"
    return spec["create"]


def env_vars(env: str) -> dict[str, str]:
    """Variables a worker of ``env`` needs (PYTHONPATH to the repo, and the env's own)."""
    out = dict(ENVS[env].get("vars", {}))
    path = os.environ.get("PYTHONPATH", "")
    out["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    return out


def modules_available(env: str, modules: tuple[str, ...]) -> tuple[bool, str]:
    """Whether every module in ``modules`` can be found in ``env`` (not imported)."""
    try:
        python = python_for(env)
    except EnvError as e:
        return False, str(e)
    missing = _missing(python, tuple(modules))
    if missing:
        fix = f"; (re)create it with `{create_command(env)}`" if ENVS[env].get("create") else ""
        return False, f"not installed in env {env!r}: {', '.join(missing)}{fix}"
    return True, ""


@functools.cache
def _missing(python: str, modules: tuple[str, ...]) -> tuple[str, ...]:
    if not modules:
        return ()
    if python == sys.executable:
        import importlib.util

        def found(m):
            try:
                return importlib.util.find_spec(m) is not None
            except (ImportError, ValueError):
                return False

        return tuple(m for m in modules if not found(m))
    probe = (
        "import importlib.util, json, sys; print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"
    )
    try:
        out = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True, timeout=60)
        return tuple(json.loads(out.stdout.strip().splitlines()[-1]))
    except Exception as e:  # a broken env is reported, not raised
        return tuple(f"{m} (probe failed: {e})" for m in modules)
