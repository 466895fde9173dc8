"""Tensor creation with (possibly symbolic) sizes: full/zeros/ones, arange."""

from __future__ import annotations

import torch

from ..registry import lowers

aten = torch.ops.aten


@lowers(aten.full.default, aten.new_full.default, aten.full_like.default)
def _full(ctx, node, *args, **kw):
    shape, dt = ctx.out_spec(node)
    value = args[-1] if node.target is not aten.full_like.default else args[1]
    return ctx.tensor(value, dt, shape)


@lowers(
    aten.zeros.default,
    aten.new_zeros.default,
    aten.zeros_like.default,
    aten.empty.memory_format,
    aten.new_empty.default,
    aten.empty_like.default,
    aten.empty_strided.default,
    aten.empty_permuted.default,
    aten.new_empty_strided.default,
)
def _zeros(ctx, node, *args, **kw):
    shape, dt = ctx.out_spec(node)
    return ctx.constant(0, dt, shape)


@lowers(aten.ones.default, aten.new_ones.default, aten.ones_like.default)
def _ones(ctx, node, *args, **kw):
    shape, dt = ctx.out_spec(node)
    return ctx.constant(1, dt, shape)


@lowers(aten.scalar_tensor.default)
def _scalar_tensor(ctx, node, value, **kw):
    return ctx.tensor(value, ctx.out_dtype(node))


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(ctx, node, *args, **kw):
    shape, dt = ctx.out_spec(node)
    if node.target is aten.arange.default:
        start, step = 0, 1
    else:
        start = args[0]
        step = args[2] if len(args) > 2 else kw.get("step", 1)
    cdt = dt
    r = ctx.iota(shape, 0, cdt)
    if not (isinstance(step, (int, float)) and step == 1):
        r = ctx.binary("stablehlo.multiply", r, ctx.tensor(step, cdt, shape))
    if not (isinstance(start, (int, float)) and start == 0):
        r = ctx.binary("stablehlo.add", r, ctx.tensor(start, cdt, shape))
    return r
