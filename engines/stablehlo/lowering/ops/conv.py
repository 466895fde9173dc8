"""Convolution (conv1d/2d/3d and transposed, groups, stride, padding, dilation).

Padding is static in aten.convolution, so ``stablehlo.convolution`` with `?`
batch/spatial dims suffices (``dynamic_conv`` is only needed for dynamic
padding). A transposed convolution is the gradient form: the input dilated by
the stride (``lhs_dilation``), padded by ``dilation*(k-1) - padding`` (plus
``output_padding`` high), and the kernel flipped with in/out features swapped
(per group).

A (non-transposed, ungrouped) convolution whose spatial size is dynamic is a sum
over the kernel taps of ``dot_general(x gathered at the tap's positions, w[:, :, tap])``
(:func:`tap_sum_conv`): XLA's dynamic padder cannot serve a convolution over a
dynamic spatial dim ("Dynamic Spatial Convolution is not supported"), but it
serves gathers and dots, so the bounded and bucketed executors compile it once.
With a dynamic batch as well, XLA's passes slice the dots' dynamic outputs, which
the padder refuses just the same: such a convolution stays ``stablehlo.convolution``.
"""

from __future__ import annotations

import itertools

import torch

from .. import types as T
from ..registry import lowers
from ..symbolic import as_dim
from .linalg import dot

aten = torch.ops.aten


def _per_dim(v, nsp):
    v = [int(a) for a in v]
    return v * (nsp // len(v)) if len(v) != nsp else v


def _arr(v):
    return "array<i64: " + ", ".join(str(int(a)) for a in v) + ">"


def _transposed_kernel(ctx, w, groups, nsp):
    """torch's (Cin, Cout/g, k...) transposed weight -> a flipped (Cout, Cin/g, k...) one."""
    cin, cout_g = w.sym_shape[0], w.sym_shape[1]
    k = tuple(w.sym_shape[2:])
    g = int(groups)
    w = ctx.reshape(w, (g, cin // g, cout_g) + k)
    w = ctx.transpose(w, [0, 2, 1] + list(range(3, 3 + nsp)))
    w = ctx.reshape(w, (g * cout_g, cin // g) + k)
    return ctx.op("stablehlo.reverse", [w], (w.sym_shape, w.dtype), attrs={"dimensions": _arr(range(2, 2 + nsp))})


@lowers(aten.convolution.default)
def _convolution(ctx, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    shape, dt = ctx.out_spec(node)
    nsp = x.rank - 2
    sp = ", ".join(str(i) for i in range(nsp))
    dn = f"#stablehlo.conv<[b, f, {sp}]x[o, i, {sp}]->[b, f, {sp}]>"
    stride, dilation, padding = (_per_dim(v, nsp) for v in (stride, dilation, padding))
    x, w = ctx.convert(x, dt), ctx.convert(w, dt)
    if transposed:
        if any(not isinstance(d, int) for d in w.sym_shape):
            raise NotImplementedError("transposed convolution with a dynamic weight shape")
        out_pad = _per_dim(output_padding, nsp)
        k = [int(d) for d in w.sym_shape[2:]]
        pads = [(dl * (kk - 1) - p, dl * (kk - 1) - p + op) for kk, dl, p, op in zip(k, dilation, padding, out_pad, strict=False)]
        w = _transposed_kernel(ctx, w, groups, nsp)
        lhs_dil, strides = stride, [1] * nsp
    else:
        pads = [(p, p) for p in padding]
        lhs_dil, strides = [1] * nsp, stride
        if (
            int(groups) == 1
            and any(not isinstance(d, int) for d in x.sym_shape[2:])
            and all(isinstance(d, int) for d in list(w.sym_shape) + list(x.sym_shape[:2]))
        ):
            y = tap_sum_conv(ctx, x, w, shape, dt, strides, padding, dilation)
            if bias is not None:
                y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, dt), shape, dims=[1]))
            return y
    pad = ", ".join(f"[{lo}, {hi}]" for lo, hi in pads)
    y = ctx.op(
        "stablehlo.convolution",
        [x, w],
        (shape, dt),
        attrs={
            "dimension_numbers": dn,
            "window_strides": _arr(strides),
            "padding": f"dense<[{pad}]> : tensor<{nsp}x2xi64>",
            "lhs_dilation": _arr(lhs_dil),
            "rhs_dilation": _arr(dilation),
            "feature_group_count": f"{int(groups)} : i64",
            "batch_group_count": "1 : i64",
        },
    )
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, dt), shape, dims=[1]))
    return y


def tap_sum_conv(ctx, x, w, shape, dt, strides, padding, dilation):
    """``sum over taps of dot(x at positions t*stride + j*dil - pad, w[:, :, j])``
    (contracting the input features), for a dynamic spatial size. Each tap's
    positions are a ``gather`` from ``x`` with a zero row prepended per spatial
    dim: positions in the zero padding read that row. No convolution, slice or
    pad of a dynamic dim, which XLA's dynamic padder cannot serve."""
    from .index import gather_along

    nsp = x.rank - 2
    i32 = T.SHAPE_DTYPE
    out_sp = tuple(shape[2:])
    for i in range(nsp):  # a zero row in front of every spatial dim
        d = 2 + i
        zero = ctx.constant(0, dt, tuple(1 if a == d else n for a, n in enumerate(x.sym_shape)))
        grown = tuple(as_dim(n + 1) if a == d else n for a, n in enumerate(x.sym_shape))
        x = ctx.op("stablehlo.concatenate", [zero, x], (grown, dt), attrs={"dimension": f"{d} : i64"})
    o, cin = w.sym_shape[0], w.sym_shape[1]
    y = None
    for tap in itertools.product(*(range(int(k)) for k in w.sym_shape[2:])):
        xt = x
        for i, j in enumerate(tap):
            n_out, size = out_sp[i], ctx.dim(as_dim(x.sym_shape[2 + i] - 1))
            # 1 + the input position of each output position along this dim; 0 (the zero row) outside
            pos = ctx.binary(
                "stablehlo.add",
                ctx.binary("stablehlo.multiply", ctx.iota((n_out,), 0, i32), ctx.constant(int(strides[i]), i32, (n_out,))),
                ctx.constant(j * int(dilation[i]) - int(padding[i]), i32, (n_out,)),
            )
            inside = ctx.binary(
                "stablehlo.and",
                ctx.compare(pos, ctx.constant(0, i32, (n_out,)), "GE"),
                ctx.compare(pos, ctx.broadcast_to(size, (n_out,)), "LT"),
            )
            idx = ctx.select(
                inside, ctx.binary("stablehlo.add", pos, ctx.constant(1, i32, (n_out,))), ctx.constant(0, i32, (n_out,))
            )
            xt = gather_along(ctx, xt, 2 + i, idx, tuple(n_out if a == 2 + i else n for a, n in enumerate(xt.sym_shape)))
        wt = ctx.reshape(ctx.slice(w, [0, 0] + list(tap), [o, cin] + [j + 1 for j in tap], [1] * w.rank), (o, cin))
        term = dot(ctx, xt, wt, dt, lhs_contract=(1,), rhs_contract=(1,))  # (B, out..., O)
        y = term if y is None else ctx.binary("stablehlo.add", y, term)
    return ctx.transpose(y, [0, nsp + 1] + list(range(1, nsp + 1)))
