"""Shape/movement ops: view/reshape with size arithmetic, expand, permute,
transpose, (un)squeeze, cat, split, slice, select.

Output shapes come from the node's symbolic metadata, so ``view(s0*s1, -1)``
becomes ``dynamic_reshape`` fed by ``get_dimension_size``/``multiply``.
"""

from __future__ import annotations

import math

import torch

from engines import sizes

from ..builder import Value
from ..registry import lowers
from ..symbolic import as_dim

aten = torch.ops.aten

_BIG = 2**62


@lowers(
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dims,
    aten.squeeze.dim,
    aten.squeeze.default,
    aten.flatten.using_ints,
    aten.view_copy.default,
    aten.unflatten.int,
)
def _view(ctx, node, x, *args, **kw):
    return ctx.reshape(x, ctx.out_shape(node))


@lowers(aten.expand.default, aten.expand_copy.default, aten.broadcast_to.default)
def _expand(ctx, node, x, size, implicit=False):
    return ctx.broadcast_to(ctx.tensor(x, ctx.out_dtype(node)), ctx.out_shape(node))


@lowers(aten.permute.default, aten.permute_copy.default)
def _permute(ctx, node, x, dims):
    return ctx.transpose(x, list(dims))


@lowers(aten.transpose.int, aten.transpose_copy.int)
def _transpose(ctx, node, x, d0, d1):
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.transpose(x, perm)


@lowers(aten.t.default)
def _t(ctx, node, x):
    return ctx.transpose(x, list(range(x.rank))[::-1])


@lowers(aten.cat.default, aten.concat.default)
def _cat(ctx, node, tensors, dim=0):
    shape, dt = ctx.out_spec(node)
    # torch allows legacy empty 1-D tensors in cat; they contribute nothing
    parts = [ctx.tensor(t, dt) for t in tensors if not (t.rank == 1 and t.sym_shape[0] == 0 and len(shape) != 1)]
    dim = dim % len(shape)
    if len(parts) == 1:
        return parts[0]
    return ctx.op("stablehlo.concatenate", parts, (shape, dt), attrs={"dimension": f"{dim} : i64"})


def _norm_index(i, size, default, ranges=None):
    """Python slice bound -> size (int or Expr) clamped into [0, size], as torch
    does: a negative bound counts from the end. A symbolic bound is clamped
    unless its place in ``[0, size]`` is evident over the dims' ranges
    (``ranges``: the export's ``Dim`` ranges; ``x[:65 - n]`` unclamped sliced
    past the live rows: the padded ones came back, a wrong shape); a bound of
    unknown sign gets torch's rule as max/min arithmetic."""
    if i is None:
        return default
    if isinstance(i, Value):
        raise TypeError("tensor-valued slice bound")
    i = as_dim(i)
    if isinstance(i, int) and i >= _BIG:
        return size
    if _evident(i, "<", 0, ranges):
        j = as_dim(size + i)
        return j if _evident(j, ">=", 0, ranges) else as_dim(sizes.smax(0, j))
    if isinstance(i, int) or _evident(i, ">=", 0, ranges):
        return i if _evident(i, "<=", size, ranges) else size if _evident(i, ">=", size, ranges) else as_dim(sizes.smin(i, size))
    # sign unknown: torch's rule with max/min only (ops shape refinement folds):
    # p = max(i, 0), q = min(i, 0) (one is 0); [i < 0] = min(1, -q) for an integer i;
    # i >= 0: min(p, size); i < 0: size - min(size, -q)
    p, q = sizes.smax(i, 0), sizes.smin(i, 0)
    return as_dim(sizes.smin(p, size) + (size - sizes.smin(size, -q)) * sizes.smin(1, -q))


def _evident(a, op, b, ranges=None) -> bool:
    """``a op b`` when evident over ``ranges`` (a var missing there: a positive size,
    as torch's sympy symbols are); False when not known."""
    rs = {}
    for v in (sizes.as_expr(a) - b).vars:
        lo, hi = (ranges or {}).get(v, (1, None))
        rs[v] = (max(1, lo if lo is not None else 1), hi)
    try:
        return sizes.compare(a, op, b, rs)
    except sizes.UndecidedError:
        return False


