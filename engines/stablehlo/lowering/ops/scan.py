"""Inclusive prefix sums along a dim: ``reduce_window`` where the dim is
static, an unrolled Hillis-Steele scan of gathers where it is dynamic (what
XLA's dynamic padder can serve)."""

from __future__ import annotations

from .. import types as T
from ..symbolic import as_dim
from .gather import gather_along


def cumsum_along(ctx, x, dim):
    """Inclusive prefix sum of ``x`` along ``dim`` (in ``x``'s dtype)."""
    out_dt = x.dtype
    n = x.sym_shape[dim]
    if isinstance(n, int):
        win = ["1"] * x.rank
        win[dim] = str(n)
        pad = ", ".join(f"[{n - 1}, 0]" if i == dim else "[0, 0]" for i in range(x.rank))
        init = ctx.constant(0, out_dt)
        return ctx.op(
            "stablehlo.reduce_window",
            [x, init],
            (x.sym_shape, out_dt),
            attrs={
                "window_dimensions": "array<i64: " + ", ".join(win) + ">",
                "padding": f"dense<[{pad}]> : tensor<{x.rank}x2xi64>",
            },
            regions=[ctx.scalar_region(out_dt, "stablehlo.add")],
        )
    return scan_add(ctx, x, dim)


#: steps of the unrolled scan over a dim with no bound: sizes are i32, so n < 2**31
MAX_SCAN_STEPS = 31


def scan_add(ctx, x, dim):
    """Inclusive prefix sum along a dynamic ``dim`` (Hillis-Steele): ``y +=
    shift(y, s)`` for s = 1, 2, 4, ... The shift gathers row ``max(i - s + 1,
    0)`` of ``y`` with a zero row prepended (so the gather's operand is never
    empty, even for n = 0, and a step with ``s >= n`` adds zeros).

    The steps are unrolled, no ``while``: ceil(log2 bound) of them where the dim
    has a bound, else :data:`MAX_SCAN_STEPS`. A loop carrying a dynamic dim is
    what XLA's dynamic padder cannot serve; straight-line gathers it can, so the
    bounded and bucketed executors compile the scan once (each step O(n))."""
    n = x.sym_shape[dim]
    bound = ctx.bound_of(n) if ctx.bounded else None
    steps = MAX_SCAN_STEPS if bound is None else max(bound - 1, 0).bit_length()
    i32 = T.SHAPE_DTYPE
    pos = ctx.iota((n,), 0, i32)
    zero_row = ctx.constant(0, x.dtype, tuple(1 if i == dim else d for i, d in enumerate(x.sym_shape)))
    padded = tuple(as_dim(d + 1) if i == dim else d for i, d in enumerate(x.sym_shape))
    zero = ctx.constant(0, i32, (n,))
    y = x
    for k in range(steps):
        ypad = ctx.op("stablehlo.concatenate", [zero_row, y], (padded, x.dtype), attrs={"dimension": f"{dim} : i64"})
        idx = ctx.binary("stablehlo.maximum", ctx.binary("stablehlo.add", pos, ctx.constant(1 - 2**k, i32, (n,))), zero)
        y = ctx.binary("stablehlo.add", y, gather_along(ctx, ypad, dim, idx, x.sym_shape))
    return y
