"""Householder QR: ``linalg_qr``, ``linalg_householder_product``, ``ormqr``:
LAPACK's ``geqrf``, ``orgqr`` and ``ormqr`` as jax calls them.

Padded to the bound with zeros (:mod:`.lapack`), each reflector of A's columns
is zero in the padding's rows and each padded column's reflector is the
identity (``tau = 0``), so ``Q`` of the padded matrix is ``blockdiag(Q_A, I)``
and ``R``'s live corner is A's.
"""

from __future__ import annotations

import torch

from engines import sizes

from ..builder import LoweringError
from ..registry import lowers
from ..symbolic import as_dim
from .lapack import custom_call, enter, leave
from .matrix import triangle

aten = torch.ops.aten


def _min(a, b):
    return as_dim(sizes.smin(sizes.as_expr(a), sizes.as_expr(b)))


def geqrf(ctx, a):
    """(reflectors with R above the diagonal, taus ``[..., min(m, n)]``)."""
    *batch, m, n = a.sym_shape
    out, tau = custom_call(ctx, "geqrf", [a], [(a.sym_shape, a.dtype, True), (tuple(batch) + (_min(m, n),), a.dtype, False)])
    return out, tau


def orgqr(ctx, a, tau):
    """The first ``n`` columns of ``H_1 ... H_k`` for ``[..., m, n]`` reflectors (``m >= n >= k``)."""
    (q,) = custom_call(ctx, "orgqr", [a, tau], [(a.sym_shape, a.dtype, True)])
    return q


def _columns(ctx, a, cols):
    """``a`` cut or zero-padded to ``cols`` columns (``cols`` >= ``min(m, n)``)."""
    *batch, m, n = a.sym_shape
    k = _min(n, cols)
    a = ctx.slice(a, [0] * a.rank, list(batch) + [m, k], [1] * a.rank)
    if ctx.same_shape((k,), (cols,)):
        return a
    hi = [0] * (a.rank - 1) + [as_dim(cols - k)]
    shape = tuple(batch) + (m, cols)
    zero = ctx.constant(0, a.dtype)
    if all(isinstance(d, int) for d in shape + tuple(a.sym_shape)):
        return ctx.op(
            "stablehlo.pad",
            [a, zero],
            (shape, a.dtype),
            attrs={
                "edge_padding_low": "array<i64: " + ", ".join("0" for _ in shape) + ">",
                "edge_padding_high": "array<i64: " + ", ".join(map(str, hi)) + ">",
                "interior_padding": "array<i64: " + ", ".join("0" for _ in shape) + ">",
            },
        )
    z = ctx.shape_tensor([0] * a.rank)
    return ctx.op("stablehlo.dynamic_pad", [a, zero, z, ctx.shape_tensor(hi), z], (shape, a.dtype))


@lowers(aten.linalg_qr.default)
def _linalg_qr(ctx, node, a, mode="reduced"):
    pa = enter(ctx, a, 0.0)
    *batch, m, n = pa.sym_shape
    k = _min(m, n)
    refl, tau = geqrf(ctx, pa)
    complete = mode == "complete"
    rows = m if complete else k
    r = triangle(ctx, ctx.slice(refl, [0] * pa.rank, list(batch) + [rows, n], [1] * pa.rank), False)
    outs = [None, leave(ctx, r, ctx.out_shape(node, 1))]
    if mode != "r":
        q = orgqr(ctx, _columns(ctx, refl, m if complete else k), tau)
        outs[0] = leave(ctx, q, ctx.out_shape(node, 0))
    else:
        shape, dt = ctx.out_spec(node, 0)
        outs[0] = ctx.constant(0, dt, shape)
    return outs


@lowers(aten.linalg_householder_product.default)
def _householder_product(ctx, node, a, tau):
    pa, ptau = enter(ctx, a, 0.0), enter(ctx, tau, 0.0)
    *_, m, n = pa.sym_shape
    if isinstance(m, int) and isinstance(n, int) and m < n:
        raise LoweringError(f"householder_product at the bound: {m} rows < {n} columns (LAPACK's orgqr needs m >= n)")
    return leave(ctx, orgqr(ctx, pa, ptau), ctx.out_shape(node))


@lowers(aten.ormqr.default)
def _ormqr(ctx, node, a, tau, c, left=True, transpose=False):
    """``op(Q) C`` or ``C op(Q)`` with ``Q`` from ``a``'s reflectors: LAPACK's ``ormqr``."""
    pa, ptau, pc = enter(ctx, a, 0.0), enter(ctx, tau, 0.0), enter(ctx, c, 0.0)
    (out,) = custom_call(
        ctx, "ormqr", [pa, ptau, pc], [(pc.sym_shape, pc.dtype, True)], {"left": bool(left), "transpose": bool(transpose)}
    )
    return leave(ctx, out, ctx.out_shape(node))