def slice_dim(ctx, x, dim, start, end, step, out_shape=None):
    """``x[start:end:step]`` along ``dim``. With step 1 and torch's size ``n`` of
    the result at hand (``out_shape``, in the dims' symbols), the limit is
    ``start + n``: torch's own clamping, also where a bound's sign is not
    evident from the ranges (``x[: n % 4 + 1]``)."""
    dim = dim % x.rank
    size = x.sym_shape[dim]
    ranges = getattr(ctx, "ranges", None)
    n = out_shape[dim] if out_shape is not None else None
    if not (step == 1 and n is not None and (isinstance(n, int) or n.vars <= ctx.sym.env.keys())):
        n = None
    if n is not None and end is None and not isinstance(as_dim(start if start is not None else 0), int):
        s = as_dim(size - n)  # x[k:]: the last n rows
    else:
        s = _norm_index(start, size, 0, ranges)
    if n is not None and not (isinstance(s, int) and isinstance(as_dim(end if end is not None else size), int)):
        e = as_dim(s + n)
    else:
        e = _norm_index(end, size, size, ranges)
    starts = [0] * x.rank
    limits = list(x.sym_shape)
    strides = [1] * x.rank
    starts[dim], limits[dim], strides[dim] = s, e, step
    return ctx.slice(x, starts, limits, strides, out_shape=out_shape)


@lowers(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(ctx, node, x, dim=0, start=None, end=None, step=1):
    start = _node_expr(node, 2, start)
    end = _node_expr(node, 3, end)
    return slice_dim(ctx, x, dim, start, end, step, out_shape=ctx.out_shape(node))


def _node_expr(node, pos, lowered):
    """For SymInt args, use the fx node's symbolic expression (the lowered
    value is a tensor<i32>; expressions let the slice stay static when possible)."""
    if isinstance(lowered, Value):
        a = node.args[pos] if len(node.args) > pos else None
        if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.SymInt):
            return as_dim(a.meta["val"])
        raise TypeError("tensor-valued index")
    return lowered


@lowers(aten.select.int, aten.select_copy.int)
def _select(ctx, node, x, dim, index):
    dim = dim % x.rank
    size = x.sym_shape[dim]
    index = _node_expr(node, 2, index)
    if isinstance(index, int) and index < 0:
        index = as_dim(size + index)
    s = slice_dim(
        ctx, x, dim, index, as_dim(index + 1), 1, out_shape=tuple(1 if i == dim else d for i, d in enumerate(x.sym_shape))
    )
    return ctx.reshape(s, ctx.out_shape(node))


@lowers(aten.split_with_sizes.default, aten.split_with_sizes_copy.default)
def _split_with_sizes(ctx, node, x, sizes, dim=0):
    dim = dim % x.rank
    outs = []
    off = 0
    for i in range(len(sizes)):
        shape = ctx.out_shape(node, i)
        n = shape[dim]
        end = as_dim(off + n)
        starts = [0] * x.rank
        limits = list(x.sym_shape)
        starts[dim], limits[dim] = off, end
        outs.append(ctx.slice(x, starts, limits, [1] * x.rank, out_shape=shape))
        off = end
    return outs


@lowers(aten.split.Tensor, aten.split_copy.Tensor)
def _split(ctx, node, x, split_size, dim=0):
    return _split_with_sizes(ctx, node, x, [None] * len(node.meta["val"]), dim)


@lowers(aten.unbind.int)
def _unbind(ctx, node, x, dim=0):
    dim = dim % x.rank
    outs = []
    for i in range(len(node.meta["val"])):
        starts = [0] * x.rank
        limits = list(x.sym_shape)
        starts[dim], limits[dim] = i, i + 1
        s = ctx.slice(x, starts, limits, [1] * x.rank, out_shape=tuple(1 if k == dim else d for k, d in enumerate(x.sym_shape)))
        outs.append(ctx.reshape(s, ctx.out_shape(node, i)))
    return outs


