"""Convolution (conv1d/2d/3d, groups, stride, padding, dilation).

Padding is static in aten.convolution, so ``stablehlo.convolution`` with `?`
batch/spatial dims suffices (``dynamic_conv`` is only needed for dynamic
padding).  Transposed convolutions are not lowered.
"""
from __future__ import annotations

import torch

from ..registry import lowers

aten = torch.ops.aten


@lowers(aten.convolution.default)
def _convolution(ctx, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise NotImplementedError("transposed convolution is not lowered")
    shape, dt = ctx.out_spec(node)
    nsp = x.rank - 2
    sp = ", ".join(str(i) for i in range(nsp))
    dn = f"#stablehlo.conv<[b, f, {sp}]x[o, i, {sp}]->[b, f, {sp}]>"
    arr = lambda v: "array<i64: " + ", ".join(str(int(a)) for a in v) + ">"  # noqa: E731
    stride = list(stride) * (nsp // len(stride)) if len(stride) != nsp else list(stride)
    dilation = list(dilation) * (nsp // len(dilation)) if len(dilation) != nsp else list(dilation)
    padding = list(padding) * (nsp // len(padding)) if len(padding) != nsp else list(padding)
    pad = ", ".join(f"[{int(p)}, {int(p)}]" for p in padding)
    y = ctx.op("stablehlo.convolution", [ctx.convert(x, dt), ctx.convert(w, dt)], (shape, dt), attrs={
        "dimension_numbers": dn,
        "window_strides": arr(stride),
        "padding": f"dense<[{pad}]> : tensor<{nsp}x2xi64>",
        "lhs_dilation": arr([1] * nsp),
        "rhs_dilation": arr(dilation),
        "feature_group_count": f"{int(groups)} : i64",
        "batch_group_count": "1 : i64",
    })
    if bias is not None:
        y = ctx.binary("stablehlo.add", y, ctx.broadcast_to(ctx.convert(bias, dt), shape, dims=[1]))
    return y
