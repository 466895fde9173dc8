"""The bucket policy of the bucketed executors, shared with the harness's
``n_buckets`` / ``new_bucket`` expectation formulas (no framework imports).

The bucket of a size ``n`` is the next power of two ``>= n``, at least
:data:`MIN_BUCKET`: sizes 1000..1024 share bucket 1024, 1025..2048 bucket 2048.
"""
from __future__ import annotations

from typing import Iterable, Mapping

MIN_BUCKET = 16


def bucket(n: int, minimum: int = MIN_BUCKET) -> int:
    """The smallest power of two ``>= n`` and ``>= minimum``."""
    if n < 0:
        raise ValueError(f"a size cannot be negative: {n}")
    b = max(int(minimum), 1)
    while b < n:
        b *= 2
    return b


def bucket_key(sizes: Mapping[str, int], minimum: int = MIN_BUCKET) -> tuple:
    """The bucket of every dynamic dim of one shape, by dim name."""
    return tuple(sorted((name, bucket(int(n), minimum)) for name, n in sizes.items()))


def new_buckets(shapes: Iterable[Mapping[str, int]], minimum: int = MIN_BUCKET) -> list[int]:
    """Per shape, in order: 1 where its bucket was not touched by an earlier shape."""
    seen, out = set(), []
    for sizes in shapes:
        key = bucket_key(sizes, minimum)
        out.append(int(key not in seen))
        seen.add(key)
    return out
