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
        spatial = list(sx[2:]) if padding == "same" else [sx[2 + i] - as_expr(dilation[i]) * (sw[2 + i] - 1) for i in range(2)]
    else:
        pad = _pair(padding, "padding")
        spatial = [
            (sx[2 + i] + 2 * as_expr(pad[i]) - as_expr(dilation[i]) * (sw[2 + i] - 1) - 1) // as_expr(stride[i]) + 1
            for i in range(2)
        ]
    if bias is not None:
        assume_eq(ctx, shape_of(bias)[0], sw[0], "conv2d bias")
    return record(
        ctx,
        "conv2d",
        (input, weight, bias, stride, padding, dilation, groups),
        {},
        [sx[0], sw[0], *spatial],
        promote(input, weight),
    )


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
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None:
            assume_eq(ctx, shape_of(t)[0], sx[1], f"batch_norm {name}")
    return record(
        ctx,
        "F.batch_norm",
        (input, running_mean, running_var, weight, bias, False, momentum, eps),
        {},
        sx,
        promote(input, *(t for t in (running_mean, running_var, weight, bias) if t is not None)),
    )


# ---------------------------------------------------------------------------
# pooling: sizes by the window formula (floor mode), symbolic where the input's are
# ---------------------------------------------------------------------------
def _window_sizes(name, sx, kernel_size, stride, padding, dilation, ceil_mode) -> list:
    """``H' = (H + 2p - d (k - 1) - 1) // s + 1`` per spatial dim (the last two of ``sx``)."""
    if ceil_mode:
        # ceil mode drops a last window that starts in the padding: a min over sizes we would guard per size
        raise Unsupported(f"lazy: {name} with ceil_mode=True")
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _pair(stride, "stride")
    p, d = _pair(padding, "padding"), _pair(dilation, "dilation")
    return [(sx[-2 + i] + 2 * as_expr(p[i]) - as_expr(d[i]) * (k[i] - 1) - 1) // as_expr(s[i]) + 1 for i in range(2)]


def _pool_input(name, input):
    sx = shape_of(input)
    if len(sx) not in (3, 4):
        raise ShapeError(f"{name}: input of rank {len(sx)}, expected (N, C, H, W) or (C, H, W)")
    return sx


@lazy_op("max_pool2d", fnames=("max_pool2d", "_max_pool2d"), method=False, lowers=F.max_pool2d)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over the last two dims (indices refused: a second output)."""
    if return_indices:
        raise Unsupported("lazy: max_pool2d with return_indices=True")
    sx = _pool_input("max_pool2d", input)
    out = list(sx[:-2]) + _window_sizes("max_pool2d", sx, kernel_size, stride, padding, dilation, ceil_mode)
    return record(input.ctx, "max_pool2d", (input, kernel_size, stride, padding, dilation), {}, out, input.dtype)


@lazy_op("avg_pool2d", fnames=("avg_pool2d",), method=False, lowers=F.avg_pool2d)
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Average pooling over the last two dims."""
    sx = _pool_input("avg_pool2d", input)
    out = list(sx[:-2]) + _window_sizes("avg_pool2d", sx, kernel_size, stride, padding, 1, ceil_mode)
    return record(
        input.ctx,
        "avg_pool2d",
        (input, kernel_size, stride, padding, False, count_include_pad, divisor_override),
        {},
        out,
        input.dtype,
    )


@lazy_op("adaptive_avg_pool2d", fnames=("adaptive_avg_pool2d",), method=False, lowers=F.adaptive_avg_pool2d)
def adaptive_avg_pool2d(input, output_size):
    """Average pooling to ``output_size`` (an int, a pair, ``None`` keeping the input's size)."""
    sx = _pool_input("adaptive_avg_pool2d", input)
    o = _pair(output_size, "output_size")
    spatial = [sx[-2 + i] if o[i] is None else as_expr(o[i]) for i in range(2)]
    return record(input.ctx, "adaptive_avg_pool2d", (input, tuple(o)), {}, list(sx[:-2]) + spatial, input.dtype)
