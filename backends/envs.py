"""Python environments that backends run in.

``main`` is the interpreter running the harness. ``xla`` is the second
virtual environment with torch 2.9.1 + torch_xla 2.9.0 (``make xla-env``).
Backends use this to say whether they can run and to start helper
processes; the harness uses it to start workers. It imports nothing of the
project.

The entries with a ``system`` and a ``version`` are releases of a system
under test, for ``harness run --versions torch=2.9.1,2.13.0``: each names the
interpreter whose installed ``system`` is that release (two of them are
``main``'s, one reuses ``.venv-xla``, ``jax-0.12.0.1`` is ``make
versions-env``'s). A job of a backend of that system (:func:`system_of`) runs
there instead of in the backend's own ``env``.
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
        "knob": "XLA_VENV",
        "vars": {"PJRT_DEVICE": "CPU", "EXPERIMENTAL_XLA_UNBOUNDED_DYNAMISM": "1"},
    },
    # releases of the systems under test (harness run --versions): each entry's
    # interpreter has `system` at `version` installed (checked: version_mismatch)
    "torch-2.9.1": {
        "python": ROOT / ".venv-xla" / "bin" / "python",
        "override": "DYNSHAPE_XLA_PYTHON",
        "hint": "the xla environment's torch 2.9.1 (no einx), ~3 min and ~7 GB the first time",
        "create": "make xla-env",
        "knob": "XLA_VENV",
        "system": "torch",
        "version": "2.9.1",
    },
    "torch-2.13.0": {"python": None, "hint": "the main environment's torch", "system": "torch", "version": "2.13.0"},
    "jax-0.10.2": {"python": None, "hint": "the main environment's jax", "system": "jax", "version": "0.10.2"},
    "jax-0.12.0.1": {
        "python": ROOT / ".venv-jax012" / "bin" / "python",
        "override": "DYNSHAPE_JAX012_PYTHON",
        "hint": "jax/jaxlib 0.12.0.1 on CPython 3.12 (no torch), ~15 s and ~0.5 GB the first time",
        "create": "make versions-env",
        "knob": "JAX012_VENV",
        "system": "jax",
        "version": "0.12.0.1",
    },
}

#: the systems whose releases have environments: the distribution whose
#: version names the release
SYSTEMS = {"torch": "torch", "jax": "jax"}


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
    if override and Path(override).parent.name == "bin" and spec.get("knob"):
        # the Makefile's knob for a venv elsewhere (mk/xla.mk: XLA_VENV, mk/versions.mk: JAX012_VENV)
        return f"{spec['create']} {spec['knob']}={Path(override).parent.parent}"
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


# -- releases of the systems under test (harness run --versions) -------------


def system_of(env: str, requires: tuple[str, ...]) -> str | None:
    """The system whose release a backend of ``env`` needing ``requires`` runs on:
    ``jax`` when it needs jax, else ``torch`` when it needs torch; ``None`` for a
    backend of another environment than ``main`` (torch_xla's is pinned to its own torch)."""
    if env != "main":
        return None
    return next((s for s in ("jax", "torch") if s in requires), None)


def release(env) -> str | None:
    """``env`` when it names a release's environment (an entry with a ``system``), else ``None``."""
    return env if isinstance(env, str) and "system" in ENVS.get(env, {}) else None


def release_label(env) -> str:
    """``"torch 2.9.1"`` for a release's environment, ``""`` for any other."""
    spec = ENVS[env] if release(env) else {}
    return f"{spec['system']} {spec['version']}" if spec else ""


def versions_of(system: str) -> list[str]:
    """The releases of ``system`` that have an environment, in :data:`ENVS` order."""
    return [spec["version"] for spec in ENVS.values() if spec.get("system") == system]


def version_env(system: str, version: str) -> str:
    """The environment of release ``version`` of ``system``; :class:`EnvError` naming the valid ones."""
    if system not in SYSTEMS:
        raise EnvError(f"--versions: unknown system {system!r}; valid: {', '.join(SYSTEMS)}")
    for name, spec in ENVS.items():
        if spec.get("system") == system and spec.get("version") == version:
            return name
    raise EnvError(
        f"--versions: no environment for {system} {version!r}; declared in backends/envs.py: {', '.join(versions_of(system))}"
    )


def parse_versions(specs: list[str]) -> dict[str, list[str]]:
    """``["torch=2.9.1,2.13.0", ...]`` as ``{system: [environment, ...]}``; :class:`EnvError` on a bad spec."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        system, eq, listed = spec.partition("=")
        versions = [v.strip() for v in listed.split(",") if v.strip()]
        if not eq or not versions:
            raise EnvError(f"--versions {spec!r}: expected SYSTEM=V1,V2 (e.g. torch=2.9.1,2.13.0)")
        if system.strip() in out:
            raise EnvError(f"--versions: {system.strip()} given twice")
        out[system.strip()] = list(dict.fromkeys(version_env(system.strip(), v) for v in versions))
    return out


def installed_version(env: str, dist: str) -> str | None:
    """The version of distribution ``dist`` installed in ``env`` (``None``: not installed or no env)."""
    try:
        python = python_for(env)
    except EnvError:
        return None
    return _installed(python, dist)


@functools.cache
def _installed(python: str, dist: str) -> str | None:
    from importlib import metadata

    if python == sys.executable:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    probe = "import importlib.metadata as m, sys\ntry: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: print()"
    try:
        out = subprocess.run([python, "-c", probe, dist], capture_output=True, text=True, timeout=60)
        return out.stdout.strip().splitlines()[-1] or None
    except Exception:  # a broken env reads as not installed; python_for/modules_available say why
        return None


def version_mismatch(env: str) -> str:
    """Why ``env``'s installed release is not the one its entry declares ("" when it is,
    or the entry declares none); a local label (``+cpu``, ``+cu128``) is not compared."""
    spec = ENVS[env]
    if "system" not in spec:
        return ""
    got = installed_version(env, SYSTEMS[spec["system"]])
    if got is not None and got.partition("+")[0] == spec["version"]:
        return ""
    fix = f"; (re)create it with `{create_command(env)}`" if spec.get("create") else ""
    return f"env {env!r} has {spec['system']} {got or '(not installed)'}, not {spec['version']}{fix}"
