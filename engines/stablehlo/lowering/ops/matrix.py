"""Matrix helpers of the linalg families, on ``[..., m, n]`` values with static,
padded or `?` dims: batched products, triangles, diagonals, triangular solves
(XLA's own ``triangular_solve``), permutations from LAPACK's pivots."""

from __future__ import annotations

from ..builder import Value
from .linalg import dot


def mT(ctx, x: Value) -> Value:
    """The last two dims swapped."""
    r = x.rank
    return ctx.transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def matmul(ctx, a: Value, b: Value) -> Value:
    """``a @ b`` over equal batch dims."""
    r = a.rank
    batch = tuple(range(r - 2))
    return dot(ctx, a, b, a.dtype, batch, batch, (r - 1,), (r - 2,))


def broadcast_batch(ctx, x: Value, batch: tuple) -> Value:
    """``x`` with the batch dims ``batch`` before its own last two (torch's broadcasting)."""
    core = x.sym_shape[-2:]
    if ctx.same_shape(x.sym_shape[:-2], batch):
        return x
    shape = tuple(batch) + tuple(core)
    return ctx.broadcast_to(x, shape, list(range(len(shape) - x.rank, len(shape))))


def tri_mask(ctx, shape: tuple, lower: bool, k: int = 0) -> Value:
    """``i1`` of ``shape``: true on and below (``lower``) or on and above the ``k``-th diagonal."""
    r = len(shape)
    row = ctx.iota(shape, r - 2, "i32")
    col = ctx.iota(shape, r - 1, "i32")
    if k:
        col = ctx.binary("stablehlo.subtract", col, ctx.constant(k, "i32", shape))
    return ctx.compare(col, row, "LE" if lower else "GE")


def triangle(ctx, x: Value, lower: bool, k: int = 0) -> Value:
    """``tril(x, k)`` or ``triu(x, k)``."""
    return ctx.select(tri_mask(ctx, x.sym_shape, lower, k), x, ctx.constant(0, x.dtype, x.sym_shape))


def diagonal(ctx, x: Value) -> Value:
    """The main diagonal of each ``[..., n, n]`` matrix: ``[..., n]``."""
    r = x.rank
    on = ctx.compare(ctx.iota(x.sym_shape, r - 2, "i32"), ctx.iota(x.sym_shape, r - 1, "i32"), "EQ")
    return ctx.reduce(ctx.select(on, x, ctx.constant(0, x.dtype, x.sym_shape)), [r - 1], "add")


def eye(ctx, shape: tuple, dtype: str) -> Value:
    r = len(shape)
    on = ctx.compare(ctx.iota(shape, r - 2, "i32"), ctx.iota(shape, r - 1, "i32"), "EQ")
    return ctx.convert(on, dtype)


def tri_solve(ctx, a: Value, b: Value, *, lower: bool, left: bool = True, unit: bool = False, trans: bool = False) -> Value:
    """``op(a) x = b`` (``left``) or ``x op(a) = b``, ``a`` triangular, ``op`` a transpose
    when ``trans``: XLA's ``triangular_solve`` (batch dims equal)."""
    t = "TRANSPOSE" if trans else "NO_TRANSPOSE"
    return ctx.op(
        "stablehlo.triangular_solve",
        [a, b],
        (b.sym_shape, b.dtype),
        attrs={
            "left_side": str(left).lower(),
            "lower": str(lower).lower(),
            "unit_diagonal": str(unit).lower(),
            "transpose_a": f"#stablehlo<transpose {t}>",
        },
    )


def one_hot_rows(ctx, perm: Value, n, dtype: str) -> Value:
    """``[..., k, n]``: row ``j`` is the unit vector ``e_perm[j]`` (``P @ b`` gathers ``b``'s rows)."""
    shape = tuple(perm.sym_shape) + (n,)
    idx = ctx.iota(shape, len(shape) - 1, "i32")
    p = ctx.broadcast_to(perm, shape, list(range(perm.rank)))
    return ctx.convert(ctx.compare(idx, p, "EQ"), dtype)


def pivots_to_permutation(ctx, piv: Value, m) -> Value:
    """LAPACK's 1-based row interchanges ``piv`` ``[..., k]`` (row ``i`` swapped with
    ``piv[i] - 1``, in order) as the permutation ``[..., m]``: entry ``j`` is the row
    of the input that ends in row ``j``. A ``while`` over ``i``, each swap a select
    on one-hot masks, so batch dims need no gather."""
    batch = tuple(piv.sym_shape[:-1])
    k = piv.sym_shape[-1]
    shape = batch + (m,)
    r = len(shape)
    perm0 = ctx.iota(shape, r - 1, "i32")
    kmax = ctx.dim(k) if not isinstance(k, int) else ctx.constant(k, "i32")
    zero = ctx.constant(0, "i32")

    def cond(c, i, perm):
        return c.compare(i, kmax, "LT")

    def body(c, i, perm):
        ks = piv.sym_shape
        at_i = c.compare(c.iota(ks, r - 1, "i32"), c.broadcast_to(i, ks, []), "EQ")
        j = c.binary(
            "stablehlo.subtract",
            c.reduce(c.select(at_i, piv, c.constant(0, "i32", ks)), [r - 1], "add"),
            c.constant(1, "i32", batch),
        )
        col = c.iota(shape, r - 1, "i32")
        is_i = c.compare(col, c.broadcast_to(i, shape, []), "EQ")
        is_j = c.compare(col, c.broadcast_to(j, shape, list(range(len(batch)))), "EQ")
        zeros = c.constant(0, "i32", shape)
        pi = c.broadcast_to(c.reduce(c.select(is_i, perm, zeros), [r - 1], "add"), shape, list(range(len(batch))))
        pj = c.broadcast_to(c.reduce(c.select(is_j, perm, zeros), [r - 1], "add"), shape, list(range(len(batch))))
        nxt = c.select(is_i, pj, c.select(is_j, pi, perm))
        return [c.binary("stablehlo.add", i, c.constant(1, "i32")), nxt]

    _, perm = ctx.while_loop([zero, perm0], cond, body)
    return perm
