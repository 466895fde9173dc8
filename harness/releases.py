"""The release axis of ``harness run --versions``: a job per release of a backend's system.

A job planned over a release runs in that release's environment (``Combo.env``,
one of ``backends.envs``' release environments) instead of its backend's own;
:func:`with_versions` plans those jobs and :func:`available` says whether such
an environment can run one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from backends import envs

if TYPE_CHECKING:
    from backends.base import Backend


def with_versions(combos: Iterable[Any], versions: dict[str, list[str]]) -> list[Any]:
    """Each combo (a :class:`harness.runner.Combo`; this module sits below the runner) of a
    backend of a system in ``versions`` (``{system: [release environment, ...]}``,
    :func:`backends.envs.parse_versions`) once per release, in that release's
    environment; the others as they are. A backend's system is
    :func:`backends.envs.system_of` its ``env`` and ``requires``: jax if it needs
    jax (the stablehlo executors too, which also need torch, and so skip where a
    jax release has none), else torch; torch_xla's backends keep their own env."""
    out = []
    for c in combos:
        system = envs.system_of(c.backend.env, tuple(c.backend.requires))
        out += [dataclasses.replace(c, env=e) for e in versions[system]] if system in versions else [c]
    return out


def available(backend: Backend, env: str) -> tuple[bool, str]:
    """Whether the release environment ``env`` has the backend's ``requires``
    and the release its entry declares (``backends.envs.version_mismatch``)."""
    ok, why = envs.modules_available(env, tuple(backend.requires))
    if not ok:
        return False, why
    why = envs.version_mismatch(env)
    return not why, why
