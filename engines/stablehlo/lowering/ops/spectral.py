"""Singular values and symmetric eigenvalues: ``_linalg_svd`` (LAPACK's ``gesdd``,
torch's CPU driver), ``_linalg_eigh`` (``syevd``) and ``linalg_pinv`` on them.

Padded to the bound (:mod:`.lapack`), each matrix is ``blockdiag(A, d*I)`` with a
``d`` that sorts after A's own values, so the live values and vectors come
first and are sliced back: ``d = 0`` for singular values (sorted descending,
never negative), and for eigenvalues (ascending) ``1 + sum|A|``, above A's
spectral radius. A full SVD of a non-square matrix at its bound is refused: the
padded matrix's extra singular vectors are not the live matrix's.
"""

from __future__ import annotations

import numpy as np
import torch

from engines import sizes

from ..builder import LoweringError
from ..registry import lowers
from ..symbolic import as_dim
from .lapack import bound_shape, char, custom_call, enter, leave, live_mask
from .matrix import eye, matmul, mT

aten = torch.ops.aten


def _k(m, n):
    return as_dim(sizes.smin(sizes.as_expr(m), sizes.as_expr(n)))


def gesdd(ctx, a, full: bool, uv: bool):
    """(U, S, Vh) of ``a`` (U, Vh None without ``uv``)."""
    *batch, m, n = a.sym_shape
    batch, k = tuple(batch), _k(m, n)
    u_cols, vt_rows = (m, n) if full else (k, k)
    mode = "A" if full else "S"
    if not uv:
        mode, u_cols, vt_rows = "N", m, n  # jax's shapes for the unused factors
    outs = custom_call(
        ctx,
        "gesdd",
        [a],
        [
            (a.sym_shape, a.dtype, True),
            (batch + (k,), a.dtype, False),
            (batch + (m, u_cols), a.dtype, True),
            (batch + (vt_rows, n), a.dtype, True),
            (batch, "i32", False),
        ],
        {"mode": char(mode)},
    )
    _, s, u, vt, _ = outs
    return (u if uv else None), s, (vt if uv else None)


def svd(ctx, a, full=False, uv=True):
    """:func:`gesdd` of ``a`` entered at its bound (zeros in the padding)."""
    *_, m, n = a.sym_shape
    if full and uv and bound_shape(ctx, a.sym_shape) is not None and not ctx.same_shape((m,), (n,)):
        raise LoweringError(
            "full_matrices SVD of a non-square matrix with dynamic dims in a bounded lowering: the padded "
            "matrix's extra singular vectors are not the live matrix's"
        )
    return gesdd(ctx, enter(ctx, a, 0.0), full, uv)


@lowers(aten._linalg_svd.default)
def _linalg_svd(ctx, node, a, full_matrices=False, compute_uv=True, *, driver=None):
    if 0 in a.sym_shape[-2:]:  # no singular value: U and Vh are identities (torch's), if they have room
        outs = []
        for i in range(3):
            shape, dt = ctx.out_spec(node, i)
            empty = 0 in shape or i == 1 or not compute_uv
            outs.append(ctx.constant(0, dt, shape) if empty else eye(ctx, shape, dt))
        return outs
    u, s, vt = svd(ctx, a, full_matrices, compute_uv)
    return [_out(ctx, node, i, v) for i, v in enumerate((u, s, vt))]


def _out(ctx, node, i, v):
    shape, dt = ctx.out_spec(node, i)
    if v is None or 0 in [d for d in shape if isinstance(d, int)]:
        return ctx.constant(0, dt, shape)  # torch's empty placeholder for a factor not computed
    return leave(ctx, v, shape)


def syevd(ctx, a, lower: bool, vectors: bool):
    """(eigenvalues ascending, eigenvectors) of symmetric ``a`` (its ``lower`` or upper triangle read)."""
    *batch, n, _ = a.sym_shape
    v, w, _ = custom_call(
        ctx,
        "syevd",
        [a],
        [(a.sym_shape, a.dtype, True), (tuple(batch) + (n,), a.dtype, False), (tuple(batch), "i32", False)],
        {"mode": char("V" if vectors else "N"), "uplo": char("L" if lower else "U")},
    )
    return w, v


