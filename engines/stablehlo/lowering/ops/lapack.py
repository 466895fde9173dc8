"""What the linalg families share: jaxlib's LAPACK kernels as custom calls, and
matrices padded to their bounds around them.

A factorization is one ``stablehlo.custom_call @lapack_<s|d><name>_ffi``, jaxlib's
typed-FFI kernel in the form jax itself lowers ``jnp.linalg`` to on CPU
(``jax/_src/lax/linalg.py``): column-major matrix layouts, the kernel's options in
a ``mhlo.backend_config`` dictionary. With `?` dims the call also takes each
result's shape as an operand (``indices_of_shape_operands``), which shape
refinement folds away per call. The executor must have run
``jaxlib.lapack._lapack.initialize()`` (:func:`engines.stablehlo.execution.xla.cpu`).

XLA's dynamic padder refuses a custom call with a dynamic dim, so a bounded
lowering runs the kernels static at the bound (:func:`enter`): the live matrix
sits in the top-left corner of ``blockdiag(A, d*I)``, whose factorizations hold
A's (Cholesky, LU, inverse, determinant: ``d = 1``; eigen- and singular values: a
``d`` that sorts after A's own), and :func:`leave` slices the live part back.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..builder import LoweringError, Value
from ..symbolic import as_dim

PREFIX = {"f32": "s", "f64": "d"}


def target(base: str, dtype: str) -> str:
    """The kernel's name, ``getrf`` for f32: ``lapack_sgetrf_ffi``."""
    if dtype not in PREFIX:
        raise LoweringError(f"LAPACK kernels take f32 or f64, not {dtype}")
    return f"lapack_{PREFIX[dtype]}{base}_ffi"


def _layout(rank: int, matrix: bool) -> str:
    # jax's ``_column_major_matrix_layout``: each matrix column-major, batch dims outermost
    dims = (rank - 2, rank - 1, *range(rank - 3, -1, -1)) if matrix and rank >= 2 else tuple(range(rank - 1, -1, -1))
    return f"dense<{list(dims) if dims else ''}> : tensor<{len(dims)}xindex>"


def custom_call(
    ctx, base: str, operands: Sequence[Value], results: Sequence[tuple], config: dict[str, int | bool] | None = None
) -> list[Value]:
    """``@lapack_<base>_ffi`` on ``operands``; ``results`` are (sym_shape, dtype, is_matrix).

    Operands of rank >= 2 are matrices (column-major), and so are results marked so."""
    specs = [(tuple(as_dim(d) for d in shape), dt) for shape, dt, _ in results]
    ops = list(operands)
    layouts = [_layout(o.rank, o.rank >= 2) for o in operands]
    attrs = {"call_target_name": f'"{target(base, operands[0].dtype)}"'}
    if any(not isinstance(d, int) for o in operands for d in o.sym_shape):
        # `?` dims: each result's shape as an operand, folded away by shape refinement
        first = len(ops)
        for shape, _ in specs:
            ops.append(ctx.shape_tensor(shape) if shape else _empty_shape(ctx))
            layouts.append(_layout(1, False))
        idx = list(range(first, len(ops)))
        attrs["indices_of_shape_operands"] = f"dense<{idx}> : tensor<{len(idx)}xi64>"
    cfg = ", ".join(f"{k} = {_config_value(v)}" for k, v in (config or {}).items())
    attrs["mhlo.backend_config"] = "{" + cfg + "}"
    attrs["operand_layouts"] = "[" + ", ".join(layouts) + "]"
    attrs["result_layouts"] = "[" + ", ".join(_layout(len(s), m) for (s, _), (_, _, m) in zip(specs, results, strict=True)) + "]"
    return ctx.op("stablehlo.custom_call", ops, list(specs), attrs=attrs)


