"""Contractions: matmul (and mm/bmm), addmm, linear, einsum, attention; ``linalg.vander``."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..symbolic import as_expr, const
from ..tensor import UntraceableOp
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import ONE, assume_eq, bcast_dim, broadcast, hint, le, promote, shape_of


@lazy_op("matmul", lowers=torch.matmul)
def matmul(a, b):
    ctx = ctx_for(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ShapeError("matmul: 0-d operand")
    va, vb = len(sa) == 1, len(sb) == 1
    sa = (ONE,) + sa if va else sa
    sb = sb + (ONE,) if vb else sb
    assume_eq(ctx, sa[-1], sb[-2], "matmul")
    out = list(broadcast(ctx, sa[:-2], sb[:-2])) + [sa[-2], sb[-1]]
    if vb:
        out.pop(-1)
    if va:
        out.pop(-2 if not vb else -1)
    return record(ctx, "matmul", (a, b), {}, out, promote(a, b))


def _fixed_rank(name, rank):
    """``torch.mm`` (2-d) / ``torch.bmm`` (3-d, one batch size): recorded as
    themselves, not as ``matmul`` (whose folding costs a cached step ~2 us)."""

    def impl(a, b):
        ctx = ctx_for(a, b)
        sa, sb = shape_of(a), shape_of(b)
        if len(sa) != rank or len(sb) != rank:
            raise ShapeError(f"{name}: expected {rank}-d operands, got {len(sa)}-d and {len(sb)}-d")
        assume_eq(ctx, sa[-1], sb[-2], name)
        out = [sa[-2], sb[-1]]
        if rank == 3:
            out.insert(0, assume_eq(ctx, sa[0], sb[0], name))
        if a.dtype != b.dtype:
            raise ShapeError(f"{name}: operands of dtypes {a.dtype} and {b.dtype} (torch does not promote)")
        return record(ctx, name, (a, b), {}, out, a.dtype)

    impl.__name__ = name
    return impl


mm = lazy_op("mm", lowers=torch.mm)(_fixed_rank("mm", 2))
bmm = lazy_op("bmm", lowers=torch.bmm)(_fixed_rank("bmm", 3))


@lazy_op("addmm", lowers=torch.addmm)
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to ``(n, p)``."""
    ctx = ctx_for(input, mat1, mat2)
    s1, s2 = shape_of(mat1), shape_of(mat2)
    if len(s1) != 2 or len(s2) != 2:
        raise ShapeError(f"addmm: mat1 and mat2 must be 2-d, got {len(s1)}-d and {len(s2)}-d")
    assume_eq(ctx, s1[1], s2[0], "addmm")
    out = broadcast(ctx, shape_of(input), (s1[0], s2[1]))
    if len(out) != 2:
        raise ShapeError(f"addmm: input of rank {len(shape_of(input))} does not broadcast to 2-d")
    kwargs = {k: v for k, v in (("beta", beta), ("alpha", alpha)) if v != 1}
    return record(ctx, "addmm", (input, mat1, mat2), kwargs, out, promote(input, mat1, mat2))


@lazy_op("linear", method=False, fnames=("linear",), lowers=F.linear)
def linear(x, weight, bias=None):
    ctx = ctx_for(x, weight, bias)
    sx, sw = shape_of(x), shape_of(weight)
    assume_eq(ctx, sx[-1], sw[-1], "linear")
    out = sx[:-1] + (sw[0],) if len(sw) == 2 else sx[:-1]
    if bias is not None:
        out = broadcast(ctx, out, shape_of(bias))
    return record(ctx, "linear", (x, weight, bias), {}, out, promote(x, weight))


@lazy_op("einsum", method=False, lowers=torch.einsum)
def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ctx = ctx_for(operands)
    eq = equation.replace(" ", "")
    if "." in eq:
        raise UntraceableOp("lazy: einsum with '...'")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not _:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    dims: dict = {}
    for term, x in zip(terms, operands, strict=False):
        for c, e in zip(term, shape_of(x), strict=False):
            dims[c] = bcast_dim(ctx, dims[c], e) if c in dims else e
    return record(ctx, "einsum", (equation,) + tuple(operands), {}, [dims[c] for c in rhs], promote(*operands))