def eigh(ctx, a, lower=True, vectors=True):
    """:func:`syevd` of ``a`` entered at its bound, the padding's eigenvalue above A's."""
    if bound_shape(ctx, a.sym_shape) is None:
        return syevd(ctx, a, lower, vectors)
    big = ctx.binary(
        "stablehlo.add", ctx.reduce(ctx.unary("stablehlo.abs", a), list(range(a.rank)), "add"), ctx.constant(1, a.dtype)
    )
    return syevd(ctx, enter(ctx, a, big), lower, vectors)


@lowers(aten._linalg_eigh.default)
def _linalg_eigh(ctx, node, a, UPLO="L", compute_v=True):
    w, v = eigh(ctx, a, UPLO == "L", compute_v)
    return [_out(ctx, node, 0, w), _out(ctx, node, 1, v if compute_v else None)]


@lowers(aten.linalg_pinv.atol_rtol_tensor)
def _pinv(ctx, node, a, *, atol=None, rtol=None, hermitian=False):
    """torch's ``linalg_pinv``: reciprocal of the singular values (eigenvalues' magnitudes,
    ``hermitian``) above ``max(atol, rtol * largest)``, the rest 0."""
    dt = a.dtype
    *batch, m, n = a.sym_shape
    batch = tuple(batch)
    if hermitian:
        w, u = eigh(ctx, a)
        live = live_mask(ctx, batch + (n,), tuple(w.sym_shape)) if bound_shape(ctx, a.sym_shape) else None
        if live is not None:  # the padding's eigenvalue (above A's) is no singular value of A
            w = ctx.select(live, w, ctx.constant(0, dt, w.sym_shape))
        s = ctx.unary("stablehlo.abs", w)
    else:
        u, s, vt = svd(ctx, a)
    r = s.rank - 1
    largest = ctx.reduce(s, [r], "max", keepdim=True)
    tol = _tolerance(ctx, atol, rtol, m, n, dt, batch)
    tol = ctx.binary(
        "stablehlo.maximum",
        ctx.broadcast_to(tol[0], s.sym_shape),
        ctx.binary("stablehlo.multiply", ctx.broadcast_to(tol[1], s.sym_shape), ctx.broadcast_to(largest, s.sym_shape)),
    )
    keep = ctx.compare(s, tol, "GT")
    inv = ctx.select(
        keep,
        ctx.binary("stablehlo.divide", ctx.constant(1, dt, s.sym_shape), w if hermitian else s),
        ctx.constant(0, dt, s.sym_shape),
    )
    # (V * s^-1) @ U^T: scale V's columns
    left = u if hermitian else mT(ctx, vt)
    scaled = ctx.binary("stablehlo.multiply", left, ctx.broadcast_to(inv, left.sym_shape, list(range(r)) + [r + 1]))
    return leave(ctx, matmul(ctx, scaled, mT(ctx, u)), ctx.out_shape(node))


def _tolerance(ctx, atol, rtol, m, n, dt, batch):
    """(atol, rtol) as torch's ``get_atol_rtol``: absent atol 0, absent rtol
    ``eps * max(m, n)`` (0 where an atol > 0 is given); each keeps its batch dims, last dim 1."""
    eps = float(np.finfo(np.float32 if dt == "f32" else np.float64).eps)

    def col(v):  # padded like the values it bounds
        v = ctx.convert(v, dt)
        return enter(ctx, ctx.reshape(v, tuple(v.sym_shape) + (1,)), 0.0)

    a = col(atol) if atol is not None else ctx.constant(0, dt, (1,))
    if rtol is not None:
        return a, col(rtol)
    big = as_dim(sizes.smax(sizes.as_expr(m), sizes.as_expr(n)))
    size = ctx.constant(big, dt) if isinstance(big, int) else ctx.convert(ctx.dim(big), dt)
    default = ctx.reshape(ctx.binary("stablehlo.multiply", size, ctx.constant(eps, dt)), (1,))
    if atol is None:
        return a, default
    default = ctx.broadcast_to(default, a.sym_shape)
    return a, ctx.select(ctx.compare(a, ctx.constant(0, dt, a.sym_shape), "GT"), ctx.constant(0, dt, a.sym_shape), default)
