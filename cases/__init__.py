"""The case catalogue: dynamic-shape programs with their NumPy oracles.

``catalogue()`` lists every case, the in-tree families' and those installed
packages add (:mod:`cases.packs`, entry-point group ``dynshape.cases``);
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


_CHECKED: set[int] = set()  # ids of the cases whose oracle ran


def catalogue() -> tuple[Case, ...]:
    """Every case, in-tree then from installed packs, checked once per process
    (:func:`check`) before any backend runs."""
    from . import expand, gnn, packs

    return check(gnn.CASES + expand.CASES + tuple(c for p in packs.packs() for c in p.cases))


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


def get(name: str) -> Case:
    for case in catalogue():
        if case.name == name:
            return case
    raise CaseError(f"unknown case {name!r}; valid: {', '.join(c.name for c in catalogue())}")


__all__ = [
    "MODES", "PROFILES", "Case", "CaseError", "Dim", "EinxForm", "Input", "Tolerance",
    "bounded", "catalogue", "check", "get", "match_globs", "static", "unbounded",
]
