"""Layer ops: conv1d/conv2d (sizes by the convolution formula, symbolic where the input's
are), the norms, pools, im2col, and glu / pixel_shuffle (a dim split or folded by a constant)."""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F

from ..symbolic import as_expr
from ..tensor import UntraceableOp
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import assume_eq, promote, shape_of


def _tuple(v, n: int, what: str, op: str = "conv") -> tuple:
    """``v`` (an int or an ``n``-sequence) as an ``n``-tuple."""
    t = tuple(v) if isinstance(v, (list, tuple)) else (v,) * n
    if len(t) != n:
        raise ShapeError(f"{op}: {what} {v!r} is not an int or a {n}-tuple")
    return t


def _conv(name: str, nd: int):
    def impl(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        ctx = ctx_for(input, weight, bias)
        sx, sw = shape_of(input), shape_of(weight)
        if len(sx) != nd + 2 or len(sw) != nd + 2:
            raise UntraceableOp(f"lazy: {name} of a {len(sx)}-d input with a {len(sw)}-d weight (only batched {nd + 2}-d)")
        assume_eq(ctx, sx[1], sw[1] * groups, f"{name} channels")
        stride, dilation = _tuple(stride, nd, "stride", name), _tuple(dilation, nd, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ShapeError(f"{name}: padding {padding!r} is not 'same', 'valid' or ints")
            if padding == "same" and stride != (1,) * nd:
                raise ShapeError(f"{name}: padding='same' needs stride 1")
            spatial = (
                list(sx[2:])
                if padding == "same"
                else [(sx[2 + i] - as_expr(dilation[i]) * (sw[2 + i] - 1) - 1) // as_expr(stride[i]) + 1 for i in range(nd)]
            )
        else:
            pad = _tuple(padding, nd, "padding", name)
            spatial = [
                (sx[2 + i] + 2 * as_expr(pad[i]) - as_expr(dilation[i]) * (sw[2 + i] - 1) - 1) // as_expr(stride[i]) + 1
                for i in range(nd)
            ]
        if bias is not None:
            assume_eq(ctx, shape_of(bias)[0], sw[0], f"{name} bias")
        return record(
            ctx,
            name,
            (input, weight, bias, stride, padding, dilation, groups),
            {},
            [sx[0], sw[0], *spatial],
            promote(input, weight),
        )

    impl.__name__ = name
    impl.__doc__ = (
        f"``(N, C, *S) * (O, C/groups, *k) -> (N, O, *S')`` over {nd} spatial dim(s), "
        "``S' = (S + 2p - d (k - 1) - 1) // s + 1`` (``padding='same'`` keeps ``S``)."
    )
    return impl


conv1d = lazy_op("conv1d", fnames=("conv1d",), method=False, lowers=F.conv1d)(_conv("conv1d", 1))
conv2d = lazy_op("conv2d", fnames=("conv2d",), method=False, lowers=F.conv2d)(_conv("conv2d", 2))


@lazy_op("group_norm", fnames=("group_norm",), method=False, lowers={"F.group_norm": F.group_norm})
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group norm over ``num_groups`` groups of dim 1 (shape-preserving; the channels must divide)."""
    ctx = ctx_for(input, weight, bias)
    sx = shape_of(input)
    if len(sx) < 2:
        raise ShapeError(f"group_norm: input of rank {len(sx)}, expected (N, C, ...)")
    c = sx[1]
    # the groups split the channels: a symbolic C holds a divisibility guard (one key for all sizes that divide)
    assume_eq(ctx, c % as_expr(num_groups), as_expr(0), f"group_norm ({num_groups} groups divide the channels)")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            assume_eq(ctx, shape_of(t)[0], c, f"group_norm {what}")
    args = (input, num_groups, weight, bias, eps)
    return record(ctx, "F.group_norm", args, {}, sx, promote(input, *(t for t in (weight, bias) if t is not None)))


@lazy_op(fnames=("instance_norm",), lowers={"F.instance_norm": F.instance_norm})
def instance_norm(
    input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5
):
    """Instance norm with the input's statistics (shape-preserving); running statistics
    updated in place (``use_input_stats`` with running buffers) are refused as batch_norm's are."""
    if use_input_stats and running_mean is not None:
        raise UntraceableOp("lazy: instance_norm updating running stats in place", kind="in-place")
    ctx = ctx_for(input, running_mean, running_var, weight, bias)
    sx = shape_of(input)
    if len(sx) < 3:
        raise ShapeError(f"instance_norm: input of rank {len(sx)}, expected (N, C, ...)")
    ts = (running_mean, running_var, weight, bias)
    return record(
        ctx,
        "F.instance_norm",
        (input, *ts, use_input_stats, momentum, eps),
        {},
        sx,
        promote(input, *(t for t in ts if t is not None)),
    )


# F.batch_norm only: torch.batch_norm takes (input, weight, bias, running_mean, running_var, ...)
@lazy_op(fnames=("batch_norm",), lowers={"F.batch_norm": F.batch_norm})
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Eval-mode batch norm over dim 1 with the running statistics (training mode
    updates the statistics in place, which a lazy graph does not replay: refused)."""
    if training:
        raise UntraceableOp("lazy: batch_norm in training mode (it updates running stats in place)", kind="in-place")
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
def _window_sizes(name, sx, nd, kernel_size, stride, padding, dilation, ceil_mode) -> list:
    """``S' = (S + 2p - d (k - 1) - 1) // s + 1`` per spatial dim (the last ``nd`` of ``sx``);
    with ``ceil_mode`` the division rounds up, where no window can start in the padding."""
    k = _tuple(kernel_size, nd, "kernel_size", name)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _tuple(stride, nd, "stride", name)
    p, d = _tuple(padding, nd, "padding", name), _tuple(dilation, nd, "dilation", name)
    out = []
    for i in range(nd):
        span = sx[-nd + i] + 2 * as_expr(p[i]) - as_expr(d[i] * (k[i] - 1) + 1)
        if not ceil_mode:
            out.append(span // as_expr(s[i]) + 1)
        elif p[i] + s[i] <= d[i] * (k[i] - 1) + 1:
            # torch drops a last window that would start in the right padding; with p + s <= the window's
            # extent none can, for every size: the rounded-up quotient holds symbolically
            out.append((span + as_expr(s[i] - 1)) // as_expr(s[i]) + 1)
        else:
            raise UntraceableOp(f"lazy: {name} with ceil_mode=True and padding + stride past the window (a min per size)")
    return out


def _pool_input(name, input, nd: int = 2):
    sx = shape_of(input)
    if len(sx) not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: input of rank {len(sx)}, expected {nd + 2}-d (batched) or {nd + 1}-d")
    return sx


def _max_pool(name: str, nd: int):
    def impl(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        if return_indices:
            raise UntraceableOp(f"lazy: {name} with return_indices=True")
        sx = _pool_input(name, input, nd)
        out = list(sx[:-nd]) + _window_sizes(name, sx, nd, kernel_size, stride, padding, dilation, ceil_mode)
        args = (input, kernel_size, stride, padding, dilation, ceil_mode)
        return record(input.ctx, name, args, {}, out, input.dtype)

    impl.__name__ = name
    impl.__doc__ = f"Max pooling over the last {nd} dim(s) (indices refused: a second output)."
    return impl


def _avg_pool(name: str, nd: int):
    def impl(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        sx = _pool_input(name, input, nd)
        out = list(sx[:-nd]) + _window_sizes(name, sx, nd, kernel_size, stride, padding, 1, ceil_mode)
        args = (input, kernel_size, stride, padding, ceil_mode, count_include_pad)
        if nd == 2:
            args += (divisor_override,)  # (avg_pool1d has none)
        return record(input.ctx, name, args, {}, out, input.dtype)

    impl.__name__ = name
    impl.__doc__ = f"Average pooling over the last {nd} dim(s)."
    return impl


def _adaptive_shape(name: str, nd: int, input, output_size) -> tuple:
    """``(output_size as an nd-tuple, the output shape)`` of an adaptive pool: ``None`` keeps a size."""
    sx = _pool_input(name, input, nd)
    o = _tuple(output_size, nd, "output_size", name)
    return o, list(sx[:-nd]) + [sx[-nd + i] if o[i] is None else as_expr(o[i]) for i in range(nd)]


def _adaptive(name: str, nd: int):
    def impl(input, output_size, *rest):
        if rest and rest[0]:
            raise UntraceableOp(f"lazy: {name} with return_indices=True")
        o, shape = _adaptive_shape(name, nd, input, output_size)
        return record(input.ctx, name, (input, o if nd > 1 else o[0]), {}, shape, input.dtype)

    impl.__name__ = name
    impl.__doc__ = f"Pooling over the last {nd} dim(s) to ``output_size`` (an int or an {nd}-tuple, ``None`` keeping a size)."
    return impl


def _adaptive_max3d_values(input, output_size):
    return F.adaptive_max_pool3d_with_indices(input, output_size)[0]


def _adaptive_max3d_indices(input, output_size):
    return F.adaptive_max_pool3d_with_indices(input, output_size)[1]


def _adaptive_max3d(input, output_size, return_indices=False):
    """``adaptive_max_pool3d``: the values (and their int64 indices), each of the shape
    :func:`_adaptive` gives. torch's meta kernel reads the sizes as ints, so a ``None`` in
    ``output_size`` baked the input's size into the shape."""
    o, shape = _adaptive_shape("adaptive_max_pool3d", 3, input, output_size)
    out = record(input.ctx, "adaptive_max3d_values", (input, o), {}, shape, input.dtype)
    if not return_indices:
        return out
    return out, record(input.ctx, "adaptive_max3d_indices", (input, o), {}, shape, torch.int64)


# fnames: torch.nn.functional's public names and the private ones its wrappers call (boolean_dispatch)
max_pool1d = lazy_op("max_pool1d", fnames=("max_pool1d", "_max_pool1d"), method=False, lowers=F.max_pool1d)(
    _max_pool("max_pool1d", 1)
)
max_pool2d = lazy_op("max_pool2d", fnames=("max_pool2d", "_max_pool2d"), method=False, lowers=F.max_pool2d)(
    _max_pool("max_pool2d", 2)
)
avg_pool1d = lazy_op("avg_pool1d", fnames=("avg_pool1d",), method=False, lowers=F.avg_pool1d)(_avg_pool("avg_pool1d", 1))
avg_pool2d = lazy_op("avg_pool2d", fnames=("avg_pool2d",), method=False, lowers=F.avg_pool2d)(_avg_pool("avg_pool2d", 2))
adaptive_avg_pool1d = lazy_op("adaptive_avg_pool1d", fnames=("adaptive_avg_pool1d",), method=False, lowers=F.adaptive_avg_pool1d)(
    _adaptive("adaptive_avg_pool1d", 1)
)
adaptive_avg_pool2d = lazy_op("adaptive_avg_pool2d", fnames=("adaptive_avg_pool2d",), method=False, lowers=F.adaptive_avg_pool2d)(
    _adaptive("adaptive_avg_pool2d", 2)
)
_MAX3D = {"adaptive_max3d_values": _adaptive_max3d_values, "adaptive_max3d_indices": _adaptive_max3d_indices}
lazy_op(fnames=("adaptive_max_pool3d",), lowers=_MAX3D)(_adaptive_max3d)


@lazy_op(fnames=("adaptive_max_pool3d_with_indices",))
def _adaptive_max3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d``'s twin that returns the indices whatever ``return_indices`` says."""
    return _adaptive_max3d(input, output_size, True)


@lazy_op(fnames=("unfold",), lowers={"F.unfold": F.unfold})
def im2col(input, kernel_size, dilation=1, padding=0, stride=1):
    """``F.unfold`` (im2col) of ``(N, C, H, W)``: ``(N, C kh kw, L)``, ``L`` the product of the
    two window counts by the convolution formula (symbolic where the input's sizes are)."""
    sx = shape_of(input)
    if len(sx) != 4:
        raise UntraceableOp(f"lazy: F.unfold of a {len(sx)}-d input (only batched 4-d)")
    k, d = _tuple(kernel_size, 2, "kernel_size", "unfold"), _tuple(dilation, 2, "dilation", "unfold")
    p, s = _tuple(padding, 2, "padding", "unfold"), _tuple(stride, 2, "stride", "unfold")
    counts = [(sx[2 + i] + as_expr(2 * p[i] - d[i] * (k[i] - 1) - 1)) // as_expr(s[i]) + 1 for i in range(2)]
    out = [sx[0], sx[1] * as_expr(k[0] * k[1]), counts[0] * counts[1]]
    return record(input.ctx, "F.unfold", (input, k, d, p, s), {}, out, input.dtype)


# ---------------------------------------------------------------------------
# ops that split or fold a dim by a constant: a divisibility guard on a symbolic size
# ---------------------------------------------------------------------------
@lazy_op(fnames=("glu",), lowers={"F.glu": F.glu})
def glu(input, dim=-1):
    """``a * sigmoid(b)`` of the two halves of ``dim``: that dim halves (it must be even)."""
    ctx = ctx_for(input)
    sx = list(shape_of(input))
    d = dim % len(sx)
    assume_eq(ctx, sx[d] % as_expr(2), as_expr(0), "glu (the halved dim is even)")
    sx[d] = sx[d] // as_expr(2)
    return record(ctx, "F.glu", (input, dim), {}, tuple(sx), input.dtype)


@lazy_op("pixel_shuffle", method=False, lowers=F.pixel_shuffle)
def pixel_shuffle(input, upscale_factor):
    """(..., C r², H, W) -> (..., C, H r, W r): the channels must divide by r²."""
    ctx = ctx_for(input)
    sx = shape_of(input)
    if len(sx) < 3:
        raise ShapeError(f"pixel_shuffle: input of rank {len(sx)}, expected (..., C, H, W)")
    r = as_expr(int(upscale_factor))
    c, h, w = sx[-3:]
    assume_eq(ctx, c % (r * r), as_expr(0), f"pixel_shuffle (upscale {upscale_factor}: r² divides the channels)")
    return record(ctx, "pixel_shuffle", (input, upscale_factor), {}, (*sx[:-3], c // (r * r), h * r, w * r), input.dtype)


def _output(op, i: int):
    """The runtime callable of a multi-output op's node ``i``: ``op``'s output ``i`` (the
    lowered graph runs ``op`` once per output: cheap next to the lazy step at these sizes)."""

    def run(*args, **kwargs):
        return op(*args, **kwargs)[i]

    return run


# ---------------------------------------------------------------------------
# recurrent cells (one step: torch.nn.GRUCell / LSTMCell / RNNCell call these): the new
# state has the state's shape, the batch shared with the input (a guard when symbolic)
# ---------------------------------------------------------------------------
def _cell(name: str):
    def impl(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        states = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
        ctx = ctx_for(input, *states, w_ih, w_hh, b_ih, b_hh)
        sx, sh = shape_of(input), shape_of(states[0])
        if len(sx) != 2 or len(sh) != 2:
            raise ShapeError(f"{name}: input and state of rank 2 (batch, features) expected, got {len(sx)} and {len(sh)}")
        assume_eq(ctx, sx[0], sh[0], f"{name} (the input's batch is the state's)")
        args = (input, hx, w_ih, w_hh, b_ih, b_hh)
        dt = promote(input, *states)
        if len(states) == 1:
            return record(ctx, name, args, {}, sh, dt)
        return tuple(record(ctx, f"{name}_{i}", args, {}, sh, dt) for i in range(len(states)))

    impl.__name__ = name
    return impl


for _name in ("gru_cell", "rnn_tanh_cell", "rnn_relu_cell"):
    lazy_op(_name, method=False, lowers=getattr(torch, _name))(_cell(_name))
# (h, c) = lstm_cell(...): one node per output, each the op's output i (the op runs once
# per output in the lowered graph: cheap next to the lazy step at these sizes)
lazy_op(
    "lstm_cell",
    method=False,
    lowers={f"lstm_cell_{i}": _output(torch.lstm_cell, i) for i in (0, 1)},
)(_cell("lstm_cell"))


#: F.multi_head_attention_forward's parameters after (query, key, value, embed_dim_to_check,
#: num_heads), in order, with their defaults (``inspect.Parameter.empty`` where none)
_MHA_PARAMS = tuple((p.name, p.default) for p in list(inspect.signature(F.multi_head_attention_forward).parameters.values())[5:])


@lazy_op(
    fnames=("multi_head_attention_forward",),
    lowers={f"F.multi_head_attention_forward_{i}": _output(F.multi_head_attention_forward, i) for i in (0, 1)},
)
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, *args, **kwargs):
    """``nn.MultiheadAttention``'s attention (torchvision's ViT): one node per output, each the
    op's output ``i`` (the runtime op is torch's own). Query (L, N, E) or (L, E), key and value
    (S, N, E); the output has the query's shape, the weights (when asked) (N, L, S) averaged over
    the heads or (N, H, L, S). Refused: dropout while training (random), ``bias_k``/``bias_v``,
    ``add_zero_attn`` and ``static_k``/``static_v`` (the key length changes by them)."""
    names = [name for name, _ in _MHA_PARAMS]
    defaults = {name: d for name, d in _MHA_PARAMS if d is not inspect.Parameter.empty}
    a = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}
    if a["dropout_p"] and a["training"]:
        raise UntraceableOp("lazy: multi_head_attention_forward with dropout while training is random", kind="random")
    for k in ("bias_k", "bias_v", "static_k", "static_v"):
        if a[k] is not None:
            raise UntraceableOp(f"lazy: multi_head_attention_forward with {k}")
    if a["add_zero_attn"]:
        raise UntraceableOp("lazy: multi_head_attention_forward with add_zero_attn")
    ctx = ctx_for(query, key, value)
    sq, sk, sv = shape_of(query), shape_of(key), shape_of(value)
    if len(sq) not in (2, 3) or len(sk) != len(sq) or len(sv) != len(sq):
        raise ShapeError("multi_head_attention_forward: query, key and value of rank 2 or 3, alike")
    assume_eq(ctx, sk[0], sv[0], "multi_head_attention_forward (key/value length)")
    if len(sq) == 3:
        assume_eq(ctx, sq[1], sk[1], "multi_head_attention_forward (query/key batch)")
    ordered = (query, key, value, embed_dim_to_check, num_heads, *[a[k] for k in names])
    dt = promote(query, key, value)
    out = record(ctx, "F.multi_head_attention_forward_0", ordered, {}, sq, dt)
    if not a["need_weights"]:
        return out, None
    L, S = sq[0], sk[0]
    batch = (sq[1],) if len(sq) == 3 else ()
    heads = () if a["average_attn_weights"] else (as_expr(int(num_heads)),)
    return out, record(ctx, "F.multi_head_attention_forward_1", ordered, {}, (*batch, *heads, L, S), dt)


# ---------------------------------------------------------------------------
# recurrent layers (torch.nn.LSTM / GRU / RNN call these): the loop over the sequence runs
# inside torch's op, so a dynamic sequence length stays one graph (a scan the lazy path keeps
# symbolic); one node per output, each the op's output i
# ---------------------------------------------------------------------------
def _recurrent(name: str, n_states: int):
    def impl(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        if not isinstance(params, (list, tuple)):
            raise UntraceableOp(f"lazy: {name} over a packed sequence (batch_sizes) is not supported")
        if dropout and train:
            raise UntraceableOp(f"lazy: {name} with dropout while training is random", kind="random")
        states = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
        if len(states) != n_states:
            raise ShapeError(f"{name}: {len(states)} initial states, expected {n_states}")
        ctx = ctx_for(input, *states, *params)
        sx, sh = shape_of(input), shape_of(states[0])
        if len(sx) != 3 or any(len(shape_of(s)) != 3 for s in states):
            raise ShapeError(f"{name}: a batched input (L, N, H) and states (D * layers, N, H) expected")
        length, batch = (sx[1], sx[0]) if batch_first else (sx[0], sx[1])
        for s in states:
            assume_eq(ctx, batch, shape_of(s)[1], f"{name} (the input's batch is the state's)")
        width = sh[2] * as_expr(2 if bidirectional else 1)
        out_shape = (batch, length, width) if batch_first else (length, batch, width)
        args = (
            input,
            states if isinstance(hx, (tuple, list)) else hx,
            list(params),
            has_biases,
            num_layers,
            dropout,
            train,
            bidirectional,
            batch_first,
        )
        dt = promote(input, *states)
        outs = [record(ctx, f"{name}_0", args, {}, out_shape, dt)]
        outs += [record(ctx, f"{name}_{i + 1}", args, {}, shape_of(s), dt) for i, s in enumerate(states)]
        return tuple(outs)

    impl.__name__ = name
    return impl


for _name, _n in (("lstm", 2), ("gru", 1), ("rnn_tanh", 1), ("rnn_relu", 1)):
    lazy_op(_name, method=False, lowers={f"{_name}_{i}": _output(getattr(torch, _name), i) for i in range(_n + 1)})(
        _recurrent(_name, _n)
    )
