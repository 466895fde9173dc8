"""Case packs: cases an installed package adds through the ``dynshape.cases``
entry-point group, without editing this repository.

An entry point names a module (``mypack.cases``) or an object in one
(``mypack.cases:CASES``). A module gives its ``CASES`` (a tuple of
:class:`~cases.model.Case`) and, optionally, ``EXPECTATIONS``: the path of its
own expectations file, whose rules apply to the pack's cases only. An object
is a sequence of cases or a function returning one. Workers find packs in
whichever environment they run, so a pack installed in the torch_xla
environment serves the jobs that run there.

A cases *file* needs no install: ``harness run --cases-from my_cases.py``
(and ``dynshape.run``) name it in ``$DYNSHAPE_CASES_FROM`` (:func:`use`), which
every worker inherits, so the file is loaded wherever a job runs
(:func:`from_files`). A file gives ``CASES``, or the cases that
``dynshape.case`` made while it loaded; a ``dynshape.run`` call in it stops the
load there (:class:`StopLoading`), so a script that defines and runs its cases
serves its own workers.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import os
import sys
import types
from importlib import metadata
from pathlib import Path

from .model import Case, CaseError

GROUP = "dynshape.cases"
#: the cases files of this process and its workers, ``os.pathsep``-separated
FILES_ENV = "DYNSHAPE_CASES_FROM"


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


def pack(name: str) -> Pack:
    """The installed pack ``name`` alone (a worker's: the other packs are not imported, so one
    that broke since the run was planned fails only its own cases' jobs)."""
    if packs.cache_info().currsize:  # this process resolved every pack already (the run's planner)
        for p in packs():
            if p.name == name:
                return p
    found = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == name]
    if not found:
        raise CaseError(f"case pack {name!r} ({GROUP} entry point): no longer installed in this environment")
    return _load(name, found[0].value)


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
    _check_cases(obj, where)
    path = None
    if expectations is not None:
        path = Path(expectations)
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise CaseError(f"{where}: EXPECTATIONS file {path} does not exist")
    return Pack(name, spec, tuple(obj), path)


def _check_cases(obj, where: str) -> None:
    if not isinstance(obj, (tuple, list)) or not all(isinstance(c, Case) for c in obj):
        bad = next((c for c in obj if not isinstance(c, Case)), obj) if isinstance(obj, (tuple, list)) else obj
        raise CaseError(f"{where}: gives {type(bad).__name__}, expected a sequence of cases.Case")


class StopLoading(Exception):
    """Raised by ``dynshape.run`` while a cases file loads: the file's cases are made, its run is not."""


_FILES: dict[str, tuple[Case, ...]] = {}
_collecting: list[list[Case]] = []


def use(*paths: str | os.PathLike) -> None:
    """Add cases files to :data:`FILES_ENV` (absolute paths), for this process and its workers."""
    have = [p for p in os.environ.get(FILES_ENV, "").split(os.pathsep) if p]
    for p in paths:
        p = str(Path(p).resolve())
        if p not in have:
            have.append(p)
    os.environ[FILES_ENV] = os.pathsep.join(have)


def provide(path: str | os.PathLike, found) -> None:
    """Give the cases of ``path`` without loading it (the process that made them: a script's own)."""
    _FILES[str(Path(path).resolve())] = tuple(found)


def add_made(path: str | os.PathLike, made) -> None:
    """Add cases this process made from the file ``path`` to those it already holds for it
    (a script's ``dynshape.case`` calls: the workers load the file, this process has them)."""
    have = _FILES.get(str(Path(path).resolve()), ())
    known = {c.name for c in have}
    provide(path, [*have, *(c for c in made if c.name not in known)])


def use_files(*paths: str | os.PathLike) -> tuple[Case, ...]:
    """The step ``run --cases-from`` and ``dynshape.run`` share: name the cases
    files for this process and its workers (:func:`use`), load them here, and
    publish the weights of each module they build, so every worker, of every
    environment, runs these weights and not a draw of its own. Their cases."""
    from .models_base import publish_weights

    use(*paths)
    found = tuple(c for p in paths for c in load_file(p))
    for c in found:
        publish_weights(c)
    return found


def from_files() -> tuple[Case, ...]:
    """The cases of every file :data:`FILES_ENV` names, each file loaded once per process."""
    return tuple(c for p in os.environ.get(FILES_ENV, "").split(os.pathsep) if p for c in load_file(p))


def loading() -> bool:
    """Whether a cases file is being loaded (``dynshape.run`` then stops the load)."""
    return bool(_collecting)


def collect(case: Case) -> None:
    """Note a case made while a cases file loads (``dynshape.case`` calls this)."""
    if _collecting:
        _collecting[-1].append(case)


def load_file(path: str | os.PathLike) -> tuple[Case, ...]:
    """The cases of the file ``path`` (its ``CASES``, else those ``dynshape.case``
    made while it ran); :class:`CaseError` naming the file (and field) when it fails."""
    resolved = str(Path(path).resolve())
    if resolved in _FILES:
        return _FILES[resolved]
    where = f"cases file {path}"
    if not os.path.isfile(resolved):
        raise CaseError(f"{where}: no such file")
    if resolved.endswith(".pkl"):  # a case pickled by value (cloudpickle): one made in a notebook
        import pickle

        try:
            with open(resolved, "rb") as f:
                _FILES[resolved] = tuple(pickle.load(f))
        except Exception as e:
            raise CaseError(f"{where}: cannot load: {type(e).__name__}: {e}") from None
        return _FILES[resolved]
    name = "dynshape_cases_" + hashlib.sha1(resolved.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, resolved)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    here = os.path.dirname(resolved)
    if here not in sys.path:
        sys.path.insert(0, here)  # the file's own imports of its neighbours
    _collecting.append([])
    try:
        spec.loader.exec_module(module)
    except StopLoading:
        pass
    except SystemExit as e:
        raise CaseError(f"{where}: cannot load: it called sys.exit({e.code!r})") from None
    except CaseError as e:
        raise CaseError(f"{where}: {e}") from None
    except Exception as e:
        raise CaseError(f"{where}: cannot load: {type(e).__name__}: {e}") from None
    finally:
        made = _collecting.pop()
    found = getattr(module, "CASES", None)
    if found is None and not made:
        raise CaseError(f"{where}, field 'CASES': missing (give CASES = (case, ...), or make cases with dynshape.case)")
    found = made if found is None else found
    _check_cases(found, f"{where}, field 'CASES'")
    _FILES[resolved] = tuple(found)
    return _FILES[resolved]
