"""LU and what is built on it: ``lu_factor``, ``lu``, ``lu_unpack``, ``lu_solve``,
``solve``, ``inv``, ``det``, ``slogdet``.

One ``getrf`` (LAPACK's partial-pivoting LU, as torch's CPU kernel) per
factorization, run static at the bound in a bounded lowering on
``blockdiag(A, I)`` (:mod:`.lapack`): its pivots in A's rows never leave them (the
padding's columns are zero there), so the padded LU holds A's, and a solve or
determinant computed on it holds A's too; the live parts are sliced at the end.
Solves are two XLA ``triangular_solve``s after the rows are permuted.
"""

from __future__ import annotations

import torch

from engines import sizes

from ..builder import LoweringError
from ..registry import lowers
from ..symbolic import as_dim
from .lapack import custom_call, enter, leave
from .matrix import broadcast_batch, diagonal, eye, matmul, mT, one_hot_rows, pivots_to_permutation, tri_solve, triangle

aten = torch.ops.aten


def getrf(ctx, a):
    """(LU, 1-based pivots ``i32``, info ``i32``) of ``[..., m, n]`` ``a``; info is
    LAPACK's (``i`` when ``U[i-1, i-1]`` is exactly zero)."""
    *batch, m, n = a.sym_shape
    k = as_dim(sizes.smin(sizes.as_expr(m), sizes.as_expr(n)))
    batch = tuple(batch)
    lu, piv, info = custom_call(
        ctx, "getrf", [a], [(a.sym_shape, a.dtype, True), (batch + (k,), "i32", False), (batch, "i32", False)]
    )
    return lu, piv, info


def factor(ctx, a, out_shape=None):
    """:func:`getrf` of ``a`` entered at its bound: (LU, pivots, info), padded or not
    (slice with :func:`.lapack.leave`); info counts A's own pivots only."""
    p = enter(ctx, a)
    lu, piv, info = getrf(ctx, p)
    if p is not a:
        # a wide A's padded rows meet zero pivots in A's columns: not A's singularity
        *_, m, n = a.sym_shape
        k = as_dim(sizes.smin(sizes.as_expr(m), sizes.as_expr(n)))
        kk = ctx.constant(k, "i32", info.sym_shape) if isinstance(k, int) else ctx.broadcast_to(ctx.dim(k), info.sym_shape)
        info = ctx.select(ctx.compare(info, kk, "LE"), info, ctx.constant(0, "i32", info.sym_shape))
    return lu, piv, info


def lu_solve(ctx, lu, piv, b, *, left=True, adjoint=False):
    """``A x = b`` (``left``) or ``x A = b`` (``adjoint``: ``A^T``) from A's ``P L U``
    (``lu``, ``piv`` from :func:`getrf`); ``b`` ``[..., n, k]`` with ``lu``'s batch dims."""
    n = lu.sym_shape[-1]
    perm = pivots_to_permutation(ctx, piv, n)
    p_t = one_hot_rows(ctx, perm, n, b.dtype)  # P^T: row j is e_perm[j]
    if left and not adjoint:  # L U x = P^T b
        y = tri_solve(ctx, lu, matmul(ctx, p_t, b), lower=True, unit=True)
        return tri_solve(ctx, lu, y, lower=False)
    if left:  # A^T x = b: U^T L^T P^T x = b, x = P L^-T U^-T b
        y = tri_solve(ctx, lu, b, lower=False, trans=True)
        y = tri_solve(ctx, lu, y, lower=True, unit=True, trans=True)
        return matmul(ctx, mT(ctx, p_t), y)
    if not adjoint:  # x P L U = b: x = b U^-1 L^-1 P^T
        y = tri_solve(ctx, lu, b, lower=False, left=False)
        y = tri_solve(ctx, lu, y, lower=True, unit=True, left=False)
        return matmul(ctx, y, p_t)
    # x A^T = b: x U^T L^T P^T = b, x = b P L^-T U^-T
    y = matmul(ctx, b, mT(ctx, p_t))
    y = tri_solve(ctx, lu, y, lower=True, unit=True, left=False, trans=True)
    return tri_solve(ctx, lu, y, lower=False, left=False, trans=True)


@lowers(aten.linalg_lu_factor_ex.default)
def _lu_factor_ex(ctx, node, a, *, pivot=True, check_errors=False):
    if not pivot:
        raise LoweringError("linalg_lu_factor_ex(pivot=False): LAPACK's getrf always pivots (torch's CPU kernel refuses it too)")
    lu, piv, info = factor(ctx, a)
    return [
        leave(ctx, lu, ctx.out_shape(node, 0)),
        leave(ctx, piv, ctx.out_shape(node, 1)),
        leave(ctx, info, ctx.out_shape(node, 2)),
    ]


def _unpack(ctx, lu, piv):
    """(P, L, U) of a (padded or live) LU: ``P`` ``[..., m, m]``, L unit lower ``[..., m, k]``, U ``[..., k, n]``."""
    *batch, mm, nn = lu.sym_shape
    k = as_dim(sizes.smin(sizes.as_expr(mm), sizes.as_expr(nn)))
    batch = tuple(batch)
    perm = pivots_to_permutation(ctx, piv, mm)
    p = mT(ctx, one_hot_rows(ctx, perm, mm, lu.dtype))
    low = ctx.binary("stablehlo.add", triangle(ctx, lu, True, -1), eye(ctx, lu.sym_shape, lu.dtype))
    up = triangle(ctx, lu, False)
    low = ctx.slice(low, [0] * lu.rank, list(batch) + [mm, k], [1] * lu.rank)
    up = ctx.slice(up, [0] * lu.rank, list(batch) + [k, nn], [1] * lu.rank)
    return p, low, up


