"""native_layer_norm / native_group_norm / batch norm (eval, and with batch statistics), returning out, mean, rstd."""

from __future__ import annotations

import math

import torch

from engines import sizes

from ..registry import lowers
from ..symbolic import as_dim
from .reduce import variance

aten = torch.ops.aten


def _cdt(dt):
    return "f32" if dt in ("f16", "bf16") else dt


@lowers(aten.native_layer_norm.default)
def _layer_norm(ctx, node, x, normalized_shape, weight, bias, eps):
    dt = ctx.out_dtype(node, 0)
    cdt = _cdt(dt)
    xc = ctx.convert(x, cdt)
    k = len(normalized_shape)
    axes = list(range(x.rank - k, x.rank))
    var, mean = variance(ctx, xc, axes, 0, True, cdt)
    rstd = ctx.unary("stablehlo.rsqrt", ctx.binary("stablehlo.add", var, ctx.constant(eps, cdt, var.sym_shape)))
    full = list(range(x.rank))
    y = ctx.binary(
        "stablehlo.multiply",
        ctx.binary("stablehlo.subtract", xc, ctx.broadcast_to(mean, x.sym_shape, dims=full)),
        ctx.broadcast_to(rstd, x.sym_shape, dims=full),
    )
    if weight is not None:
        y = ctx.binary("stablehlo.multiply", y, ctx.broadcast_to(ctx.convert(weight, cdt), x.sym_shape, dims=axes))
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, cdt), x.sym_shape, dims=axes))
    return [
        ctx.convert(y, dt),
        ctx.reshape(ctx.convert(mean, ctx.out_dtype(node, 1)), ctx.out_shape(node, 1)),
        ctx.reshape(ctx.convert(rstd, ctx.out_dtype(node, 2)), ctx.out_shape(node, 2)),
    ]


@lowers(aten.native_group_norm.default)
def _group_norm(ctx, node, x, weight, bias, N, C, HxW, group, eps):
    dt = ctx.out_dtype(node, 0)
    cdt = _cdt(dt)
    xc = ctx.convert(x, cdt)
    n_e, c_e = x.sym_shape[0], x.sym_shape[1]  # C may be dynamic (a multiple of group)
    spatial = math.prod(x.sym_shape[2:], start=sizes.const(1))
    grouped = (n_e, group, as_dim(c_e // group * spatial))
    xg = ctx.reshape(xc, grouped)
    var, mean = variance(ctx, xg, [2], 0, True, cdt)
    rstd = ctx.unary("stablehlo.rsqrt", ctx.binary("stablehlo.add", var, ctx.constant(eps, cdt, var.sym_shape)))
    yg = ctx.binary(
        "stablehlo.multiply",
        ctx.binary("stablehlo.subtract", xg, ctx.broadcast_to(mean, grouped, dims=[0, 1, 2])),
        ctx.broadcast_to(rstd, grouped, dims=[0, 1, 2]),
    )
    y = ctx.reshape(yg, x.sym_shape)
    if weight is not None:
        y = ctx.binary("stablehlo.multiply", y, ctx.broadcast_to(ctx.convert(weight, cdt), x.sym_shape, dims=[1]))
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, cdt), x.sym_shape, dims=[1]))
    return [
        ctx.convert(y, dt),
        ctx.reshape(ctx.convert(mean, ctx.out_dtype(node, 1)), ctx.out_shape(node, 1)),
        ctx.reshape(ctx.convert(rstd, ctx.out_dtype(node, 2)), ctx.out_shape(node, 2)),
    ]


@lowers(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_eval(ctx, node, x, weight, bias, running_mean, running_var, momentum, eps):
    """Inference batch norm with the running statistics, over dim 1 (channels)."""
    dt = ctx.out_dtype(node, 0)
    cdt = _cdt(dt)
    shape = x.sym_shape
    b = lambda v: ctx.broadcast_to(ctx.convert(v, cdt), shape, dims=[1])  # noqa: E731
    rstd = ctx.unary(
        "stablehlo.rsqrt",
        ctx.binary("stablehlo.add", ctx.convert(running_var, cdt), ctx.constant(eps, cdt, running_var.sym_shape)),
    )
    y = ctx.binary("stablehlo.multiply", ctx.binary("stablehlo.subtract", ctx.convert(x, cdt), b(running_mean)), b(rstd))
    if weight is not None:
        y = ctx.binary("stablehlo.multiply", y, b(weight))
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, b(bias))
    empty = [ctx.constant(0, ctx.out_dtype(node, i), ctx.out_shape(node, i)) for i in (1, 2)]
    return [ctx.convert(y, dt)] + empty


@lowers(aten._native_batch_norm_legit.no_stats)
def _batch_norm_batch_stats(ctx, node, x, weight, bias, training, momentum, eps):
    """Batch norm with the batch's own statistics (no running ones): over every dim but
    channels (1). ``F.instance_norm`` reaches it with the batch folded into the channels,
    so its (B*C,) statistics are symbolic in B; ``training`` only updates running stats,
    which this form has none of."""
    dt = ctx.out_dtype(node, 0)
    cdt = _cdt(dt)
    xc = ctx.convert(x, cdt)
    shape, full = x.sym_shape, list(range(x.rank))
    axes = [d for d in full if d != 1]
    var, mean = variance(ctx, xc, axes, 0, True, cdt)
    rstd = ctx.unary("stablehlo.rsqrt", ctx.binary("stablehlo.add", var, ctx.constant(eps, cdt, var.sym_shape)))
    y = ctx.binary(
        "stablehlo.multiply",
        ctx.binary("stablehlo.subtract", xc, ctx.broadcast_to(mean, shape, dims=full)),
        ctx.broadcast_to(rstd, shape, dims=full),
    )
    if weight is not None:
        y = ctx.binary("stablehlo.multiply", y, ctx.broadcast_to(ctx.convert(weight, cdt), shape, dims=[1]))
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, cdt), shape, dims=[1]))
    return [
        ctx.convert(y, dt),
        ctx.reshape(ctx.convert(mean, ctx.out_dtype(node, 1)), ctx.out_shape(node, 1)),
        ctx.reshape(ctx.convert(rstd, ctx.out_dtype(node, 2)), ctx.out_shape(node, 2)),
    ]
