"""Contractions: matmul (and mm/bmm), addmm, linear, einsum."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..tensor import Unsupported
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import ONE, assume_eq, bcast_dim, broadcast, promote, shape_of


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


@lazy_op("mm", "bmm")
def mm(a, b):
    return matmul(a, b)


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
        raise Unsupported("lazy: einsum with '...'")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not _:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    dims: dict = {}
    for term, x in zip(terms, operands):
        for c, e in zip(term, shape_of(x)):
            dims[c] = bcast_dim(ctx, dims[c], e) if c in dims else e
    return record(ctx, "einsum", (equation,) + tuple(operands), {}, [dims[c] for c in rhs], promote(*operands))
