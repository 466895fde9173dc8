"""Case packs in every environment a backend runs in: ``dynshape packs install
PATH`` and the check that names a pack missing from a job's environment.

A worker finds a pack's cases through the ``dynshape.cases`` entry points of
the interpreter it runs in (:mod:`cases.packs`), so a pack installed only in
the harness's environment is unknown to the jobs of ``env = "xla"`` backends
(they failed with ``unknown case``). ``pip install -e PACK`` in ``.venv-xla``
fails there (``invalid command 'bdist_wheel'``: that environment has no
``wheel``, and an isolated build needs the network), so :func:`install` does
what an editable install leaves behind, with no build step: a ``.pth`` file
putting the pack's source on ``sys.path`` and a ``.dist-info`` holding its
entry points, in each environment's ``site-packages``; then it asks each
environment which packs it sees.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

from backends import envs

from . import results

GROUP = "dynshape.cases"
#: what an environment's interpreter prints: its site-packages and the packs it sees
_PROBE = (
    "import json, sysconfig; from importlib import metadata; "
    "print(json.dumps({'purelib': sysconfig.get_paths()['purelib'], "
    f"'packs': sorted(e.name for e in metadata.entry_points(group={GROUP!r}))}}))"
)


class PackError(results.ResultsError):
    """A pack that cannot be installed: a usage error (exit 2) naming it."""


def pythons() -> dict[str, str]:
    """``{env: interpreter}`` for every environment that exists here, each
    interpreter once (a release's environment may be ``main``'s or ``xla``'s: backends.envs)."""
    out: dict[str, str] = {}
    for name in envs.ENVS:
        try:
            python = envs.python_for(name)
        except envs.EnvError:
            continue
        if python not in out.values():
            out[name] = python
    return out


def _probe(python: str) -> dict:
    try:
        p = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PackError(f"cannot ask {python} for its packs: {e}") from None
    if p.returncode:
        raise PackError(f"{python} failed listing its packs: {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


@functools.cache
def packs_in(python: str) -> frozenset[str]:
    """The ``dynshape.cases`` entry points ``python`` sees (its own site,
    plus ``PYTHONPATH`` as a worker would have it)."""
    p = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    if p.returncode:
        return frozenset()
    return frozenset(json.loads(p.stdout.strip().splitlines()[-1])["packs"])


def read_pack(path: str | os.PathLike) -> tuple[str, str, dict[str, str], Path]:
    """``(name, version, {entry point: target}, import root)`` from the
    pack's ``pyproject.toml`` (``[project.entry-points."dynshape.cases"]``)."""
    root = Path(path).resolve()
    meta = root / "pyproject.toml"
    if not meta.is_file():
        raise PackError(f'{root}: no pyproject.toml (a case pack declares its [project.entry-points."{GROUP}"])')
    try:
        project = tomllib.loads(meta.read_text(encoding="utf-8")).get("project", {})
    except tomllib.TOMLDecodeError as e:
        raise PackError(f"{meta}: not valid TOML: {e}") from None
    name, eps = project.get("name"), project.get("entry-points", {}).get(GROUP)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise PackError(f"{meta}: field project.name is missing or not a distribution name")
    if not isinstance(eps, dict) or not eps or not all(isinstance(v, str) for v in eps.values()):
        raise PackError(f'{meta}: no [project.entry-points."{GROUP}"] table of name = "module[:object]"')
    src = root / "src"
    return name, str(project.get("version", "0")), eps, src if src.is_dir() else root


def install(path: str | os.PathLike, targets: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Install the pack at ``path`` into each environment of ``targets``
    (``{env: python}``; default: every environment here) as an editable
    install would, without building; returns ``{env: packs it now sees}``.
    Raises :class:`PackError` when an environment does not see the pack after."""
    name, version, eps, src = read_pack(path)
    dist = re.sub(r"[-_.]+", "_", name).lower()
    out = {}
    for env, python in (targets or pythons()).items():
        site = Path(_probe(python)["purelib"])
        for old in site.glob(f"{dist}-*.dist-info"):  # a reinstall replaces the version before
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        info = site / f"{dist}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[{GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
        (info / "INSTALLER").write_text("dynshape\n")
        (site / f"__editable__.{dist}.pth").write_text(f"{src}\n")
        seen = _probe(python)["packs"]
        missing = sorted(set(eps) - set(seen))
        if missing:
            raise PackError(f"env {env} ({python}) does not see {', '.join(missing)} after installing {name}")
        out[env] = seen
    packs_in.cache_clear()
    return out


def missing_reason(case_pack: str | None, env: str) -> str | None:
    """Why a job of a case from pack ``case_pack`` (``None``: in-tree) cannot
    run in ``env``, or ``None`` when that environment has the pack."""
    if case_pack is None or env == "main":
        return None
    try:
        python = envs.python_for(env)
    except envs.EnvError:
        return None  # the backend is unavailable, which says so itself
    if case_pack in packs_in(python):
        return None
    return (
        f"case pack {case_pack!r} is not installed in env {env} ({python}): install it into every "
        "environment with `dynshape packs install PATH`"
    )
