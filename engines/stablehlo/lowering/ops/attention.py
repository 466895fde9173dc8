"""``scaled_dot_product_attention``, lowered as itself (``lower`` keeps it out of
the decompositions): softmax(q kᵀ · scale + mask) v as two ``dot_general``s.

torch's decomposition of the op returns a different memory layout than the CPU
kernel the program was traced with (a flash layout: (B, S, H, D) in memory),
so an eager-valid ``view`` after ``transpose(1, 2)`` (GPT-2's attention) no
longer type-checks in the retrace ("Cannot view a tensor with shape ... and
strides ..."). Strides mean nothing to StableHLO: kept whole, the op lowers
here and every later view keeps its traced meaning."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import types as T
from ..registry import lowers
from .linalg import dot
from .reduce import softmax

aten = torch.ops.aten


def _repeat_heads(ctx, x, groups: int):
    """(B, Hk, S, E) -> (B, Hk * groups, S, E), each head repeated ``groups`` times in place (GQA)."""
    if groups == 1:
        return x
    *b, h, s, e = x.sym_shape
    y = ctx.reshape(x, tuple(b) + (h, 1, s, e))
    y = ctx.broadcast_to(y, tuple(b) + (h, groups, s, e), dims=list(range(x.rank + 1)))
    return ctx.reshape(y, tuple(b) + (h * groups, s, e))


def _batch_to(ctx, x, batch: tuple):
    """``x`` (..., S, E) broadcast to the batch dims ``batch``: torch's math kernel broadcasts
    them (Falcon's one KV head against every query head), ``dot_general`` does not."""
    shape = tuple(batch) + tuple(x.sym_shape[-2:])
    return x if ctx.same_shape(x.sym_shape, shape) else ctx.broadcast_to(x, shape)


@lowers(aten.scaled_dot_product_attention.default)
def _sdpa(ctx, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p:
        raise NotImplementedError(f"scaled_dot_product_attention with dropout_p={dropout_p} (random): eval only")
    dt = ctx.out_dtype(node)
    r = q.rank
    e = q.sym_shape[-1]
    if scale is None and isinstance(e, int):
        scale = 1.0 / math.sqrt(e)
    if enable_gqa and r >= 3 and q.sym_shape[-3] != k.sym_shape[-3]:
        groups = q.sym_shape[-3] // k.sym_shape[-3]
        k, v = _repeat_heads(ctx, k, groups), _repeat_heads(ctx, v, groups)
    out = ctx.out_shape(node)
    q, k, v = (_batch_to(ctx, x, out[:-2]) for x in (q, k, v))
    r = len(out)
    batch = tuple(range(r - 2))
    s = dot(ctx, q, k, dt, batch, batch, (r - 1,), (r - 1,))  # (..., L, S)
    if scale is None:  # a dynamic head dim: torch's default 1/sqrt(E), of the runtime E
        factor = ctx.unary("stablehlo.rsqrt", ctx.convert(ctx.dim(e), dt))
        s = ctx.binary("stablehlo.multiply", s, ctx.broadcast_to(factor, s.sym_shape))
    else:
        s = ctx.binary("stablehlo.multiply", s, ctx.constant(float(scale), dt, s.sym_shape))
    neg = ctx.constant(-np.inf, dt, s.sym_shape)
    if is_causal:
        rows = ctx.iota(s.sym_shape, r - 2, "i32")
        cols = ctx.iota(s.sym_shape, r - 1, "i32")
        s = ctx.select(ctx.compare(cols, rows, "LE"), s, neg)
    if attn_mask is not None:
        if attn_mask.dtype == "i1":
            s = ctx.select(ctx.broadcast_to(attn_mask, s.sym_shape), s, neg)
        else:
            s = ctx.binary("stablehlo.add", s, ctx.broadcast_to(ctx.convert(attn_mask, dt), s.sym_shape))
    cdt = "f32" if dt in ("f16", "bf16") else dt
    p = ctx.convert(softmax(ctx, ctx.convert(s, cdt), r - 1), dt)
    if not T.is_float(dt):
        raise NotImplementedError(f"scaled_dot_product_attention on {dt}")
    return dot(ctx, p, v, dt, batch, batch, (r - 1,), (r - 2,))
