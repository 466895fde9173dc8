"""Layer ops: conv2d (sizes by the convolution formula, symbolic where the input's
are) and batch_norm in eval mode (shape-preserving)."""

from __future__ import annotations

import torch.nn.functional as F

from ..symbolic import as_expr
from ..tensor import Unsupported
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import assume_eq, promote, shape_of


def _pair(v, what: str) -> tuple:
    t = tuple(v) if isinstance(v, (list, tuple)) else (v, v)
    if len(t) != 2:
        raise ShapeError(f"conv2d: {what} {v!r} is not an int or a pair")
    return t


@lazy_op("conv2d", fnames=("conv2d",), method=False, lowers=F.conv2d)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``(N, C, H, W) * (O, C/groups, kh, kw) -> (N, O, H', W')`` with
    ``H' = (H + 2p - d (kh - 1) - 1) // s + 1`` (``padding='same'`` keeps ``H``)."""
    ctx = ctx_for(input, weight, bias)
    sx, sw = shape_of(input), shape_of(weight)
    if len(sx) != 4 or len(sw) != 4:
        raise Unsupported(f"lazy: conv2d of a {len(sx)}-d input with a {len(sw)}-d weight (only batched 4-d)")
    assume_eq(ctx, sx[1], sw[1] * groups, "conv2d channels")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ShapeError(f"conv2d: padding {padding!r} is not 'same', 'valid' or ints")
        if padding == "same" and stride != (1, 1):
            raise ShapeError("conv2d: padding='same' needs stride 1")
        spatial = list(sx[2:]) if padding == "same" else [
            sx[2 + i] - as_expr(dilation[i]) * (sw[2 + i] - 1) for i in range(2)]
    else:
        pad = _pair(padding, "padding")
        spatial = [(sx[2 + i] + 2 * as_expr(pad[i]) - as_expr(dilation[i]) * (sw[2 + i] - 1) - 1)
                   // as_expr(stride[i]) + 1 for i in range(2)]
    if bias is not None:
        assume_eq(ctx, shape_of(bias)[0], sw[0], "conv2d bias")
    return record(ctx, "conv2d", (input, weight, bias, stride, padding, dilation, groups), {},
                  [sx[0], sw[0], *spatial], promote(input, weight))


# F.batch_norm only: torch.batch_norm takes (input, weight, bias, running_mean, running_var, ...)
@lazy_op(fnames=("batch_norm",), lowers={"F.batch_norm": F.batch_norm})
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Eval-mode batch norm over dim 1 with the running statistics (training mode
    updates the statistics in place, which a lazy graph does not replay: refused)."""
    if training:
        raise Unsupported("lazy: batch_norm in training mode (it updates running stats in place)")
    ctx = ctx_for(input, running_mean, running_var, weight, bias)
    sx = shape_of(input)
    if len(sx) < 2:
        raise ShapeError(f"batch_norm: input of rank {len(sx)}, expected (N, C, ...)")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None:
            assume_eq(ctx, shape_of(t)[0], sx[1], f"batch_norm {name}")
    return record(ctx, "F.batch_norm", (input, running_mean, running_var, weight, bias, False, momentum, eps), {},
                  sx, promote(input, *(t for t in (running_mean, running_var, weight, bias) if t is not None)))