@lowers(aten.linalg_lu.default)
def _linalg_lu(ctx, node, a, *, pivot=True):
    if not pivot:
        raise LoweringError("linalg_lu(pivot=False): LAPACK's getrf always pivots (torch's CPU kernel refuses it too)")
    lu, piv, _ = factor(ctx, a)
    outs = _unpack(ctx, lu, piv)
    return [leave(ctx, v, ctx.out_shape(node, i)) for i, v in enumerate(outs)]


@lowers(aten.lu_unpack.default)
def _lu_unpack(ctx, node, lu, piv, unpack_data=True, unpack_pivots=True):
    """P, L, U of a given LU: entered at the bound like a matrix to factor (the
    padding's pivots are its own rows), so P's live corner is the live P."""
    plu = enter(ctx, lu)
    p, low, up = _unpack(ctx, plu, _enter_pivots(ctx, piv, plu))
    outs = [p if unpack_pivots else None, low if unpack_data else None, up if unpack_data else None]
    res = []
    for i, v in enumerate(outs):
        shape, dt = ctx.out_spec(node, i)
        res.append(leave(ctx, v, shape) if v is not None else ctx.constant(0, dt, shape))
    return res


def _enter_pivots(ctx, piv, plu):
    """Pivots padded like :func:`.lapack.enter` pads their LU: ``i + 1`` (no swap) past the live ones."""
    from .lapack import bound_shape, live_mask

    full = bound_shape(ctx, piv.sym_shape)
    if full is None:
        return piv
    padded = enter(ctx, piv)
    own = ctx.binary("stablehlo.add", ctx.iota(full, len(full) - 1, "i32"), ctx.constant(1, "i32", full))
    live = live_mask(ctx, piv.sym_shape, full)
    return ctx.select(live, padded, own) if live is not None else padded


@lowers(aten.linalg_lu_solve.default)
def _linalg_lu_solve(ctx, node, lu, piv, b, *, left=True, adjoint=False):
    shape, _ = ctx.out_spec(node)
    batch = tuple(shape[:-2])
    lu = broadcast_batch(ctx, lu, batch)
    piv = ctx.broadcast_to(piv, batch + (piv.sym_shape[-1],), list(range(len(batch) + 1 - piv.rank, len(batch) + 1)))
    b = broadcast_batch(ctx, b, batch)
    plu = enter(ctx, lu)
    x = lu_solve(ctx, plu, _enter_pivots(ctx, piv, plu), enter(ctx, b, 0.0), left=left, adjoint=adjoint)
    return leave(ctx, x, shape)


@lowers(aten._linalg_solve_ex.default)
def _solve_ex(ctx, node, a, b, *, left=True, check_errors=False):
    """``A x = b`` (``b`` a vector batch when it has one dim less than ``A``)."""
    shape = ctx.out_shape(node, 0)
    vector = b.rank == a.rank - 1 or b.rank == 1
    batch = tuple(shape[:-1] if vector else shape[:-2])
    if vector:
        b = ctx.reshape(b, tuple(b.sym_shape) + (1,))
    a = broadcast_batch(ctx, a, batch)
    b = broadcast_batch(ctx, b, batch)
    lu, piv, info = factor(ctx, a)
    x = lu_solve(ctx, lu, piv, enter(ctx, b, 0.0), left=left)
    if vector:
        x = leave(ctx, x, tuple(shape) + (1,))
        x = ctx.reshape(x, shape)
    outs = [x, lu, piv, info]
    return [leave(ctx, v, ctx.out_shape(node, i)) for i, v in enumerate(outs)]


@lowers(aten.linalg_inv_ex.default)
def _inv_ex(ctx, node, a, *, check_errors=False):
    lu, piv, info = factor(ctx, a)
    x = lu_solve(ctx, lu, piv, eye(ctx, lu.sym_shape, lu.dtype))
    return [leave(ctx, x, ctx.out_shape(node, 0)), leave(ctx, info, ctx.out_shape(node, 1))]


def _det_parts(ctx, lu, piv):
    """(diag(U), whether the row interchanges are odd) per matrix."""
    d = diagonal(ctx, lu)
    r = piv.rank
    own = ctx.binary("stablehlo.add", ctx.iota(piv.sym_shape, r - 1, "i32"), ctx.constant(1, "i32", piv.sym_shape))
    swaps = ctx.reduce(ctx.convert(ctx.compare(piv, own, "NE"), "i32"), [r - 1], "add")
    odd = ctx.compare(
        ctx.binary("stablehlo.and", swaps, ctx.constant(1, "i32", swaps.sym_shape)), ctx.constant(1, "i32", swaps.sym_shape), "EQ"
    )
    return d, odd


@lowers(aten._linalg_det.default)
def _det(ctx, node, a):
    lu, piv, _ = factor(ctx, a)
    d, odd = _det_parts(ctx, lu, piv)
    det = ctx.reduce(d, [d.rank - 1], "mul")
    det = ctx.select(odd, ctx.unary("stablehlo.negate", det), det)
    return [leave(ctx, v, ctx.out_shape(node, i)) for i, v in enumerate([det, lu, piv])]


@lowers(aten._linalg_slogdet.default)
def _slogdet(ctx, node, a):
    lu, piv, _ = factor(ctx, a)
    d, odd = _det_parts(ctx, lu, piv)
    r = d.rank - 1
    sign = ctx.reduce(ctx.unary("stablehlo.sign", d), [r], "mul")
    sign = ctx.select(odd, ctx.unary("stablehlo.negate", sign), sign)
    logabs = ctx.reduce(ctx.unary("stablehlo.log", ctx.unary("stablehlo.abs", d)), [r], "add")
    return [leave(ctx, v, ctx.out_shape(node, i)) for i, v in enumerate([sign, logabs, lu, piv])]
