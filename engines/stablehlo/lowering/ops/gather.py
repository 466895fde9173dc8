"""``gather_along``: the one gather the lowerings share (index, reduce's scan,
pooling, convolution, control flow), in a module of its own so they import it
without importing each other."""

from __future__ import annotations


def _ints(v):
    return "[" + ", ".join(str(int(i)) for i in v) + "]"


def gather_along(ctx, x, dim, idx, out_shape=None):
    """out = x.shape[:d] + idx.shape + x.shape[d+1:], out[..., i..., ...] = x[..., idx[i...], ...]."""
    r, q = x.rank, idx.rank
    d = dim % r
    if out_shape is None:
        out_shape = x.sym_shape[:d] + idx.sym_shape + x.sym_shape[d + 1 :]
    idx = ctx.convert(idx, "i64") if idx.dtype not in ("i32", "i64") else idx
    offset_dims = list(range(d)) + list(range(d + q, r + q - 1))
    dn = (
        f"#stablehlo.gather<offset_dims = {_ints(offset_dims)}, collapsed_slice_dims = [{d}], "
        f"start_index_map = [{d}], index_vector_dim = {q}>"
    )
    sizes = [1 if i == d else s for i, s in enumerate(x.sym_shape)]
    return emit_gather(ctx, x, idx, dn, sizes, out_shape)


def emit_gather(ctx, x, idx, dn, slice_sizes, out_shape):
    """``stablehlo.gather`` with dimension numbers ``dn``, or ``dynamic_gather`` where
    a slice size is dynamic (its sizes then come from a shape tensor)."""
    if all(isinstance(s, int) for s in slice_sizes):
        return ctx.op(
            "stablehlo.gather",
            [x, idx],
            (out_shape, x.dtype),
            attrs={
                "dimension_numbers": dn,
                "slice_sizes": "array<i64: " + ", ".join(map(str, slice_sizes)) + ">",
                "indices_are_sorted": "false",
            },
        )
    return ctx.op(
        "stablehlo.dynamic_gather",
        [x, idx, ctx.shape_tensor(slice_sizes)],
        (out_shape, x.dtype),
        attrs={"dimension_numbers": dn, "indices_are_sorted": "false"},
    )
