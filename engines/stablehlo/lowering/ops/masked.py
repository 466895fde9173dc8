"""Selections whose size is data: ``masked_select``, ``unique``, ``unique_consecutive`` (a count
of Trues, or of distinct values: the rows kept are scattered to their rank, the live size set
with ``set_dimension_size``, bounded by the input's numel -- the bounded mode serves every count
with one compile; refinement per shape cannot know it, :class:`DataDependentSize`), and those
whose size is not: ``masked_scatter`` (a select of ``x``'s shape), ``nonzero_static`` (its
size an argument, the rest of the rows ``fill_value``)."""

from __future__ import annotations

import math

import torch

from engines import sizes

from ..registry import lowers
from ..symbolic import as_dim
from .index import _broadcast_shape, _mask_put, _true_ranks, mask_index, scatter_along
from .scan import cumsum_along
from .sort import sort_with_indices

aten = torch.ops.aten


def _flat(ctx, x):
    length = as_dim(math.prod(x.sym_shape, start=sizes.const(1)))
    return length, ctx.reshape(x, (length,))


@lowers(aten.masked_select.default)
def _masked_select(ctx, node, x, mask):
    """The elements of ``x`` where ``mask`` holds (both broadcast), in order: a boolean-mask index."""
    shape = _broadcast_shape([x.sym_shape, mask.sym_shape])
    _, xf = _flat(ctx, ctx.broadcast_to(ctx.convert(x, ctx.out_dtype(node)), shape))
    _, mf = _flat(ctx, ctx.broadcast_to(mask, shape))
    return mask_index(ctx, node, xf, [mf])


@lowers(aten.masked_scatter.default)
def _masked_scatter(ctx, node, x, mask, source):
    """``x`` with its masked positions, in order, taking ``source``'s elements in order."""
    shape = ctx.out_shape(node)
    _, src = _flat(ctx, source)
    return _mask_put(ctx, node, ctx.broadcast_to(x, shape), ctx.broadcast_to(mask, shape), src, False)


def _coordinates(ctx, x):
    """(length, rank) int64 coordinates of every element of ``x``, row-major."""
    shape = tuple(x.sym_shape)
    length = as_dim(math.prod(shape, start=sizes.const(1)))
    pieces = [ctx.reshape(ctx.iota(shape, a, "i64"), (*shape, 1)) for a in range(len(shape))]
    coords = ctx.op("stablehlo.concatenate", pieces, ((*shape, len(shape)), "i64"), attrs={"dimension": f"{len(shape)} : i64"})
    return ctx.reshape(coords, (length, len(shape)))


@lowers(aten.nonzero_static.default)
def _nonzero_static(ctx, node, x, *, size, fill_value=-1):
    """The coordinates of the first ``size`` nonzero elements, the rows past them ``fill_value``:
    each nonzero's row scattered to its rank (a spare row past ``size`` takes the rest)."""
    out = ctx.out_shape(node)
    n = out[0]
    coords = _coordinates(ctx, x)
    length = coords.sym_shape[0]
    _, nz = _flat(ctx, ctx.compare(x, ctx.constant(0, x.dtype, x.sym_shape), "NE") if x.dtype != "i1" else x)
    _, mf, rank = _true_ranks(ctx, nz)
    cap = ctx.tensor(size, "i32", (length,))
    keep = ctx.binary("stablehlo.and", ctx.convert(mf, "i1"), ctx.compare(rank, cap, "LT"))
    target = ctx.select(keep, rank, cap)
    buf = ctx.constant(fill_value, "i64", (as_dim(n + 1), x.rank))
    buf = scatter_along(ctx, buf, 0, target, coords, False)
    return ctx.slice(buf, [0, 0], [n, x.rank], [1, 1], out_shape=out)


def _live(ctx, full, count, u, length):
    """``full`` (length, ...) with its first ``count`` rows live: dim 0 set to ``count``, the
    symbol ``u``'s bound the length (as :func:`.index.mask_index` does)."""
    atom = u.single_atom() if isinstance(u, sizes.Expr) else None
    if atom is None or atom.kind != "var":
        raise NotImplementedError(f"a data-dependent size {u} that is not a fresh (unbacked) symbol")
    hi = ctx.ranges.get(atom.name, (0, None))[1]
    lb = ctx.bound_of(length) if not isinstance(length, int) else length
    if lb is not None:
        ctx.ranges[atom.name] = (0, lb if hi is None else min(hi, lb))
        ctx._bound_cache.clear()
    out = (u, *full.sym_shape[1:])
    res = ctx.op("stablehlo.set_dimension_size", [full, count], (out, full.dtype), attrs={"dimension": "0 : i64"})
    ctx.sym.env.setdefault(atom.name, (res, 0))
    return res


class _Result:
    """One result of a multi-result node, as a lowering helper reads a node (its name, its ``val``)."""

    def __init__(self, node, index: int):
        self.name, self.op, self.target = node.name, node.op, node.target
        self.meta = {**node.meta, "val": node.meta["val"][index]}

    def format_node(self):
        return f"%{self.name}[result]"


def _runs(ctx, node, vals, order, x_shape, return_inverse, return_counts):
    """(values, inverse, counts) of the runs of equal ``vals`` (1-D, ``length``), whose position
    ``i`` came from element ``order[i]`` of the input (None: the identity)."""
    length = vals.sym_shape[0]
    prev = ctx.slice(vals, [0], [as_dim(length - 1)], [1])
    cur = ctx.slice(vals, [1], [length], [1])
    first = ctx.op(
        "stablehlo.concatenate",
        [ctx.constant(True, "i1", (1,)), ctx.compare(cur, prev, "NE")],
        ((length,), "i1"),
        attrs={"dimension": "0 : i64"},
    )
    values = mask_index(ctx, _Result(node, 0), vals, [first])
    group = ctx.binary("stablehlo.subtract", cumsum_along(ctx, ctx.convert(first, "i64"), 0), ctx.constant(1, "i64", (length,)))
    outs = [values]
    inv_shape = ctx.out_shape(node, 1)
    if return_inverse and 0 not in inv_shape:
        inv = group if order is None else scatter_along(ctx, ctx.constant(0, "i64", (length,)), 0, order, group, False)
        outs.append(ctx.reshape(inv, inv_shape))
    else:
        outs.append(ctx.constant(0, ctx.out_dtype(node, 1), inv_shape))
    cnt_shape = ctx.out_shape(node, 2)
    if return_counts and 0 not in cnt_shape:
        ones = ctx.constant(1, "i64", (length,))
        full = scatter_along(ctx, ctx.constant(0, "i64", (length,)), 0, group, ones, True)
        count = ctx.reduce(ctx.convert(first, "i32"), [0], "add")
        outs.append(_live(ctx, full, count, cnt_shape[0], length))
    else:
        outs.append(ctx.constant(0, ctx.out_dtype(node, 2), cnt_shape))
    return outs


@lowers(aten.unique_consecutive.default)
def _unique_consecutive(ctx, node, x, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        raise NotImplementedError("unique_consecutive along a dim (rows compared whole)")
    _, xf = _flat(ctx, x)
    return _runs(ctx, node, xf, None, x.sym_shape, return_inverse, return_counts)


@lowers(aten._unique2.default)
def _unique2(ctx, node, x, sorted=True, return_inverse=False, return_counts=False):
    """Sorted distinct values (torch sorts on CPU whatever ``sorted`` says): the runs of the sort."""
    _, xf = _flat(ctx, x)
    vals, order = sort_with_indices(ctx, xf, 0, False)
    return _runs(ctx, node, vals, order, x.sym_shape, return_inverse, return_counts)
