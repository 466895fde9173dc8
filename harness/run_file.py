"""A run file's lines: records written compact, read back whole.

A record is written without its ``None`` fields (most of any record's), and the
values of its :data:`SHARED` fields, which repeat across a run's records (the
machine block, ~750 bytes, on every one: 2.8 MB of a quick run's 9.2 MB; the
versions a job imported; the case lists of the jobs not run, 32 distinct among
222 groups), as the id of a line that defines each once, before the first
record naming it::

    {"schema": 3, "blocks": {"3f2a9c1b04de": {"host": "vm", "cpu": ...}}}
    {"schema": 3, "run_id": ..., "machine": "3f2a9c1b04de", "status": "pass", ...}

:func:`harness.results.read_records` gives every record back with every field
(:func:`whole`), files of schema 1 and 2 too (each record whole).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

#: the version of the lines this harness writes: 3 leaves ``None`` fields out and
#: writes shared values once (2 and 1 carry every field and value in every record)
SCHEMA = 3
#: a definition line's key: ``{id: value}``
BLOCKS = "blocks"
#: the fields whose value (a dict or a list, never a string) a record may give as a block's id
SHARED = ("machine", "versions", "cases")


def block_id(value) -> str:
    """A shared value's id: a hash of its content, so every writer of a file
    (the gate's xdist workers, a resumed run) names the same value alike."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def encode(rec: dict, defined: set[str]) -> str:
    """``rec`` as its line, after a line defining its shared values that are
    not in ``defined`` (the ids this file has already; updated)."""
    out = {k: v for k, v in rec.items() if v is not None}
    out["schema"] = SCHEMA  # the line's form, whichever harness measured the record
    new = {}
    for k in SHARED:
        v = out.get(k)
        if isinstance(v, dict | list):
            out[k] = bid = block_id(v)
            if bid not in defined:
                defined.add(bid)
                new[bid] = v
    head = json.dumps({"schema": SCHEMA, BLOCKS: new}, default=str) + "\n" if new else ""
    return head + json.dumps(out, default=str) + "\n"


def text(records: Iterable[dict]) -> str:
    """Records as a whole file's text (each shared value defined once)."""
    defined: set[str] = set()
    return "".join(encode(r, defined) for r in records)


def definitions(obj: dict) -> dict | None:
    """The values a definition line defines, by id (``None``: a record)."""
    blocks = obj.get(BLOCKS)
    return blocks if isinstance(blocks, dict) and "status" not in obj else None


def whole(obj: dict, fields: Iterable[str], blocks: dict[str, object]) -> tuple[dict, list[str]]:
    """A record as read: every field (``None`` where its line left it out), each
    shared value in place; and the ids it names that no line defined (those fields ``None``)."""
    rec = dict.fromkeys(fields)
    rec.update(obj)
    lost = []
    for k in SHARED:
        bid = rec.get(k)
        if isinstance(bid, str):
            v = blocks.get(bid)
            if v is None:
                lost.append(bid)
            # a copy: readers may amend theirs
            rec[k] = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else None
    return rec, lost


class Writer:
    """Appends records to a JSONL file (compact: :func:`encode`), flushing (and
    fsyncing) each one, so an interrupted run keeps everything it measured."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[str] = open(self.path, "a", encoding="utf-8")
        #: the shared values this writer defined (a file appended to again defines its own once more)
        self._defined: set[str] = set()

    def write(self, rec: dict) -> None:
        # the definition and the record in one write: a torn write cannot keep the record alone
        self._f.write(encode(rec, self._defined))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SharedWriter(Writer):
    """A :class:`Writer` that several processes may append to at once (each
    record written under an exclusive ``flock``): the gate's xdist workers
    share one run file."""

    def write(self, rec: dict) -> None:
        import fcntl

        fcntl.flock(self._f.fileno(), fcntl.LOCK_EX)
        try:
            super().write(rec)
        finally:
            fcntl.flock(self._f.fileno(), fcntl.LOCK_UN)
