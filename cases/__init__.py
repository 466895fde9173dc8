"""The case catalogue: dynamic-shape programs with their NumPy oracles.

``catalogue()`` lists every case; ``get(name)`` finds one and names the valid
ones when it does not exist.
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


def catalogue() -> tuple[Case, ...]:
    from . import expand, gnn

    return gnn.CASES + expand.CASES


def get(name: str) -> Case:
    for case in catalogue():
        if case.name == name:
            return case
    raise CaseError(f"unknown case {name!r}; valid: {', '.join(c.name for c in catalogue())}")


__all__ = [
    "MODES", "PROFILES", "Case", "CaseError", "Dim", "EinxForm", "Input", "Tolerance",
    "bounded", "catalogue", "get", "match_globs", "static", "unbounded",
]
