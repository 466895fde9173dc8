"""The case catalogue: dynamic-shape programs with their NumPy oracles.

``catalogue()`` lists every case, the in-tree families', those installed
packages add (:mod:`cases.packs`, entry-point group ``dynshape.cases``) and
those of the cases files named by ``--cases-from`` (``$DYNSHAPE_CASES_FROM``);
``get(name)`` finds one and names the valid ones when it does not exist.
"""

from __future__ import annotations

from .model import (
    MODES,
    PROFILES,
    Case,
    CaseError,
    Dim,
    EinxForm,
    Input,
    Tolerance,
    bounded,
    match_globs,
    static,
    unbounded,
)

#: the in-tree families, one module of ``cases/`` each
FAMILIES = (
    "gnn",
    "expand",
    "batch",
    "sequence",
    "sequence_shape",
    "models_text",
    "models_vision",
    "models_graph",
    # the generated model zoo (cases/zoo.py): only `harness run --profile zoo` runs it
    "zoo_hf",
    "zoo_tv",
    "zoo_pyg",
    "zoo_timm",
    "zoo_diffusers",
)

_CHECKED: set[int] = set()  # ids of the cases whose oracle ran


def catalogue(checked: bool = True) -> tuple[Case, ...]:
    """Every case, in-tree families (:data:`FAMILIES`) then installed packs,
    checked once per process (:func:`check`) before any backend runs.
    ``checked=False`` skips the oracle check: for a worker, whose parent checked
    the catalogue when it planned the job (it would cost every job every oracle)."""
    import importlib

    from . import packs

    found = tuple(c for family in FAMILIES for c in importlib.import_module(f"{__name__}.{family}").CASES)
    found += tuple(c for p in packs.packs() for c in p.cases)
    found += packs.from_files()
    return check(found) if checked else found


def check(found: tuple[Case, ...]) -> tuple[Case, ...]:
    """Refuse duplicate names and run each new case's oracle once
    (:meth:`Case.check_oracle`); :class:`CaseError` names the case and field."""
    seen = set()
    for c in found:
        if c.name in seen:
            raise CaseError(f"case {c.name!r}, field 'name': defined twice in the catalogue")
        seen.add(c.name)
        if id(c) not in _CHECKED:
            c.check_oracle()
            _CHECKED.add(id(c))
    return found


def families() -> dict[str, str]:
    """``{case name: family}``: the in-tree module that defines it
    (:data:`FAMILIES`), or ``pack:<entry point>`` for a case a pack adds."""
    import importlib

    from . import packs

    out = {c.name: family for family in FAMILIES for c in importlib.import_module(f"{__name__}.{family}").CASES}
    out.update({c.name: f"pack:{p.name}" for p in packs.packs() for c in p.cases})
    out.update({c.name: "file" for c in packs.from_files()})
    return out


def get(name: str, checked: bool = True, source: str | None = None) -> Case:
    """The case called ``name`` (``checked``: as :func:`catalogue`). ``source`` (its
    :func:`families` entry, which the run's plan resolved): look in that source alone, so
    a worker loads its own case's family, pack or files, and a pack that cannot load
    fails only its own cases' jobs (:class:`CaseError` naming the pack)."""
    found = catalogue(checked) if source is None else from_source(source)
    for case in found:
        if case.name == name:
            return case
    raise CaseError(f"unknown case {name!r}; valid: {', '.join(c.name for c in found)}")


def from_source(source: str) -> tuple[Case, ...]:
    """The cases of one :func:`families` entry: an in-tree family, ``pack:<entry point>``
    (that pack alone) or ``file`` (the cases files of ``$DYNSHAPE_CASES_FROM``)."""
    import importlib

    from . import packs

    if source.startswith("pack:"):
        return packs.pack(source[len("pack:") :]).cases
    if source == "file":
        return packs.from_files()
    if source not in FAMILIES:
        raise CaseError(f"unknown case source {source!r}; valid: {', '.join(FAMILIES)}, pack:<entry point>, file")
    return tuple(importlib.import_module(f"{__name__}.{source}").CASES)


__all__ = [
    "MODES",
    "PROFILES",
    "Case",
    "CaseError",
    "Dim",
    "EinxForm",
    "Input",
    "Tolerance",
    "bounded",
    "catalogue",
    "check",
    "families",
    "from_source",
    "get",
    "match_globs",
    "static",
    "unbounded",
]