@lowers(aten.flip.default)
def _flip(ctx, node, x, dims):
    return ctx.op(
        "stablehlo.reverse",
        [x],
        (x.sym_shape, x.dtype),
        attrs={"dimensions": "array<i64: " + ", ".join(str(d % x.rank) for d in dims) + ">"},
    )


@lowers(aten.constant_pad_nd.default)
def _pad(ctx, node, x, pad, value=0):
    """torch pad list is (last_lo, last_hi, prev_lo, ...); symbolic widths (e.g.
    ``pad_sequence``'s ``max_len - len``) or a dynamic dim -> dynamic_pad."""
    lo = [0] * x.rank
    hi = [0] * x.rank
    pad_nodes = node.args[1] if len(node.args) > 1 else [None] * len(pad)
    for i in range(len(pad) // 2):
        d = x.rank - 1 - i
        lo[d], hi[d] = (_sym_arg(pad[2 * i + k], pad_nodes[2 * i + k]) for k in (0, 1))
    shape, dt = ctx.out_spec(node)
    pv = ctx.constant(value, dt)
    if all(isinstance(d, int) for d in list(shape) + lo + hi):
        return ctx.op(
            "stablehlo.pad",
            [ctx.convert(x, dt), pv],
            (shape, dt),
            attrs={
                "edge_padding_low": "array<i64: " + ", ".join(map(str, lo)) + ">",
                "edge_padding_high": "array<i64: " + ", ".join(map(str, hi)) + ">",
                "interior_padding": "array<i64: " + ", ".join("0" for _ in lo) + ">",
            },
        )
    return ctx.op(
        "stablehlo.dynamic_pad",
        [ctx.convert(x, dt), pv, ctx.shape_tensor(lo), ctx.shape_tensor(hi), ctx.shape_tensor([0] * x.rank)],
        (shape, dt),
    )


def _sym_arg(lowered, fx_arg):
    """A size argument as int or Expr (a SymInt's lowered value -> its node's expression)."""
    if isinstance(lowered, Value):
        if isinstance(fx_arg, torch.fx.Node) and isinstance(fx_arg.meta.get("val"), torch.SymInt):
            return as_dim(fx_arg.meta["val"])
        raise TypeError(f"tensor-valued size argument {fx_arg}")
    return as_dim(lowered)


@lowers(aten.slice_scatter.default)
def _slice_scatter(ctx, node, x, src, dim=0, start=None, end=None, step=1):
    """``x`` with ``x[start:end:step]`` along ``dim`` replaced by ``src`` (the
    functional form of slice assignment): ``dynamic_update_slice`` for step 1,
    a scatter at ``start + step * iota`` otherwise."""
    dt = ctx.out_dtype(node)
    x, src = ctx.convert(x, dt), ctx.convert(src, dt)
    dim = dim % x.rank
    s = _norm_index(_node_expr(node, 3, start), x.sym_shape[dim], 0, ctx.ranges)
    if step == 1:
        zero = ctx.constant(0, "i64")
        starts = [ctx.convert(ctx.dim(s), "i64") if i == dim else zero for i in range(x.rank)]
        return ctx.op("stablehlo.dynamic_update_slice", [x, src] + starts, (x.sym_shape, dt))
    from .index import scatter_along

    n = src.sym_shape[dim]
    idx = ctx.binary(
        "stablehlo.add",
        ctx.binary("stablehlo.multiply", ctx.iota((n,), 0, "i64"), ctx.constant(step, "i64", (n,))),
        ctx.broadcast_to(ctx.convert(ctx.dim(s), "i64"), (n,)),
    )
    return scatter_along(ctx, x, dim, idx, src, False)


@lowers(aten.repeat.default)
def _repeat(ctx, node, x, repeats):
    """Tile: broadcast to (r0, d0, r1, d1, ...) and merge each pair. A repeat count may be
    a size (WavLM repeats its position bias ``B`` times): it is read from the node's
    metadata, as a size expression."""
    reps = [as_dim(r.meta["val"]) if isinstance(r, torch.fx.Node) else as_dim(r) for r in node.args[1]]
    lead = len(reps) - x.rank
    dims = [1] * lead + list(x.sym_shape)
    inter = []
    for r, d in zip(reps, dims, strict=False):
        inter += [r, d]
    xv = ctx.reshape(x, tuple(dims))
    b = ctx.broadcast_to(xv, tuple(inter), dims=list(range(1, 2 * len(reps), 2)))
    return ctx.reshape(b, ctx.out_shape(node))


def _contiguous_strides(shape) -> list:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc = as_dim(acc * d)
    return out[::-1]


def _strides_match(shape, strides, want) -> bool:
    """``strides`` are ``want`` on every dim of more than one element (a size-1 dim's stride is never read)."""
    return all(n == 1 or as_dim(s) == as_dim(w) for n, s, w in zip(shape, strides, want, strict=True))


def _storage_order(shape, strides):
    """The permutation ``p`` with ``x.permute(p)`` contiguous (``x``'s elements in storage
    order), or None: a tensor whose strides are not a permutation's (overlapping,
    gaps), whose storage is no reshape of it."""
    import itertools

    if len(shape) > 5:
        return list(range(len(shape))) if _strides_match(shape, strides, _contiguous_strides(shape)) else None
    for p in itertools.permutations(range(len(shape))):
        ps = [shape[i] for i in p]
        if _strides_match(ps, [strides[i] for i in p], _contiguous_strides(ps)):
            return list(p)
    return None


def _meta(arg):
    """An fx argument's value at trace time (a SymInt for a size node)."""
    return arg.meta["val"] if isinstance(arg, torch.fx.Node) else arg


@lowers(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(ctx, node, x, size, stride, storage_offset=None):
    """A view of ``x``'s storage: the storage is ``x`` permuted to its stride order and
    flattened (a dense ``x`` at offset 0), and the view a reshape of it where its strides
    are the contiguous ones of its sizes (ConvNeXt's ``as_strided(mean, [B, C, 1, 1],
    [C, 1, C, C])``), else a gather at ``offset + sum_d iota_d * stride_d``. Any other
    input (overlapping or gapped strides, a storage offset) is refused by name."""
    from ..builder import LoweringError
    from .gather import gather_along

    src = node.args[0].meta.get("val")
    shape = [as_dim(d) for d in src.shape]
    strides = [as_dim(s) for s in src.stride()]
    order = _storage_order(shape, strides)
    # the view's strides and offset are the arguments, not the result's metadata:
    # as_strided_copy's result is a fresh contiguous tensor at offset 0
    requested = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset")
    offset = 0 if requested is None else as_dim(_meta(requested)) - as_dim(src.storage_offset())
    if order is None or as_dim(src.storage_offset()) != 0:
        raise LoweringError(
            f"aten::as_strided of an input with sizes {shape}, strides {strides}, offset {as_dim(src.storage_offset())}: "
            "its storage is not a dense permutation of it, so the view has no reshape or gather form"
        )
    out_shape = ctx.out_shape(node)
    out_strides = [as_dim(_meta(s)) for s in node.args[2]]
    numel = as_dim(math.prod(shape, start=sizes.const(1)))
    storage = ctx.reshape(ctx.transpose(x, order), (numel,))
    if offset == 0 and as_dim(math.prod(out_shape, start=sizes.const(1))) == numel:
        if _strides_match(out_shape, out_strides, _contiguous_strides(out_shape)):
            return ctx.reshape(storage, out_shape)
    index = ctx.tensor(offset if isinstance(offset, int) else ctx.convert(ctx.dim(offset), "i64"), "i64", out_shape)
    for d, s in enumerate(out_strides):
        if out_shape[d] == 1 or s == 0:
            continue
        term = ctx.iota(out_shape, d, "i64")
        s = ctx.tensor(s if isinstance(s, int) else ctx.convert(ctx.dim(s), "i64"), "i64", out_shape)
        index = ctx.binary("stablehlo.add", index, ctx.binary("stablehlo.multiply", term, s))
    return gather_along(ctx, storage, 0, index, out_shape)
