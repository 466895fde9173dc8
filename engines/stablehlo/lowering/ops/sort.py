"""Sorting: sort / argsort (``stablehlo.sort`` of the values with an i64 iota,
stable) and topk (a sort along the dim, then the first ``k``): O(n log n) along
static or dynamic dims."""

from __future__ import annotations

import torch

from .. import types as T
from ..registry import lowers

aten = torch.ops.aten


def sort_with_indices(ctx, x, dim, descending):
    """(values, int64 indices) of ``x`` sorted along ``dim``; ties keep index order (stable)."""
    dim = dim % x.rank if x.rank else 0
    if x.rank == 0:
        return x, ctx.constant(0, "i64")
    idx = ctx.iota(x.sym_shape, dim, "i64")
    dt = x.dtype
    direction = "GT" if descending else "LT"
    kw = {}
    if T.is_float(dt):
        kw = {"compare_type": "#stablehlo<comparison_type FLOAT>"}

    def body(c, a, b, ia, ib):
        attrs = {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"}
        if kw:
            attrs["compare_type"] = kw["compare_type"]
        return c.op("stablehlo.compare", [a, b], ((), "i1"), attrs=attrs)

    region = ctx.region([((), dt), ((), dt), ((), "i64"), ((), "i64")], body)
    vals, inds = ctx.op(
        "stablehlo.sort",
        [x, idx],
        [(x.sym_shape, dt), (x.sym_shape, "i64")],
        attrs={"dimension": f"{dim} : i64", "is_stable": "true"},
        regions=[region],
    )
    return vals, inds


@lowers(aten.sort.default)
def _sort(ctx, node, x, dim=-1, descending=False):
    return list(sort_with_indices(ctx, x, dim, descending))


@lowers(aten.sort.stable)
def _sort_stable(ctx, node, x, stable=None, dim=-1, descending=False):
    return list(sort_with_indices(ctx, x, dim, descending))


@lowers(aten.topk.default)
def _topk(ctx, node, x, k, dim=-1, largest=True, sorted=True):
    from .movement import slice_dim

    dim = dim % x.rank if x.rank else 0
    vals, inds = sort_with_indices(ctx, x, dim, descending=largest)
    shape = ctx.out_shape(node, 0)
    k = shape[dim] if x.rank else 1
    return [slice_dim(ctx, vals, dim, 0, k, 1, out_shape=shape), slice_dim(ctx, inds, dim, 0, k, 1, out_shape=shape)]
