"""Matrix products: mm, bmm, addmm, matmul-like dot_general (dynamic batch,
output and contraction dims), linear."""

from __future__ import annotations

import torch

from ..registry import lowers

aten = torch.ops.aten


def dot(ctx, a, b, out_dtype, lhs_batch=(), rhs_batch=(), lhs_contract=(), rhs_contract=()):
    a = ctx.convert(a, out_dtype)
    b = ctx.convert(b, out_dtype)
    batch = tuple(a.sym_shape[i] for i in lhs_batch)
    lfree = tuple(d for i, d in enumerate(a.sym_shape) if i not in lhs_batch and i not in lhs_contract)
    rfree = tuple(d for i, d in enumerate(b.sym_shape) if i not in rhs_batch and i not in rhs_contract)
    parts = []
    if lhs_batch:
        parts.append(f"lhs_batching_dimensions = [{', '.join(map(str, lhs_batch))}]")
        parts.append(f"rhs_batching_dimensions = [{', '.join(map(str, rhs_batch))}]")
    parts.append(f"lhs_contracting_dimensions = [{', '.join(map(str, lhs_contract))}]")
    parts.append(f"rhs_contracting_dimensions = [{', '.join(map(str, rhs_contract))}]")
    return ctx.op(
        "stablehlo.dot_general",
        [a, b],
        (batch + lfree + rfree, out_dtype),
        attrs={"dot_dimension_numbers": "#stablehlo.dot<" + ", ".join(parts) + ">"},
    )


@lowers(aten.mm.default)
def _mm(ctx, node, a, b):
    return dot(ctx, a, b, ctx.out_dtype(node), lhs_contract=(1,), rhs_contract=(0,))


@lowers(aten.bmm.default)
def _bmm(ctx, node, a, b):
    return dot(ctx, a, b, ctx.out_dtype(node), (0,), (0,), (2,), (1,))


@lowers(aten.addmm.default)
def _addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    shape, dt = ctx.out_spec(node)
    p = dot(ctx, a, b, dt, lhs_contract=(1,), rhs_contract=(0,))
    if alpha != 1:
        p = ctx.binary("stablehlo.multiply", p, ctx.constant(alpha, dt, shape))
    c = ctx.tensor(bias, dt, shape)
    if beta != 1:
        c = ctx.binary("stablehlo.multiply", c, ctx.constant(beta, dt, shape))
    return ctx.binary("stablehlo.add", p, c)


@lowers(aten.linear.default)
def _linear(ctx, node, x, w, bias=None):
    shape, dt = ctx.out_spec(node)
    p = dot(ctx, x, w, dt, lhs_contract=(x.rank - 1,), rhs_contract=(1,))
    if bias is not None:
        p = ctx.binary("stablehlo.add", p, ctx.tensor(bias, dt, shape))
    return p


@lowers(aten.addbmm.default)
def _addbmm(ctx, node, bias, b1, b2, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: one ``dot_general`` contracting
    the batch dim with ``k`` (beta 0 ignores ``input``, NaNs too, as torch)."""
    shape, dt = ctx.out_spec(node)
    p = dot(ctx, b1, b2, dt, lhs_contract=(0, 2), rhs_contract=(0, 1))
    if alpha != 1:
        p = ctx.binary("stablehlo.multiply", p, ctx.constant(alpha, dt, shape))
    if beta == 0:
        return p
    c = ctx.tensor(bias, dt, shape)
    if beta != 1:
        c = ctx.binary("stablehlo.multiply", c, ctx.constant(beta, dt, shape))
    return ctx.binary("stablehlo.add", p, c)
