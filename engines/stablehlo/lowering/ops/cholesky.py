"""Cholesky and triangular solves: ``cholesky``, ``linalg_cholesky_ex``,
``cholesky_solve``, ``cholesky_inverse``, ``linalg_solve_triangular``,
``triangular_solve``.

The factorization is LAPACK's ``potrf`` (torch's CPU kernel), static at the bound
on ``blockdiag(A, I)`` in a bounded lowering (:mod:`.lapack`); the solves are
XLA's ``triangular_solve`` on the padded triangle and a right-hand side padded
with zeros, whose solution is zero in the padding.
"""

from __future__ import annotations

import torch

from ..registry import lowers
from .lapack import char, custom_call, enter, leave
from .matrix import broadcast_batch, eye, tri_solve, triangle

aten = torch.ops.aten


def potrf(ctx, a, upper=False):
    """(the triangle of ``A = L L^T`` or ``U^T U``, LAPACK's info) of a static or `?` ``a``."""
    batch = tuple(a.sym_shape[:-2])
    f, info = custom_call(
        ctx, "potrf", [a], [(a.sym_shape, a.dtype, True), (batch, "i32", False)], {"uplo": char("U" if upper else "L")}
    )
    return triangle(ctx, f, not upper), info


@lowers(aten.linalg_cholesky_ex.default)
def _cholesky_ex(ctx, node, a, *, upper=False, check_errors=False):
    f, info = potrf(ctx, enter(ctx, a), upper)
    return [leave(ctx, f, ctx.out_shape(node, 0)), leave(ctx, info, ctx.out_shape(node, 1))]


@lowers(aten.cholesky.default)
def _cholesky(ctx, node, a, upper=False):
    f, _ = potrf(ctx, enter(ctx, a), upper)
    return leave(ctx, f, ctx.out_shape(node))


def _cho_solve(ctx, f, b, upper):
    """``A x = b`` from A's Cholesky triangle ``f`` (batch dims equal)."""
    if upper:  # A = U^T U
        y = tri_solve(ctx, f, b, lower=False, trans=True)
        return tri_solve(ctx, f, y, lower=False)
    y = tri_solve(ctx, f, b, lower=True)
    return tri_solve(ctx, f, y, lower=True, trans=True)


@lowers(aten.cholesky_solve.default)
def _cholesky_solve(ctx, node, b, f, upper=False):
    shape = ctx.out_shape(node)
    batch = tuple(shape[:-2])
    f = enter(ctx, broadcast_batch(ctx, f, batch))
    x = _cho_solve(ctx, f, enter(ctx, broadcast_batch(ctx, b, batch), 0.0), upper)
    return leave(ctx, x, shape)


@lowers(aten.cholesky_inverse.default)
def _cholesky_inverse(ctx, node, f, upper=False):
    pf = enter(ctx, f)
    x = _cho_solve(ctx, pf, eye(ctx, pf.sym_shape, pf.dtype), upper)
    return leave(ctx, x, ctx.out_shape(node))


@lowers(aten.linalg_solve_triangular.default)
def _solve_triangular(ctx, node, a, b, *, upper, left=True, unitriangular=False):
    shape = ctx.out_shape(node)
    batch = tuple(shape[:-2])
    pa = enter(ctx, broadcast_batch(ctx, a, batch))
    x = tri_solve(ctx, pa, enter(ctx, broadcast_batch(ctx, b, batch), 0.0), lower=not upper, left=left, unit=unitriangular)
    return leave(ctx, x, shape)


@lowers(aten.triangular_solve.default)
def _triangular_solve(ctx, node, b, a, upper=True, transpose=False, unitriangular=False):
    """(the solution of ``op(A) x = b``, ``A`` broadcast to the batch): torch reads
    only A's triangle, as XLA does."""
    shape = ctx.out_shape(node, 0)
    batch = tuple(shape[:-2])
    a = broadcast_batch(ctx, a, batch)
    pa = enter(ctx, a)
    x = tri_solve(ctx, pa, enter(ctx, broadcast_batch(ctx, b, batch), 0.0), lower=not upper, unit=unitriangular, trans=transpose)
    return [leave(ctx, x, shape), leave(ctx, a, ctx.out_shape(node, 1))]
