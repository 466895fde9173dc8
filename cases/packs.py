"""Case packs: cases an installed package adds through the ``dynshape.cases``
entry-point group, without editing this repository.

An entry point names a module (``mypack.cases``) or an object in one
(``mypack.cases:CASES``). A module gives its ``CASES`` (a tuple of
:class:`~cases.model.Case`) and, optionally, ``EXPECTATIONS``: the path of its
own expectations file, whose rules apply to the pack's cases only. An object
is a sequence of cases or a function returning one. Workers find packs in
whichever environment they run, so a pack installed in the torch_xla
environment serves the jobs that run there.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import types
from importlib import metadata
from pathlib import Path

from .model import Case, CaseError

GROUP = "dynshape.cases"


@dataclasses.dataclass(frozen=True)
class Pack:
    """One entry point's cases and its expectations file (or ``None``)."""

    name: str
    spec: str
    cases: tuple[Case, ...]
    expectations: Path | None


@functools.cache
def packs() -> tuple[Pack, ...]:
    """Every installed pack, in entry-point name order.

    A pack that cannot be imported, or whose cases are not :class:`Case`
    objects, raises :class:`CaseError` naming the entry point: a catalogue
    that silently lost cases would gate nothing.
    """
    seen: dict[str, str] = {}
    out = []
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name):
        if seen.get(ep.name) == ep.value:  # the same distribution seen twice on sys.path
            continue
        if ep.name in seen:
            raise CaseError(f"case pack {ep.name!r} is registered twice: {seen[ep.name]} and {ep.value}")
        seen[ep.name] = ep.value
        out.append(_load(ep.name, ep.value))
    return tuple(out)


def _load(name: str, spec: str) -> Pack:
    where = f"case pack {name!r} ({GROUP} entry point {spec!r})"
    module_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module_name.strip())
        expectations = getattr(obj, "EXPECTATIONS", None)
        base = Path(obj.__file__).parent if getattr(obj, "__file__", None) else Path.cwd()
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
    except SystemExit as e:  # not an Exception: it would end the harness with no word of the pack
        raise CaseError(f"{where}: cannot load: it called sys.exit({e.code!r}) on import") from None
    except Exception as e:
        raise CaseError(f"{where}: cannot load: {type(e).__name__}: {e}") from None
    if isinstance(obj, types.ModuleType):
        if not hasattr(obj, "CASES"):
            raise CaseError(f"{where}: module {obj.__name__} has no CASES")
        obj = obj.CASES
    if callable(obj) and not isinstance(obj, (tuple, list)):
        try:
            obj = obj()
        except SystemExit as e:
            raise CaseError(f"{where}: called sys.exit({e.code!r})") from None
        except Exception as e:
            raise CaseError(f"{where}: raised {type(e).__name__}: {e}") from None
    if not isinstance(obj, (tuple, list)) or not all(isinstance(c, Case) for c in obj):
        raise CaseError(f"{where}: gives {type(obj).__name__}, expected a sequence of cases.Case")
    path = None
    if expectations is not None:
        path = Path(expectations)
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise CaseError(f"{where}: EXPECTATIONS file {path} does not exist")
    return Pack(name, spec, tuple(obj), path)