def _config_value(v: int | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{int(v)} : ui8"


def _empty_shape(ctx) -> Value:
    return ctx.op("stablehlo.constant", [], ((0,), "i32"), attrs={"value": "dense<> : tensor<0xi32>"})


def char(c: str) -> int:
    """A LAPACK option letter as the kernels' ``ui8`` attribute (``'L'`` -> 76)."""
    return ord(c)


# ------------------------------------------------------------------ padding
def bound_shape(ctx, sym_shape: Sequence) -> tuple[int, ...] | None:
    """``sym_shape`` at its bounds, when the lowering is bounded and some dim is
    dynamic with a bound; None: the value stays as it is (static, or `?`)."""
    if not ctx.bounded or all(isinstance(as_dim(d), int) for d in sym_shape):
        return None
    out = []
    for d in sym_shape:
        d = as_dim(d)
        b = d if isinstance(d, int) else ctx.bound_of(d)
        if b is None:
            return None  # an unbounded dim: the `?` form, which the bounded executor then refuses by name
        out.append(int(b))
    return tuple(out)


def live_mask(ctx, sym_shape: Sequence, full: Sequence[int], dims: Sequence[int] | None = None) -> Value | None:
    """``i1`` of shape ``full``: true where every index of ``dims`` (default all)
    is below its live size in ``sym_shape``; None when no such dim is dynamic."""
    dims = range(len(full)) if dims is None else dims
    mask = None
    for d in dims:
        size = as_dim(sym_shape[d])
        if isinstance(size, int) and size == full[d]:
            continue
        idx = ctx.iota(tuple(full), d, "i32")
        n = ctx.constant(size, "i32", tuple(full)) if isinstance(size, int) else ctx.broadcast_to(ctx.dim(size), tuple(full))
        m = ctx.compare(idx, n, "LT")
        mask = m if mask is None else ctx.binary("stablehlo.and", mask, m)
    return mask


def eye_like(ctx, full: Sequence[int], dtype: str, diag) -> Value:
    """``diag`` on the diagonal of the last two dims of ``full``, 0 elsewhere."""
    r = len(full)
    on = ctx.compare(ctx.iota(tuple(full), r - 2, "i32"), ctx.iota(tuple(full), r - 1, "i32"), "EQ")
    d = diag if isinstance(diag, Value) else ctx.constant(diag, dtype)
    return ctx.select(
        on, ctx.broadcast_to(d, tuple(full), [] if d.rank == 0 else list(range(d.rank))), ctx.constant(0, dtype, tuple(full))
    )


def enter(ctx, x: Value, diag=1.0) -> Value:
    """``x`` static at its bound, its padding ``diag`` on the diagonal of the last two
    dims and 0 elsewhere (``blockdiag(A, diag*I)`` per matrix, and ``diag*I`` for
    each padded batch entry); ``x`` itself where :func:`bound_shape` is None.
    ``diag`` is a number or a scalar Value; a rank-1 ``x`` is padded with 0."""
    full = bound_shape(ctx, x.sym_shape)
    if full is None:
        return x
    high = [as_dim(f - as_dim(d)) for f, d in zip(full, x.sym_shape, strict=True)]
    zero = ctx.constant(0, x.dtype)
    padded = ctx.op(
        "stablehlo.dynamic_pad",
        [x, zero, ctx.shape_tensor([0] * x.rank), ctx.shape_tensor(high), ctx.shape_tensor([0] * x.rank)],
        (full, x.dtype),
    )
    if x.rank < 2 or (not isinstance(diag, Value) and diag == 0):
        return padded
    live = live_mask(ctx, x.sym_shape, full)
    return ctx.select(live, padded, eye_like(ctx, full, x.dtype, diag)) if live is not None else padded


def leave(ctx, v: Value, sym_shape: Sequence) -> Value:
    """The live corner ``sym_shape`` of a value :func:`enter` made static (``v`` itself when it has that shape)."""
    sym_shape = tuple(as_dim(d) for d in sym_shape)
    if 0 in sym_shape:  # nothing live (a 0 batch): no slice of the padded kernel's result
        return ctx.constant(0, v.dtype, sym_shape)
    if ctx.same_shape(v.sym_shape, sym_shape):
        return v
    return ctx.slice(v, [0] * v.rank, list(sym_shape), [1] * v.rank, out_shape=sym_shape)
