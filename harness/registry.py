"""Backend discovery through the ``dynshape.backends`` entry-point group.

Built-in backends register there exactly as a third-party package would
(``pyproject.toml``). A backend whose module fails to import is listed as
unavailable with the import error, never a crash of the harness.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

from backends.base import Backend

GROUP = "dynshape.backends"


class RegistryError(RuntimeError):
    pass


class Broken(Backend):
    """Stand-in for a registered backend that cannot be loaded."""

    def __init__(self, name: str, spec: str, error: str):
        self.name, self.spec, self.error = name, spec, error

    def available(self):
        return False, f"cannot load {self.spec}: {self.error}"


def _entry_points():
    return metadata.entry_points(group=GROUP)


def names() -> list[str]:
    """Every registered backend's name, loadable or not (nothing is imported)."""
    return sorted({ep.name for ep in _entry_points()})


@functools.cache
def backends() -> dict[str, Backend]:
    """Every registered backend by name, instantiated, in name order."""
    found: dict[str, Backend] = {}
    specs: dict[str, str] = {}
    for ep in _entry_points():
        if ep.name in specs:
            if specs[ep.name] == ep.value:  # the same package seen twice on sys.path
                continue
            raise RegistryError(f"backend {ep.name!r} is registered twice: {specs[ep.name]} and {ep.value}")
        specs[ep.name] = ep.value
        try:
            cls = ep.load()
            inst = cls()
        except Exception as e:
            found[ep.name] = Broken(ep.name, ep.value, f"{type(e).__name__}: {e}")
            continue
        if inst.name != ep.name:
            raise RegistryError(f"entry point {ep.name!r} ({ep.value}) loads a backend named {inst.name!r}")
        inst.spec = ep.value
        found[ep.name] = inst
    if not found:
        raise RegistryError(f"no backends registered under {GROUP!r}: is the project installed (pip install -e .)?")
    return dict(sorted(found.items()))


def get(name: str) -> Backend:
    all_ = backends()
    if name not in all_:
        raise RegistryError(f"unknown backend {name!r}; valid: {', '.join(all_)}")
    return all_[name]


def load_spec(spec: str) -> Backend:
    """Instantiate a backend from ``module:Class`` (used inside workers, which
    may run in an environment where the project is not installed)."""
    import importlib

    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)  # then a class in it: whatever the spec names
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj()
