"""Scatters that write or count by a computed position: ``put`` (flat indices),
``diagonal_scatter`` (a select on the diagonal's mask), ``histc`` (counts into
bins) and ``segment_reduce`` (rows reduced into the segment each falls in).

Each is a ``stablehlo.scatter`` or a ``select`` over iotas, so a dynamic dim
needs no loop: XLA's dynamic padder serves them. A position a scatter should not
write (a value outside histc's range, a row past the last segment) is sent out of
range, which ``stablehlo.scatter`` skips.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engines import sizes

from ..registry import lowers
from ..symbolic import as_dim
from .gather import gather_along
from .index import scatter_along, scatter_reduce
from .scan import cumsum_along

aten = torch.ops.aten


def _numel(x):
    return as_dim(math.prod(x.sym_shape, start=sizes.const(1)))


def _flat(ctx, x):
    return ctx.reshape(x, (_numel(x),))


@lowers(aten.put.default)
def _put(ctx, node, x, index, source, accumulate=False):
    """``x.flatten()[index] (+)= source.flatten()``; negative indices count from the end."""
    dt = ctx.out_dtype(node)
    flat = _flat(ctx, ctx.convert(x, dt))
    n = flat.sym_shape[0]
    idx = _flat(ctx, ctx.convert(index, "i64"))
    size = ctx.convert(ctx.broadcast_to(ctx.dim(n), idx.sym_shape), "i64")
    idx = ctx.select(ctx.compare(idx, ctx.constant(0, "i64", idx.sym_shape), "LT"), ctx.binary("stablehlo.add", idx, size), idx)
    out = scatter_along(ctx, flat, 0, idx, _flat(ctx, ctx.convert(source, dt)), bool(accumulate))
    return ctx.reshape(out, x.sym_shape)


@lowers(aten.diagonal_scatter.default)
def _diagonal_scatter(ctx, node, x, src, offset=0, dim1=0, dim2=1):
    """``x`` with its ``offset`` diagonal over (``dim1``, ``dim2``) replaced by ``src`` (the
    other dims in order, then the diagonal): element (i, i + offset) is ``src[..., i]``
    (offset >= 0), (j - offset, j) is ``src[..., j]`` (offset < 0)."""
    dt = ctx.out_dtype(node)
    x, src = ctx.convert(x, dt), ctx.convert(src, dt)
    r = x.rank
    d1, d2 = dim1 % r, dim2 % r
    rows, cols = ctx.iota(x.sym_shape, d1, "i64"), ctx.iota(x.sym_shape, d2, "i64")
    on = ctx.compare(ctx.binary("stablehlo.subtract", cols, rows), ctx.constant(int(offset), "i64", x.sym_shape), "EQ")
    along = d1 if offset >= 0 else d2  # the dim whose position is the diagonal's
    n = x.sym_shape[along]
    length = src.sym_shape[-1]
    last = ctx.broadcast_to(
        ctx.binary(
            "stablehlo.maximum", ctx.binary("stablehlo.subtract", ctx.dim(length), ctx.constant(1, "i32")), ctx.constant(0, "i32")
        ),
        (n,),
    )
    k = ctx.binary("stablehlo.minimum", ctx.iota((n,), 0, "i32"), last)
    picked = gather_along(ctx, src, src.rank - 1, k)  # (others..., n)
    others = [i for i in range(r) if i not in (d1, d2)]
    spread = ctx.broadcast_to(picked, x.sym_shape, dims=others + [along])
    return ctx.select(on, spread, x)


@lowers(aten.histc.default)
def _histc(ctx, node, x, bins=100, min=0, max=0):
    """torch's ``histc``: ``bins`` equal bins over [min, max] (the data's range when both are
    0, widened by 1 each side when it is one value); a value outside, or NaN, counts nowhere;
    ``max`` itself counts in the last bin."""
    dt = ctx.out_dtype(node)
    flat = _flat(ctx, ctx.convert(x, dt))
    shape = flat.sym_shape
    lo, hi = ctx.scalar(min, dt), ctx.scalar(max, dt)
    if isinstance(min, (int, float)) and isinstance(max, (int, float)) and min == max:
        lo, hi = ctx.reduce(flat, [0], "min"), ctx.reduce(flat, [0], "max")
        same = ctx.compare(lo, hi, "EQ")
        one = ctx.constant(1, dt)
        lo = ctx.select(same, ctx.binary("stablehlo.subtract", lo, one), lo)
        hi = ctx.select(same, ctx.binary("stablehlo.add", hi, one), hi)
    lo_b, hi_b = ctx.broadcast_to(lo, shape), ctx.broadcast_to(hi, shape)
    nb = ctx.constant(bins, dt, shape)
    # torch's bin: (x - min) * bins / (max - min), as ints, the top edge in the last bin
    pos = ctx.binary(
        "stablehlo.divide",
        ctx.binary("stablehlo.multiply", ctx.binary("stablehlo.subtract", flat, lo_b), nb),
        ctx.binary("stablehlo.subtract", hi_b, lo_b),
    )
    b = ctx.convert(ctx.unary("stablehlo.floor", pos), "i64")
    b = ctx.binary("stablehlo.minimum", b, ctx.constant(bins - 1, "i64", shape))
    inside = ctx.binary("stablehlo.and", ctx.compare(flat, lo_b, "GE"), ctx.compare(flat, hi_b, "LE"))
    b = ctx.select(inside, b, ctx.constant(bins, "i64", shape))  # (out of range: skipped, NaN too)
    zeros = ctx.constant(0, dt, (int(bins),))
    return scatter_along(ctx, zeros, 0, b, ctx.constant(1, dt, shape), True)


_INITIAL = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
_KIND = {"sum": "sum", "mean": "sum", "prod": "prod", "max": "amax", "min": "amin"}


@lowers(aten.segment_reduce.default)
def _segment_reduce(ctx, node, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Rows of ``data`` along ``axis`` reduced per segment (``lengths``, or ``offsets``: segment
    i is rows [offsets[i], offsets[i+1])), each segment starting from ``initial`` (else the
    reduction's identity); ``mean`` divides by the segment's length (an empty one: NaN, or
    ``initial`` when given). Each row is
    scattered to its segment: the count of segment ends at or before it (rows before the first
    segment or past the last go out of range)."""
    if indices is not None or (lengths is None) == (offsets is None):
        raise NotImplementedError("segment_reduce needs lengths or offsets (not indices)")
    if reduce not in _INITIAL:
        raise NotImplementedError(f"segment_reduce with reduce={reduce!r}")
    dt = ctx.out_dtype(node)
    data = ctx.convert(data, dt)
    axis %= data.rank
    if offsets is not None:
        if offsets.rank != 1:
            raise NotImplementedError("segment_reduce over offsets of rank > 1")
        k = as_dim(offsets.sym_shape[0] - 1)
        offsets = ctx.convert(offsets, "i64")
        starts = ctx.slice(offsets, [0], [k], [1], out_shape=(k,))
        ends = ctx.slice(offsets, [1], [offsets.sym_shape[0]], [1], out_shape=(k,))
    else:
        if lengths.rank != 1:
            raise NotImplementedError("segment_reduce over lengths of rank > 1")
        k = lengths.sym_shape[0]
        lengths = ctx.convert(lengths, "i64")
        ends = cumsum_along(ctx, lengths, 0)
        starts = ctx.binary("stablehlo.subtract", ends, lengths)
    n = data.sym_shape[axis]
    rows = ctx.iota((n, k), 0, "i64")
    seg = ctx.reduce(ctx.convert(ctx.compare(ctx.broadcast_to(ends, (n, k), dims=[1]), rows, "LE"), "i64"), [1], "add")
    first = ctx.broadcast_to(ctx.slice(starts, [0], [1], [1], out_shape=(1,)), (n,), dims=[0])
    before = ctx.compare(ctx.iota((n,), 0, "i64"), first, "LT")
    seg = ctx.select(before, ctx.broadcast_to(ctx.convert(ctx.dim(k), "i64"), (n,)), seg)  # (k: out of range)
    out_shape = ctx.out_shape(node)
    init = _INITIAL[reduce] if initial is None else float(initial)
    base = ctx.constant(init, dt, out_shape)
    idx = ctx.broadcast_to(seg, data.sym_shape, dims=[axis])
    out = scatter_reduce(ctx, dt, base, axis, idx, data, _KIND[reduce], True)
    if reduce == "mean":
        count = ctx.convert(ctx.binary("stablehlo.subtract", ends, starts), dt)
        count = ctx.broadcast_to(count, out_shape, dims=[axis])
        mean = ctx.binary("stablehlo.divide", out, count)  # (an empty segment: 0/0, NaN, as torch's)
        if initial is not None:  # (torch's: an empty segment keeps the initial value)
            mean = ctx.select(ctx.compare(count, ctx.constant(0, dt, out_shape), "GT"), mean, out)
        out = mean
    return out
