"""The bucket policy of the bucketed executors, shared with the harness's
``n_buckets`` / ``new_bucket`` expectation formulas (no framework imports).

The bucket of a size ``n`` is the next power of two ``>= n``, at least
:data:`MIN_BUCKET`: sizes 1000..1024 share bucket 1024, 1025..2048 bucket 2048.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

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


def new_buckets(
    shapes: Iterable[Mapping[str, int]], minimum: int = MIN_BUCKET, key: Callable[[Mapping[str, int]], tuple] | None = None
) -> list[int]:
    """Per shape, in order: 1 where its bucket (``key``, default
    :func:`bucket_key`) was not touched by an earlier shape."""
    seen, out = set(), []
    for sizes in shapes:
        key_ = bucket_key(sizes, minimum) if key is None else key(sizes)
        out.append(int(key_ not in seen))
        seen.add(key_)
    return out


def dummy_dims(case) -> frozenset[str]:
    """Names of the dims a ``"dummy"``-padded index input points into: a host
    padder pads each to room for one more slot (the dummy), sliced off after."""
    return frozenset(inp.high for inp in case.inputs if inp.pad == "dummy")


def padded_size(n: int, bound: int | None = None, room: int = 0, minimum: int = MIN_BUCKET, own: tuple[int, ...] = ()) -> int:
    """The size a host padder serves a dim of size ``n`` at: the bucket of
    ``n + room`` (``room`` 1 where a dummy index points past the real size) --
    the first of the case's ``own`` buckets that holds it, else its power of
    two -- capped at ``bound + room`` for a size within its bound. A power of
    two ``>= n`` is ``>=`` the dim's minimum too, so ``min`` needs no term."""
    b = next((s for s in own if s >= n + room), None) or bucket(n + room, minimum)
    if bound is not None and n <= bound:
        b = min(b, bound + room)
    return b


def case_buckets(case, sizes: Mapping[str, int], minimum: int = MIN_BUCKET) -> dict[str, int]:
    """Per dynamic dim of ``case``, the size a host padder pads ``sizes`` up to
    in ``bucketed`` mode (:func:`padded_size` with the dim's bound, room and
    the case's own ``buckets``)."""
    room, own = dummy_dims(case), getattr(case, "buckets", None) or {}
    return {
        name: padded_size(int(n), case.dim(name).max, int(name in room), minimum, tuple(own.get(name, ())))
        for name, n in sizes.items()
    }
