"""What a job's sweep says about its compiles: the one definition of "compiled
once", which the leaderboard, the zoo table and the pytest plugin read."""

from __future__ import annotations

from collections.abc import Iterable


def _num(v) -> float | None:
    """A number, or ``None`` for a missing value (``None``, NaN, ``pd.NA``)."""
    try:
        return float(v) if v is not None and v == v else None
    except (TypeError, ValueError):
        return None


def _novel(v) -> bool:
    """A record's ``novel`` is true (``numpy.bool_`` and ``pd.NA`` from a frame too)."""
    try:
        return bool(v is not None and v == v and v)
    except TypeError:  # pd.NA
        return False


#: the fields of a record :func:`compiled_once` reads
READS = ("process", "status", "novel", "shape_index", "compiles")


def compiled_once(records: Iterable[dict]) -> bool:
    """One job's records (dicts, as written or as a frame's rows) compiled once: every
    record passed, the first process measured two novel shapes or more, and its compile
    count after its first novel shape (``prepare`` included) never moved again, in the
    novel phase or the cached one."""
    recs = [r for r in records if not _num(r.get("process"))]
    if not recs or any(str(r.get("status")) != "pass" for r in recs):
        return False
    novel = sorted((r for r in recs if _novel(r.get("novel"))), key=lambda r: _num(r.get("shape_index")) or 0)
    if len({_num(r.get("shape_index")) for r in novel}) < 2:
        return False
    first = _num(novel[0].get("compiles"))
    counts = [c for c in (_num(r.get("compiles")) for r in recs) if c is not None]
    return first is not None and max(counts) == first
