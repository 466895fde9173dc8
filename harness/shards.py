"""Runs beyond one machine: a deterministic share of the job matrix per
machine (``harness run --shard i/n``) and one run out of many (``harness merge``).

A shard is every n-th job of the selection sorted by its id, so ``1/n`` …
``n/n`` cover the selection exactly once, whatever order the globs list
names in. A merged run keeps every record's ``machine``: reports, ratios to
torch eager and compare keep machines apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from . import meta, results


def _frame(recs: list[dict]):
    import pandas as pd

    return pd.DataFrame.from_records(recs, columns=list(results.FIELDS))


class ShardError(results.ResultsError):
    """A ``--shard`` that is not ``i/n`` with 1 ≤ i ≤ n (a usage error: exit 2)."""


def parse(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)`` with 1 ≤ i ≤ n."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ShardError(f"--shard {text!r}: give i/n with 1 <= i <= n, e.g. 1/2")
    return int(m.group(1)), int(m.group(2))


def select(combos: list, i: int, n: int) -> list:
    """Shard ``i`` of ``n`` (1-based) of ``combos`` (anything with an ``id``)."""
    ordered = sorted(combos, key=lambda c: c.id)
    return [c for k, c in enumerate(ordered) if k % n == i - 1]


def merge(
    paths: Iterable[str | os.PathLike], out: str | os.PathLike, run_id: str | None = None, force: bool = False
) -> tuple[Path, int]:
    """Write the records of the runs at ``paths`` to ``out`` as one run
    (``run_id``, default a new id; each record keeps its machine). Runs of
    different commits or profiles are refused unless ``force``; a job in two
    inputs is refused always (a shard run twice). Returns ``(path, records)``."""
    files = results.run_files(paths)
    if not files:
        raise results.ResultsError("nothing to merge")
    recs = [(k, r) for k, f in enumerate(files) for r in results.read_records(f)]
    for field in ("commit", "profile"):
        seen = {r.get(field) for _, r in recs if r.get(field) is not None}
        if len(seen) > 1 and not force:
            raise results.ResultsError(
                f"the runs differ in {field} ({', '.join(sorted(map(str, seen)))}); --force merges them anyway"
            )
    owner: dict = {}
    for k, r in recs:
        host = (r.get("machine") or {}).get("host")
        key = (r.get("case"), r.get("backend"), r.get("mode"), host)
        first = owner.setdefault(key, k)
        if first != k:
            raise results.ResultsError(f"job {key[0]}[{key[1]}-{key[2]}] on {host} is in both {files[first]} and {files[k]}")
    run_id = run_id or meta.new_run_id()
    dups = results.duplicates(_frame([dict(r, run_id=run_id) for _, r in recs]))
    if dups:
        raise results.ResultsError(
            f"{len(dups)} (job, shape, phase) keys have more than one record, e.g. "
            f"{dups[0]}: an attempt kept beside its retry? Merge refuses to mix them"
        )
    out = Path(out)
    if out.exists():
        raise results.ResultsError(f"{out} exists; merge writes a new file")
    with results.Writer(out) as w:
        for _, r in recs:
            w.write(dict(r, run_id=run_id))
    return out, len(recs)
