"""Convolution (conv1d/2d/3d and transposed, groups, stride, padding, dilation).

Padding is static in aten.convolution, so ``stablehlo.convolution`` with `?`
batch/spatial dims suffices (``dynamic_conv`` is only needed for dynamic
padding). A transposed convolution is the gradient form: the input dilated by
the stride (``lhs_dilation``), padded by ``dilation*(k-1) - padding`` (plus
``output_padding`` high), and the kernel flipped with in/out features swapped
(per group).

A convolution over a dynamic spatial size stays ``stablehlo.convolution``: the
bounded and bucketed executors run it static at the bound on a masked operand
(``execution/padder_window.py``), since XLA's dynamic padder refuses it.
"""

from __future__ import annotations

import torch

from ..registry import lowers

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
