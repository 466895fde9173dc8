"""Indexing: embedding, index_select, index (advanced: one or several index tensors), gather,
index_put / index_add / scatter_add (GNN message passing), boolean masks
(a data-dependent count: :func:`mask_index`).

Gathers whose slice sizes involve a dynamic dim use ``dynamic_gather`` (slice
sizes as an operand); scatters need no sizes, only `?` types.  Indices are
assumed in range, as torch requires (out-of-range is undefined here, as in XLA);
negative ones count from the end in ``index`` and ``index_put``, as torch's do
(:func:`wrapped`; ``index_select``, ``gather`` and ``embedding`` refuse them in torch).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engines import sizes

from .. import types as T
from ..builder import Value
from ..registry import lowers
from ..symbolic import as_dim
from .gather import _ints, emit_gather, gather_along

aten = torch.ops.aten


def scatter_along(ctx, x, dim, idx, updates, accumulate: bool):
    """x[..., idx[i], ...] (+)= updates[..., i, ...] along ``dim`` (idx 1-D)."""
    r = x.rank
    d = dim % r
    idx = ctx.convert(idx, "i64") if idx.dtype not in ("i32", "i64") else idx
    upd_shape = tuple(idx.sym_shape[0] if i == d else s for i, s in enumerate(x.sym_shape))
    updates = ctx.tensor(updates, x.dtype, upd_shape)
    window = [i for i in range(r) if i != d]
    dn = (
        f"#stablehlo.scatter<update_window_dims = {_ints(window)}, inserted_window_dims = [{d}], "
        f"scatter_dims_to_operand_dims = [{d}], index_vector_dim = 1>"
    )
    return _scatter(ctx, x, idx, updates, dn, accumulate)


_COMBINE = {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "amax": "stablehlo.maximum", "amin": "stablehlo.minimum"}


def _scatter(ctx, x, idx, updates, dn, accumulate):
    """``accumulate``: False (replace), True (add) or a reduction name of ``_COMBINE``."""
    dt = x.dtype
    if isinstance(accumulate, str):
        region = ctx.scalar_region(dt, _COMBINE[accumulate])
    elif accumulate:
        region = ctx.scalar_region(dt, "stablehlo.add" if dt != "i1" else "stablehlo.or")
    else:
        region = ctx.region([((), dt), ((), dt)], lambda c, a, b: b)
    return ctx.op(
        "stablehlo.scatter",
        [x, idx, updates],
        (x.sym_shape, dt),
        attrs={"scatter_dimension_numbers": dn, "indices_are_sorted": "false", "unique_indices": "false"},
        regions=[region],
    )


def full_coordinates(ctx, index, dim):
    """(S..., r) int64 coordinates: ``index`` along ``dim``, iotas elsewhere."""
    S = index.sym_shape
    r = len(S)
    pieces = []
    for a in range(r):
        c = ctx.convert(index, "i64") if a == dim else ctx.iota(S, a, "i64")
        pieces.append(ctx.reshape(c, S + (1,)))
    return ctx.op("stablehlo.concatenate", pieces, (S + (r,), "i64"), attrs={"dimension": f"{r} : i64"})


@lowers(aten.embedding.default)
def _embedding(ctx, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return gather_along(ctx, weight, 0, indices, ctx.out_shape(node))


@lowers(aten.index_select.default)
def _index_select(ctx, node, x, dim, index):
    if index.rank == 0:
        index = ctx.reshape(index, (1,))
    return gather_along(ctx, x, dim, index, ctx.out_shape(node))


def wrapped(ctx, idx, size):
    """``idx`` with each negative index ``i`` made ``i + size`` (Falcon's ``x[:, :, [-2]]``):
    XLA's gather clamps a negative start to 0 instead."""
    dt = idx.dtype if idx.dtype in ("i32", "i64") else "i64"
    idx = ctx.convert(idx, dt)
    n = ctx.broadcast_to(ctx.convert(ctx.dim(size), dt), idx.sym_shape)
    neg = ctx.compare(idx, ctx.constant(0, dt, idx.sym_shape), "LT")
    return ctx.select(neg, ctx.binary("stablehlo.add", idx, n), idx)


@lowers(aten.index.Tensor)
def _index(ctx, node, x, indices):
    tensors = [(k, t) for k, t in enumerate(indices) if t is not None]
    if any(t.dtype == "i1" for _, t in tensors):
        return mask_index(ctx, node, x, indices)
    tensors = [(k, wrapped(ctx, t, x.sym_shape[k])) for k, t in tensors]
    if len(tensors) == 1 and all(t is None for t in indices[: tensors[0][0]]):
        k, idx = tensors[0]
        return gather_along(ctx, x, k, idx, ctx.out_shape(node))
    ks, idxs = [k for k, _ in tensors], [t for _, t in tensors]
    coords, S, p = _coordinates(ctx, ks, idxs)
    q, r = len(S), x.rank
    rest = [d for d in range(r) if d not in ks]
    offset = list(range(p)) + list(range(p + q, q + len(rest)))
    dn = (
        f"#stablehlo.gather<offset_dims = {_ints(offset)}, collapsed_slice_dims = {_ints(sorted(ks))}, "
        f"start_index_map = {_ints(ks)}, index_vector_dim = {q}>"
    )
    slice_sizes = [1 if d in ks else x.sym_shape[d] for d in range(r)]
    return emit_gather(ctx, x, coords, dn, slice_sizes, ctx.out_shape(node))


def _true_ranks(ctx, mask):
    """``(length, m, rank)`` of a boolean ``mask`` flattened: its element count, the mask as
    ``i32`` 0/1 of that length, and each position's rank among the Trues (an inclusive cumsum,
    minus one: -1 before the first True)."""
    from .scan import cumsum_along

    length = as_dim(math.prod(mask.sym_shape, start=sizes.const(1)))
    m = ctx.convert(ctx.reshape(mask, (length,)), "i32")
    return length, m, ctx.binary("stablehlo.subtract", cumsum_along(ctx, m, 0), ctx.constant(1, "i32", (length,)))


def mask_index(ctx, node, x, indices):
    """``x[..., mask]`` (one boolean mask, after ``k`` full dims): the rows where
    ``mask`` holds, in order, a data-dependent count ``u`` of them.

    Each kept row is scattered to its rank among the kept ones (an inclusive
    cumsum of the mask, minus one; a dropped row goes to a spare row past the
    end, sliced off), then ``set_dimension_size`` sets the live size to the
    count (a ``reduce``): under bounds the result is the mask's length at most,
    so XLA's dynamic padder serves every count with one compile; without
    bounds the dim stays `?` (refinement to a static shape cannot know it). The
    count's symbol is read from this value from now on (``get_dimension_size``)."""
    tensors = [(k, t) for k, t in enumerate(indices) if t is not None]
    if len(tensors) != 1 or any(t is not None for t in indices[: tensors[0][0]]):
        raise NotImplementedError("boolean-mask indexing mixed with other index tensors")
    k, mask = tensors[0]
    m = mask.rank
    out = ctx.out_shape(node)
    u = out[k]
    atom = u.single_atom() if isinstance(u, sizes.Expr) else None
    if atom is None or atom.kind != "var":
        raise NotImplementedError(f"boolean-mask indexing whose size {u} is not a fresh (unbacked) symbol")
    pre, rest = list(x.sym_shape[:k]), list(x.sym_shape[k + m :])
    length, mf, rank = _true_ranks(ctx, mask)
    xf = ctx.reshape(x, tuple(pre + [length] + rest))
    spare = ctx.broadcast_to(ctx.convert(ctx.dim(length), "i32"), (length,))
    target = ctx.select(ctx.convert(mf, "i1"), rank, spare)
    buf = ctx.constant(0, x.dtype, tuple(pre + [as_dim(length + 1)] + rest))
    buf = scatter_along(ctx, buf, k, target, xf, False)
    kept = ctx.slice(buf, [0] * buf.rank, list(xf.sym_shape), [1] * buf.rank, out_shape=xf.sym_shape)
    count = ctx.reduce(mf, [0], "add")
    hi = ctx.ranges.get(atom.name, (0, None))[1]
    lb = ctx.bound_of(length) if not isinstance(length, int) else length
    if lb is not None:
        ctx.ranges[atom.name] = (0, lb if hi is None else min(hi, lb))
        ctx._bound_cache.clear()
    res = ctx.op("stablehlo.set_dimension_size", [kept, count], (out, x.dtype), attrs={"dimension": f"{k} : i64"})
    ctx.sym.env.setdefault(atom.name, (res, k))
    return res


def _coordinates(ctx, ks, idxs):
    """Index tensors at dims ``ks`` broadcast to their common shape S, stacked
    into (S..., len(ks)) int64 coordinates; ``p`` is where torch puts S in the
    result: at ``ks[0]`` when the index dims are adjacent, else first."""
    S = _broadcast_shape([t.sym_shape for t in idxs])
    q = len(S)
    pieces = [ctx.reshape(ctx.broadcast_to(ctx.convert(t, "i64"), S), S + (1,)) for t in idxs]
    coords = (
        pieces[0]
        if len(pieces) == 1
        else ctx.op("stablehlo.concatenate", pieces, (S + (len(idxs),), "i64"), attrs={"dimension": f"{q} : i64"})
    )
    adjacent = ks == list(range(ks[0], ks[0] + len(ks)))
    return coords, S, ks[0] if adjacent else 0


@lowers(aten.gather.default)
def _gather(ctx, node, x, dim, index, sparse_grad=False):
    r = x.rank
    coords = full_coordinates(ctx, index, dim % r)
    dn = (
        f"#stablehlo.gather<offset_dims = [], collapsed_slice_dims = {_ints(range(r))}, "
        f"start_index_map = {_ints(range(r))}, index_vector_dim = {r}>"
    )
    return ctx.op(
        "stablehlo.gather",
        [x, coords],
        (index.sym_shape, x.dtype),
        attrs={
            "dimension_numbers": dn,
            "slice_sizes": "array<i64: " + ", ".join("1" for _ in range(r)) + ">",
            "indices_are_sorted": "false",
        },
    )


@lowers(aten.index_put.default, aten.index_put_.default, aten._unsafe_index_put.default)
def _index_put(ctx, node, x, indices, values, accumulate=False):
    tensors = [(k, t) for k, t in enumerate(indices) if t is not None]
    if not tensors:
        return ctx.tensor(values, ctx.out_dtype(node), x.sym_shape)
    if any(t.dtype == "i1" for _, t in tensors):
        (k, mask), one = tensors[0], all(isinstance(d, int) and d == 1 for d in values.sym_shape)
        if len(tensors) == 1 and k == 0 and mask.rank == x.rank and one:
            # ``x[mask] = v`` with one value (masked_fill by indexing: ChebConv's ``w[w == inf] = 0``):
            # a select, whatever the number of Trues; more values than one would be data-dependent
            dt, shape = ctx.out_dtype(node), x.sym_shape
            x, v = ctx.convert(x, dt), ctx.tensor(values, dt, shape)
            return ctx.select(mask, ctx.binary("stablehlo.add", x, v) if accumulate else v, x)
        if len(tensors) == 1 and k == 0 and mask.rank <= x.rank and values.rank == x.rank - mask.rank + 1:
            return _mask_put(ctx, node, x, mask, values, bool(accumulate))
        raise NotImplementedError("index_put with a boolean mask mixed with other indices, or values of another rank")
    x = ctx.convert(x, ctx.out_dtype(node))
    tensors = [(k, wrapped(ctx, t, x.sym_shape[k])) for k, t in tensors]
    if len(tensors) == 1 and tensors[0][1].rank == 1:
        return scatter_along(ctx, x, tensors[0][0], tensors[0][1], values, bool(accumulate))
    return _scatter_points(ctx, x, [k for k, _ in tensors], [t for _, t in tensors], values, bool(accumulate))


def _mask_put(ctx, node, x, mask, values, accumulate):
    """``x[mask] = values`` (``+=``), ``mask`` over ``x``'s leading dims, ``values`` one row per
    True (a data-dependent count: ChebConv's ``w[mask] = w[mask] * ...``): each True position
    takes the row of its rank among the Trues (an inclusive cumsum of the mask, minus one), a
    gather; the result is a select, of ``x``'s static or bounded shape whatever the count."""
    dt = ctx.out_dtype(node)
    rest = tuple(x.sym_shape[mask.rank :])
    length, _, rank = _true_ranks(ctx, mask)
    xf = ctx.reshape(ctx.convert(x, dt), (length, *rest))
    rank = ctx.binary("stablehlo.maximum", rank, ctx.constant(0, "i32", (length,)))  # (before the first True)
    rows = gather_along(ctx, ctx.convert(values, dt), 0, rank, (length, *rest))
    if accumulate:
        rows = ctx.binary("stablehlo.add", xf, rows)
    keep = ctx.broadcast_to(ctx.reshape(mask, (length,)), (length, *rest), dims=[0])
    return ctx.reshape(ctx.select(keep, rows, xf), x.sym_shape)


@lowers(aten.nonzero.default)
def _nonzero(ctx, node, x):
    """``nonzero(x)``: the (count, rank) coordinates of the nonzero elements, in order (MFConv's
    degree buckets): every element's coordinates (iotas), the rows where ``x != 0`` kept by
    :func:`mask_index` (a data-dependent count, bounded by ``x``'s numel)."""
    shape = tuple(x.sym_shape)
    length = as_dim(math.prod(shape, start=sizes.const(1)))
    pieces = [ctx.reshape(ctx.iota(shape, a, "i64"), (*shape, 1)) for a in range(len(shape))]
    coords = ctx.op("stablehlo.concatenate", pieces, ((*shape, len(shape)), "i64"), attrs={"dimension": f"{len(shape)} : i64"})
    coords = ctx.reshape(coords, (length, len(shape)))
    nz = ctx.compare(x, ctx.constant(0, x.dtype, shape), "NE") if x.dtype != "i1" else x
    return mask_index(ctx, node, coords, [ctx.reshape(nz, (length,))])


def _scatter_points(ctx, x, ks, idxs, values, accumulate):
    """x[..., i0, ..., i1, ...] (+)= values for index tensors at dims ``ks``
    (torch's advanced indexing: values broadcast to the indexed result's shape)."""
    coords, S, p = _coordinates(ctx, ks, idxs)
    q = len(S)
    rest = [d for d in range(x.rank) if d not in ks]
    rest_shape = tuple(x.sym_shape[d] for d in rest)
    upd_shape = rest_shape[:p] + S + rest_shape[p:]
    updates = ctx.tensor(values, x.dtype, upd_shape)
    window = list(range(p)) + list(range(p + q, len(upd_shape)))
    dn = (
        f"#stablehlo.scatter<update_window_dims = {_ints(window)}, inserted_window_dims = {_ints(sorted(ks))}, "
        f"scatter_dims_to_operand_dims = {_ints(ks)}, index_vector_dim = {q}>"
    )
    return _scatter(ctx, x, coords, updates, dn, accumulate)


def _broadcast_shape(shapes):
    r = max(len(s) for s in shapes)
    out = []
    for i in range(r):
        dims = [s[i - r + len(s)] for s in shapes if i - r + len(s) >= 0]
        dims = [d for d in dims if not (isinstance(d, int) and d == 1)] or [1]
        out.append(dims[0])
    return tuple(out)


@lowers(aten.index_add.default)
def _index_add(ctx, node, x, dim, index, source, alpha=1):
    x = ctx.convert(x, ctx.out_dtype(node))
    if alpha != 1:
        source = ctx.binary("stablehlo.multiply", ctx.convert(source, x.dtype), ctx.constant(alpha, x.dtype, source.sym_shape))
    if index.rank == 0:
        index = ctx.reshape(index, (1,))
    return scatter_along(ctx, x, dim, index, source, True)


def _scatter_full(ctx, node, x, dim, index, src, accumulate):
    x = ctx.convert(x, ctx.out_dtype(node))
    upd, coords, dn = _scatter_operands(ctx, x, dim, index, src)
    return _scatter(ctx, x, coords, upd, dn, accumulate)


def _scatter_operands(ctx, x, dim, index, src):
    """(updates, coordinates, dimension numbers) of ``x.scatter*(dim, index, src)``."""
    r = x.rank
    S = index.sym_shape
    if isinstance(src, Value):
        if not ctx.same_shape(src.sym_shape, S):
            src = ctx.slice(src, [0] * r, list(S), [1] * r, out_shape=S)
        upd = ctx.convert(src, x.dtype)
    else:
        upd = ctx.constant(src, x.dtype, S)
    coords = full_coordinates(ctx, index, dim % r)
    dn = (
        f"#stablehlo.scatter<update_window_dims = [], inserted_window_dims = {_ints(range(r))}, "
        f"scatter_dims_to_operand_dims = {_ints(range(r))}, index_vector_dim = {r}>"
    )
    return upd, coords, dn


@lowers(aten.scatter_add.default)
def _scatter_add(ctx, node, x, dim, index, src):
    return _scatter_full(ctx, node, x, dim, index, src, True)


@lowers(aten.scatter.src, aten.scatter.value)
def _scatter_src(ctx, node, x, dim, index, src):
    return _scatter_full(ctx, node, x, dim, index, src, False)


@lowers(aten.scatter_reduce.two)
def _scatter_reduce(ctx, node, x, dim, index, src, reduce, include_self=True):
    """sum / prod / amax / amin / mean; without ``include_self`` the targets
    start from the reduction's identity (mean: divide by the count of updates,
    plus one when ``x`` is included; untouched elements keep ``x``)."""
    return scatter_reduce(ctx, ctx.out_dtype(node), x, dim, index, src, reduce, include_self)


@lowers(aten.index_reduce.default)
def _index_reduce(ctx, node, x, dim, index, source, reduce, include_self=True):
    """``x``'s slices ``index[i]`` along ``dim`` reduced with ``source``'s slices ``i``: the
    scatter-reduce of ``index`` broadcast along ``dim`` to ``source``'s shape."""
    if index.rank == 0:
        index = ctx.reshape(index, (1,))
    if source.rank == 0:
        source = ctx.reshape(source, (1,))
    d = dim % max(source.rank, 1)
    index = ctx.broadcast_to(index, source.sym_shape, dims=[d])
    return scatter_reduce(ctx, ctx.out_dtype(node), x, d, index, source, reduce, include_self)


def scatter_reduce(ctx, dt, x, dim, index, src, reduce, include_self):
    """``x.scatter_reduce(dim, index, src, reduce, include_self)`` in ``dt`` (see :func:`_scatter_reduce`)."""
    x = ctx.convert(x, dt)
    upd, coords, dn = _scatter_operands(ctx, x, dim, index, src)
    kind = "sum" if reduce == "mean" else reduce
    if kind not in _COMBINE:
        raise NotImplementedError(f"scatter_reduce with reduce={reduce!r}")
    hit = _scatter(ctx, ctx.constant(False, "i1", x.sym_shape), coords, ctx.constant(True, "i1", upd.sym_shape), dn, False)
    base = x
    if not include_self:
        lo, hi = (
            (float("-inf"), float("inf"))
            if T.is_float(dt)
            else (int(np.iinfo(T.MLIR_TO_NUMPY[dt]).min), int(np.iinfo(T.MLIR_TO_NUMPY[dt]).max))
        )
        identity = {"sum": 0, "prod": 1, "amax": lo, "amin": hi}[kind]
        base = ctx.select(hit, ctx.constant(identity, dt, x.sym_shape), x)
    out = _scatter(ctx, base, coords, upd, dn, kind)
    if reduce != "mean":
        return out
    count = _scatter(
        ctx, ctx.constant(1 if include_self else 0, dt, x.sym_shape), coords, ctx.constant(1, dt, upd.sym_shape), dn, True
    )
    one = ctx.constant(1, dt, x.sym_shape)
    mean = ctx.binary("stablehlo.divide", out, ctx.binary("stablehlo.maximum", count, one))
    if not T.is_float(dt):  # torch floors the integer mean
        from .elementwise import _floor_div_int

        mean = _floor_div_int(ctx, out, ctx.binary("stablehlo.maximum", count, one))
    return ctx.select(hit, mean, x)
