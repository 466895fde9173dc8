"""Pooling and resampling over the trailing spatial dims (static or dynamic):
max pooling (a max ``reduce_window``; with its indices, when they are read, a
two-operand one), average pooling,
nearest and (bi/tri)linear upsampling (gathers along each spatial dim).

``ceil_mode`` pads ``stride - 1`` more on the high side and slices the
result to torch's output size (the node's symbolic shape).
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np
import torch

from engines import sizes

from .. import types as T
from ..registry import lowers
from ..symbolic import as_dim

aten = torch.ops.aten

_I64_MAX = 2**63 - 1


def _arr(v):
    return "array<i64: " + ", ".join(str(int(a)) for a in v) + ">"


def _ints(v, nsp):
    v = [int(a) for a in (v if isinstance(v, (list, tuple)) else [v])]
    return v * nsp if len(v) == 1 else v


def _window(x, kernel, stride, padding, dilation, ceil_mode, pads=None):
    """reduce_window attributes over the trailing ``len(kernel)`` dims, the raw
    output shape and the (symmetric) padding; ``pads`` overrides the (lo, hi) pairs."""
    nsp = len(kernel)
    lead = x.rank - nsp
    kernel = _ints(kernel, nsp)
    stride = _ints(stride, nsp) if stride else kernel
    padding, dilation = _ints(padding, nsp), _ints(dilation, nsp)
    if pads is None:
        pads = [(p, p + (s - 1 if ceil_mode else 0)) for p, s in zip(padding, stride, strict=False)]
    out = list(x.sym_shape[:lead])
    for i, (k, s, d, (lo, hi)) in enumerate(zip(kernel, stride, dilation, pads, strict=False)):
        n = x.sym_shape[lead + i]
        out.append(as_dim(sizes.floordiv(sizes.as_expr(n) + lo + hi - d * (k - 1) - 1, s) + 1))
    attrs = {
        "window_dimensions": _arr([1] * lead + kernel),
        "window_strides": _arr([1] * lead + stride),
        "window_dilations": _arr([1] * lead + dilation),
        "padding": "dense<[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in [(0, 0)] * lead + pads) + f"]> : tensor<{x.rank}x2xi64>",
    }
    return attrs, tuple(out), padding, lead


def _fit(ctx, v, shape, exact=False):
    """Slice ``v`` down to ``shape`` (ceil_mode's extra window), a no-op when equal.
    ``exact``: the window's size formula is torch's own (no ceil_mode), so ``v`` has
    ``shape`` whatever the two expressions look like; it takes torch's expression
    with no slice (a run-time no-op slice of `?` sizes that IREE's codegen of a
    following pad cannot size, ResNet's stem)."""
    if ctx.same_shape(v.sym_shape, shape):
        return v
    if exact and str(ctx.type_of(v)) == str(ctx.type_of((shape, v.dtype))):
        return dataclasses.replace(v, sym_shape=tuple(shape))
    return ctx.slice(v, [0] * v.rank, list(shape), [1] * v.rank, out_shape=shape)


def _flat_spatial_index(ctx, x, lead):
    """int64 ``h*W + w`` (row-major over the spatial dims) for every element of ``x``."""
    acc = None
    for j in range(lead, x.rank):
        term = ctx.iota(x.sym_shape, j, "i64")
        stride = math.prod(x.sym_shape[j + 1 :], start=sizes.const(1))
        stride = as_dim(stride)
        if not (isinstance(stride, int) and stride == 1):
            s = side_value(ctx, stride, "i64")
            term = ctx.binary("stablehlo.multiply", term, ctx.broadcast_to(s, x.sym_shape))
        acc = term if acc is None else ctx.binary("stablehlo.add", acc, term)
    return acc


def _max_pool(ctx, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False, indices=True):
    """Values and (``indices``) their flat spatial indices; without indices a
    single-result max window, the form every executor (IREE's too) converts."""
    dt = x.dtype
    attrs, raw, _, lead = _window(x, kernel, stride, padding, dilation, ceil_mode)
    lowest = -math.inf if T.is_float(dt) else int(np.iinfo(T.MLIR_TO_NUMPY[dt]).min)
    shape = ctx.out_shape(node, 0)
    if not indices:
        region = ctx.scalar_region(dt, "stablehlo.maximum")
        vals = ctx.op("stablehlo.reduce_window", [x, ctx.constant(lowest, dt)], (raw, dt), attrs=attrs, regions=[region])
        return [_fit(ctx, vals, shape, not ceil_mode), None]
    idx = _flat_spatial_index(ctx, x, lead)

    def pick(c, va, ia, vb, ib):  # the larger value; on ties the first (smallest) index
        gt = c.compare(vb, va, "GT")
        tie = c.binary("stablehlo.and", c.compare(vb, va, "EQ"), c.compare(ib, ia, "LT"))
        take = c.binary("stablehlo.or", gt, tie)
        return [c.select(take, vb, va), c.select(take, ib, ia)]

    region = ctx.region([((), dt), ((), "i64"), ((), dt), ((), "i64")], pick)
    vals, inds = ctx.op(
        "stablehlo.reduce_window",
        [x, idx, ctx.constant(lowest, dt), ctx.constant(_I64_MAX, "i64")],
        [(raw, dt), (raw, "i64")],
        attrs=attrs,
        regions=[region],
    )
    return [_fit(ctx, vals, shape, not ceil_mode), _fit(ctx, inds, shape, not ceil_mode)]


def _indices_used(node) -> bool:
    """Whether anything reads result 1 of ``node`` (a ``getitem(node, 1)`` with users)."""
    return any(user.target is not operator.getitem or (user.args[1] != 0 and bool(user.users)) for user in node.users)


@lowers(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def _max_pool_with_indices(ctx, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool(ctx, node, x, kernel, stride, padding, dilation, ceil_mode, indices=_indices_used(node))


@lowers(aten.max_pool2d.default, aten.max_pool1d.default, aten.max_pool3d.default)
def _max_pool_values(ctx, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    node_meta = node.meta["val"]
    vals, _ = _max_pool(ctx, _Single(node, node_meta), x, kernel, stride, padding, dilation, ceil_mode, indices=False)
    return vals


class _Single:
    """A node view whose ``meta["val"]`` is a 1-tuple (for ops returning one tensor)."""

    def __init__(self, node, val):
        self.meta = {"val": (val,)}
        self.name = node.name


@lowers(aten.avg_pool1d.default, aten.avg_pool2d.default, aten.avg_pool3d.default)
def _avg_pool(ctx, node, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    shape, dt = ctx.out_spec(node)
    x = ctx.convert(x, dt)
    attrs, raw, pads, lead = _window(x, kernel, stride, padding, 1, ceil_mode)
    add = ctx.scalar_region(dt, "stablehlo.add")
    total = ctx.op("stablehlo.reduce_window", [x, ctx.constant(0, dt)], (raw, dt), attrs=attrs, regions=[add])
    if divisor_override:
        count = ctx.constant(divisor_override, dt, raw)
    elif count_include_pad and not ceil_mode:
        count = ctx.constant(math.prod(_ints(kernel, len(pads))), dt, raw)
    else:  # the window's elements inside the input (and inside its padding if counted)
        ones = ctx.constant(1, dt, x.sym_shape)
        if count_include_pad and any(pads):  # pad with ones explicitly; only ceil_mode's extra counts 0
            padded = tuple(d if i < lead else as_dim(d + 2 * pads[i - lead]) for i, d in enumerate(x.sym_shape))
            ones = ctx.op(
                "stablehlo.pad",
                [ones, ctx.constant(1, dt)],
                (padded, dt),
                attrs={
                    "edge_padding_low": _arr([0] * lead + pads),
                    "edge_padding_high": _arr([0] * lead + pads),
                    "interior_padding": _arr([0] * x.rank),
                },
            )
            st = _ints(stride, len(pads)) if stride else _ints(kernel, len(pads))
            attrs, _, _, _ = _window(ones, kernel, stride, 0, 1, ceil_mode, pads=[(0, s - 1 if ceil_mode else 0) for s in st])
        count = ctx.op(
            "stablehlo.reduce_window",
            [ones, ctx.constant(0, dt)],
            (raw, dt),
            attrs=attrs,
            regions=[ctx.scalar_region(dt, "stablehlo.add")],
        )
    return _fit(ctx, ctx.binary("stablehlo.divide", total, count), shape, not ceil_mode)


# ------------------------------------------------------------------ upsample
def side_value(ctx, n, dtype):
    """Side ``n`` (an int or a symbolic size) as a scalar of ``dtype``."""
    return ctx.constant(n, dtype) if isinstance(n, int) else ctx.convert(ctx.dim(n), dtype)


def area_scale(ctx, n_in, n_out, align_corners, scale, f):
    """torch's ``area_pixel_compute_scale``, a scalar of ``f``: ``(in-1)/(out-1)`` (0 for one
    output) with align_corners, else ``1/scale`` where a scale is given, else ``in/out``."""
    fin, fout = side_value(ctx, n_in, f), side_value(ctx, n_out, f)
    one = ctx.constant(1.0, f)
    if align_corners:
        den = ctx.binary("stablehlo.maximum", ctx.binary("stablehlo.subtract", fout, one), one)
        ratio = ctx.binary("stablehlo.divide", ctx.binary("stablehlo.subtract", fin, one), den)
        return ctx.select(ctx.compare(fout, one, "GT"), ratio, ctx.constant(0.0, f))
    if scale:
        return ctx.constant(1.0 / scale, f)
    return ctx.binary("stablehlo.divide", fin, fout)


def _src_index(ctx, n_in, n_out, scale, align_corners, linear):
    """f32 source coordinates (n_out,) of torch's ``area_pixel_compute_source_index`` /
    nearest rule; ``scale`` is the user's scale factor or None."""
    f = "f32"
    dst = ctx.iota((n_out,), 0, f)
    ratio = ctx.broadcast_to(area_scale(ctx, n_in, n_out, linear and align_corners, scale, f), (n_out,))
    if not linear or align_corners:
        return ctx.binary("stablehlo.multiply", dst, ratio)
    half = ctx.constant(0.5, f, (n_out,))
    src = ctx.binary("stablehlo.subtract", ctx.binary("stablehlo.multiply", ctx.binary("stablehlo.add", dst, half), ratio), half)
    return ctx.binary("stablehlo.maximum", src, ctx.constant(0.0, f, (n_out,)))


def _clamp_index(ctx, i, n_in, n_out):
    last = ctx.binary(
        "stablehlo.subtract",
        side_value(ctx, n_in, "i64"),
        ctx.constant(1, "i64"),
    )
    return ctx.binary("stablehlo.minimum", i, ctx.broadcast_to(last, (n_out,)))


def _upsample(ctx, node, x, scales, align_corners, linear):
    from .index import gather_along

    shape, dt = ctx.out_spec(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    y = ctx.convert(x, cdt)
    nsp = len(shape) - 2
    for j in range(nsp):
        d = 2 + j
        n_in, n_out = y.sym_shape[d], shape[d]
        scale = scales[j] if scales else None
        src = _src_index(ctx, n_in, n_out, scale, align_corners, linear)
        i0 = _clamp_index(ctx, ctx.convert(ctx.unary("stablehlo.floor", src), "i64"), n_in, n_out)
        out_shape = tuple(shape[k] if k <= d else s for k, s in enumerate(y.sym_shape))
        g0 = gather_along(ctx, y, d, i0, out_shape)
        if not linear:
            y = g0
            continue
        i1 = _clamp_index(ctx, ctx.binary("stablehlo.add", i0, ctx.constant(1, "i64", (n_out,))), n_in, n_out)
        g1 = gather_along(ctx, y, d, i1, out_shape)
        lam = ctx.binary("stablehlo.subtract", src, ctx.convert(i0, "f32"))
        lam = ctx.broadcast_to(ctx.convert(lam, cdt), out_shape, dims=[d])
        y = ctx.binary("stablehlo.add", g0, ctx.binary("stablehlo.multiply", lam, ctx.binary("stablehlo.subtract", g1, g0)))
    return ctx.convert(y, dt)


@lowers(aten.upsample_nearest1d.vec, aten.upsample_nearest2d.vec, aten.upsample_nearest3d.vec)
def _upsample_nearest(ctx, node, x, output_size=None, scale_factors=None):
    return _upsample(ctx, node, x, scale_factors, False, linear=False)


@lowers(aten.upsample_linear1d.vec, aten.upsample_bilinear2d.vec, aten.upsample_trilinear3d.vec)
def _upsample_linear(ctx, node, x, output_size=None, align_corners=False, scale_factors=None):
    return _upsample(ctx, node, x, scale_factors, align_corners, linear=True)


# the .default overloads (what dispatch, and so a traced F.interpolate, reaches): an explicit
# output size and one optional scale per spatial dim (``scales``; ``scales_d/h/w``), which
# torch's index rule uses where given
def _scales(positional, named):
    return list(positional) + [named[k] for k in ("scales", "scales_d", "scales_h", "scales_w") if k in named] or None


@lowers(aten.upsample_nearest1d.default, aten.upsample_nearest2d.default, aten.upsample_nearest3d.default)
def _upsample_nearest_default(ctx, node, x, output_size, *scales, **named):
    return _upsample(ctx, node, x, _scales(scales, named), False, linear=False)


@lowers(aten.upsample_linear1d.default, aten.upsample_bilinear2d.default, aten.upsample_trilinear3d.default)
def _upsample_linear_default(ctx, node, x, output_size, align_corners, *scales, **named):
    return _upsample(ctx, node, x, _scales(scales, named), align_corners, linear=True)


# ------------------------------------------------------ adaptive avg pooling
def _prefix(ctx, x, d):
    """Exclusive-inclusive prefix sums along ``d`` with a leading zero: (..., n + 1, ...)."""
    from .scan import cumsum_along

    c = cumsum_along(ctx, x, d)
    zero = ctx.constant(0, x.dtype, tuple(1 if i == d else s for i, s in enumerate(x.sym_shape)))
    shape = tuple(as_dim(s + 1) if i == d else s for i, s in enumerate(x.sym_shape))
    return ctx.op("stablehlo.concatenate", [zero, c], (shape, x.dtype), attrs={"dimension": f"{d} : i64"})


@lowers(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool(ctx, node, x, output_size):
    """Window i of n -> o: [floor(i*n/o), ceil((i+1)*n/o)); its mean from prefix
    sums (two gathers and a divide per spatial dim; the windows are separable)."""
    from .index import gather_along

    _shape, dt = ctx.out_spec(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    y = ctx.convert(x, cdt)
    for j, o in enumerate(output_size):
        d = x.rank - len(output_size) + j
        n = y.sym_shape[d]
        nv = side_value(ctx, n, "i64")
        i = ctx.iota((int(o),), 0, "i64")
        c = lambda v: ctx.constant(v, "i64", (int(o),))  # noqa: E731
        nb = ctx.broadcast_to(nv, (int(o),))
        start = ctx.binary("stablehlo.divide", ctx.binary("stablehlo.multiply", i, nb), c(int(o)))
        end = ctx.binary(
            "stablehlo.divide",
            ctx.binary(
                "stablehlo.add", ctx.binary("stablehlo.multiply", ctx.binary("stablehlo.add", i, c(1)), nb), c(int(o) - 1)
            ),
            c(int(o)),
        )
        p = _prefix(ctx, y, d)
        out_shape = tuple(int(o) if k == d else s for k, s in enumerate(y.sym_shape))
        total = ctx.binary(
            "stablehlo.subtract", gather_along(ctx, p, d, end, out_shape), gather_along(ctx, p, d, start, out_shape)
        )
        count = ctx.convert(ctx.binary("stablehlo.subtract", end, start), cdt)
        y = ctx.binary("stablehlo.divide", total, ctx.broadcast_to(count, out_shape, dims=[d]))
    return ctx.convert(y, dt)