@lazy_op(
    "scaled_dot_product_attention",
    method=False,
    fnames=("scaled_dot_product_attention",),
    lowers={"F.scaled_dot_product_attention": F.scaled_dot_product_attention},
)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v``: (..., L, E) x (..., S, E) x (..., S, Ev) -> (..., L, Ev).

    ``enable_gqa`` (grouped-query attention, torch's semantics): key and value heads (dim -3)
    are repeated ``Hq // Hkv`` times (``repeat_interleave``) to the query's ``Hq``; the runtime
    op does the repeat, so only the shape rule changes here."""
    if dropout_p:
        raise UntraceableOp("lazy: scaled_dot_product_attention with dropout_p > 0 is random", kind="random")
    ctx = ctx_for(query, key, value, attn_mask)
    sq, sk, sv = shape_of(query), shape_of(key), shape_of(value)
    if min(len(sq), len(sk), len(sv)) < 2:
        raise ShapeError("scaled_dot_product_attention: query, key and value need at least 2 dims")
    if enable_gqa:
        sk, sv = _gqa_heads(ctx, sq, sk, "key"), _gqa_heads(ctx, sq, sv, "value")
    assume_eq(ctx, sq[-1], sk[-1], "scaled_dot_product_attention (query/key embedding)")
    assume_eq(ctx, sk[-2], sv[-2], "scaled_dot_product_attention (key/value length)")
    batch = broadcast(ctx, broadcast(ctx, sq[:-2], sk[:-2]), sv[:-2])
    if attn_mask is not None:
        broadcast(ctx, tuple(batch) + (sq[-2], sk[-2]), shape_of(attn_mask))
    kwargs = {k: v for k, v in (("is_causal", is_causal), ("scale", scale), ("enable_gqa", enable_gqa)) if v}
    return record(
        ctx,
        "F.scaled_dot_product_attention",
        (query, key, value, attn_mask),
        kwargs,
        tuple(batch) + (sq[-2], sv[-1]),
        promote(query, key, value),
    )


def _gqa_heads(ctx, sq: tuple, s: tuple, what: str) -> tuple:
    """``s`` (key or value shape) with its heads (dim -3) as the query's ``Hq`` after torch's
    GQA repeat by ``Hq // H``; ``Hq == H * (Hq // H)`` is guarded where the heads are symbolic."""
    if min(len(sq), len(s)) < 3:
        raise ShapeError("scaled_dot_product_attention with enable_gqa: query and key/value need a head dim (-3)")
    hq, h = sq[-3], s[-3]
    if h is hq or h == hq:
        return s
    nq, n = hint(ctx, hq), hint(ctx, h)
    if n == 0 or nq % n:
        raise ShapeError(f"scaled_dot_product_attention: {n} {what} heads do not divide {nq} query heads")
    assume_eq(ctx, hq, h * (nq // n), f"scaled_dot_product_attention (GQA {what} heads)")
    return s[:-3] + (hq,) + s[-2:]


@functools.cache
def _vander_dtype(dt: torch.dtype) -> torch.dtype:
    """torch's result dtype of ``linalg.vander`` (integers as int64, cumprod's; bool refused), read off
    a one-element call."""
    return torch.linalg.vander(torch.zeros(1, dtype=dt), N=2).dtype


@lazy_op("linalg_vander", method=False, lowers=torch.linalg.vander)
def vander(x, N=None):
    """``linalg.vander``: ``x`` (a 0-d one as ``[1]``) with a last dim of ``N`` powers, ``N`` its last
    size by default. torch's meta kernel broadcasts a size of ``N - 1`` (a literal 1 at ``N == 2``)."""
    ctx = ctx_for(x, N)
    s = shape_of(x) or (ONE,)
    n = s[-1] if N is None else as_expr(N)
    if not le(ctx, const(2), n):
        raise ShapeError(f"linalg.vander: N must be greater than 1, got {ctx.vars.text(n)}")
    return record(ctx, "linalg_vander", (x,), {} if N is None else {"N": N}, (*s, n), _vander_dtype(x.dtype))
