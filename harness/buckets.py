"""Which shapes of a job open a new bucket, as the job's backend serves the
bucketed mode: the count a bucketed rule of ``cases/expectations.toml`` follows."""

from __future__ import annotations


def bucket_flags(records: list[dict]) -> tuple[dict[int, int], int]:
    """Per shape index of the novel ``records``, 1 where its bucket is new
    (in sweep order); and the number of distinct buckets (the bucket as the
    job's backend serves it: :func:`bucket_policy`)."""
    from engines.sizes.buckets import new_buckets

    by_index: dict[int, dict[str, int]] = {}
    for r in records:
        if isinstance(r.get("sizes"), dict):
            by_index.setdefault(int(r["shape_index"]), r["sizes"])
    order = sorted(by_index)
    key = bucket_policy(records[0] if records else {})
    flags = new_buckets((by_index[i] for i in order), key=key)
    return dict(zip(order, flags, strict=False)), len({key(by_index[i]) for i in order})


def bucket_policy(record: dict):
    """The bucket key of a shape's sizes for the job of ``record``: where its
    backend pads that mode's inputs on the host (``Backend.host_padded``,
    ``backends.padding``), the case's own policy (``buckets.case_buckets``: one
    slot of room in a dim a dummy index points into, capped at the dim's
    bound); else (our executors, which bucket `?` dims and mask the padding,
    or a record whose case or backend is not known here) each size's bucket."""
    from engines.sizes import buckets

    backend, mode = record.get("backend"), record.get("mode")
    if backend and mode == "bucketed":  # the one mode whose counts follow buckets
        from . import registry

        try:
            b = registry.backends().get(backend)
            padded = b is not None and mode in b.host_padded
        except registry.RegistryError:
            padded = False
        if padded:
            import cases

            name = record.get("case")
            try:
                case = cases.get(name) if isinstance(name, str) else None
            except cases.CaseError:
                case = None
            if case is not None:
                return lambda sizes: tuple(sorted(buckets.case_buckets(case, sizes).items()))
    return buckets.bucket_key
