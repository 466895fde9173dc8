"""Lazy-path samples of the ops added for real models (once ``tests/lazy/test_lazy_new_ops.py``):
every op the modules ``ops.order``, ``ops.datadep`` and ``ops.layers`` register has one (a
test fails when one is added without), run over three sizes in unbounded mode equal to
torch eager, with its exact compile count; the functions the zoo's op walk found missing;
shape-preserving activations and norms torch spells in several ways."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .sample import Lazy, Sample

_W1, _W2 = torch.randn(6, 2, 3), torch.randn(4, 1, 3, 3)  # a grouped conv1d's and a depthwise conv2d's weights
_B6, _C4 = torch.randn(6), torch.randn(4)
_GRU, _RNN, _LSTM = torch.nn.GRUCell(4, 4), torch.nn.RNNCell(4, 4), torch.nn.LSTMCell(4, 4)
#: whole recurrent layers (torch.nn.LSTM / GRU / RNN): the loop over L runs inside torch's op
_LSTM_L = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True).eval()
_GRU_L = torch.nn.GRU(4, 3, batch_first=True).eval()
_RNN_T, _RNN_R = torch.nn.RNN(4, 3).eval(), torch.nn.RNN(4, 3, num_layers=2, nonlinearity="relu").eval()


def _layer(module, x):
    out, h = module(x)
    return (out, *h) if isinstance(h, tuple) else (out, h)


_MHA = torch.nn.MultiheadAttention(4, 2).eval()  # (torchvision's ViT: the module calls F.multi_head_attention_forward)
_MHA_B = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()
#: registered name -> (program, input shape at size n, compiles over the sweep)
_OPS = {
    "conv1d": (lambda x: F.conv1d(x, _W1, _B6, stride=2, padding=1, groups=2), lambda n: (2, 4, n + 3), 1),
    "conv2d": (lambda x: F.conv2d(x, _W2, None, stride=(1, 2), padding=1, groups=4), lambda n: (2, 4, n, n + 1), 1),
    "group_norm": (lambda x: F.group_norm(x, 2, _C4, _C4), lambda n: (2, 4, n), 1),
    "instance_norm": (lambda x: F.instance_norm(x, weight=_C4, bias=_C4), lambda n: (n, 4, 5), 1),
    "batch_norm": (lambda x: F.batch_norm(x, _C4, _C4.abs(), _C4, _C4), lambda n: (n, 4, 3), 1),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, stride=2, ceil_mode=True), lambda n: (2, 3, n + 2), 1),
    "_max_pool1d": (lambda x: F.max_pool1d(x, 2, padding=1), lambda n: (2, n), 1),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2, ceil_mode=True, count_include_pad=False), lambda n: (2, 3, n), 1),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 1), lambda n: (2, 3, n), 1),
    "unfold": (lambda x: F.unfold(x, (3, 1), padding=(1, 0)) * 2, lambda n: (2, 4, n, 1), 1),  # (ConvBERT's span conv)
    "topk": (lambda x: torch.topk(x, 2, dim=1), lambda n: (n, 5), 1),
    "sort": (lambda x: torch.sort(x, dim=0, descending=True), lambda n: (n, 3), 1),
    "argsort": (lambda x: x.argsort(dim=-1), lambda n: (3, n), 1),
    "diff": (lambda x: torch.diff(x, n=2, dim=0, append=x[:1]), lambda n: (n, 4), 1),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1), lambda n: (2, 3, n, n + 2), 1),
    "_max_pool2d": (lambda x: F.max_pool2d(x, 2), lambda n: (1, 2, n, 6), 1),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, (2, 3), stride=1), lambda n: (2, n, n + 3), 1),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (1, None)), lambda n: (n, 2, 5, n), 1),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, (2, None, 1), return_indices=True), lambda n: (2, n, n + 1, 3), 1),
    "adaptive_max_pool3d_with_indices": (
        lambda x: F.adaptive_max_pool3d_with_indices(x, (None, 2, None)),
        lambda n: (1, 2, n, 5, n + 2),
        1,
    ),
    # data-dependent: the mask's graph, then the rest (each once, not per size)
    "nonzero": (lambda x: torch.nonzero(x > 0).float().sum(0) * 2, lambda n: (n, 3), 2),
    "argwhere": (lambda x: (torch.argwhere(x > 0) + 1) * x.shape[0], lambda n: (n,), 2),
    "masked_select": (lambda x: torch.masked_select(x, x > 0.5) * 3, lambda n: (n, 2), 2),
    # recurrent cells, a step of torch.nn's *Cell modules (GatedGraphConv's GRU)
    "gru_cell": (lambda x: _GRU(x, torch.tanh(x)), lambda n: (n, 4), 1),
    "rnn_tanh_cell": (lambda x: _RNN(x, x * 0.5), lambda n: (n, 4), 1),
    "rnn_relu_cell": (lambda x: torch.rnn_relu_cell(x, x, _RNN.weight_ih, _RNN.weight_hh), lambda n: (n, 4), 1),
    "lstm_cell": (lambda x: _LSTM(x, (x, -x)), lambda n: (n, 4), 1),
    # a recurrent layer over a dynamic sequence length L (and batch): one graph, a scan inside
    "lstm": (lambda x: _layer(_LSTM_L, x), lambda n: (n, 2, 4), 1),
    "gru": (lambda x: _layer(_GRU_L, x), lambda n: (n // 2, n, 4), 1),
    "rnn_tanh": (lambda x: _layer(_RNN_T, x), lambda n: (n, 3, 4), 1),
    "rnn_relu": (lambda x: _layer(_RNN_R, x), lambda n: (n, 1, 4), 1),
    # attention: the output with the query's shape, the weights (N, [H,] L, S); L and S vary
    "multi_head_attention_forward": (lambda x: _MHA(x, x[1:], x[1:], need_weights=False)[0] * 2, lambda n: (n, 3, 4), 1),
    "multi_head_attention_forward weights": (lambda x: _MHA_B(x, x[:, 1:], x[:, 1:]), lambda n: (2, n, 4), 1),
    "multi_head_attention_forward per head": (
        lambda x: _MHA(x, x[1:], x[1:], average_attn_weights=False, attn_mask=torch.zeros(x.shape[0], x.shape[0] - 1)),
        lambda n: (n, 4),
        1,
    ),
    # a halved / folded dim: one compile for every size the guard admits
    "glu": (lambda x: F.glu(x, dim=1) * 2, lambda n: (3, 2 * n), 1),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2) + 1, lambda n: (n, 8, 3, n + 1), 1),
}


#: the functions the zoo's walk found missing (tests/lazy/walk_ops.txt), each over three sizes in one compile
ZOO_SAMPLES = {
    "Tensor.unfold": lambda x: x.unfold(1, 3, 2).sum(-1),
    "repeat_interleave (dim)": lambda x: x.repeat_interleave(2, dim=0) * 2,
    "repeat_interleave (flat)": lambda x: torch.repeat_interleave(x, 3),
    "Tensor.fill_": lambda x: (x * 1).fill_(2.0) + x,
    "Tensor.zero_": lambda x: (x + 1).zero_() + x,
    "torch.div of sizes": lambda x: x.view(torch.div(x.shape[0], 1, rounding_mode="floor"), -1)[
        : torch.div(x.shape[0], 2, rounding_mode="trunc")
    ],
}


_PW = torch.rand(4) + 0.1
#: shape-preserving activations and norms that torch spells as _C._nn builtins, Python
#: functionals or functions with parameters (the lazy op walk found them missing)
SAME_SHAPE = {
    "F.logsigmoid": F.logsigmoid,
    "F.softshrink": lambda x: F.softshrink(x, 0.3),
    "F.hardshrink": lambda x: F.hardshrink(x, 0.3),
    "Tensor.hardshrink": lambda x: x.hardshrink(0.2),
    "F.tanhshrink": F.tanhshrink,
    "F.prelu": lambda x: F.prelu(x.transpose(1, 2), _PW),  # the slopes' channels: dim 1
    "F.rms_norm": lambda x: F.rms_norm(x, (4,), _PW, 1e-6),
    "torch.rms_norm": lambda x: torch.rms_norm(x, [4]),
}

#: the hard activations (F.hardswish, F.hardsigmoid) over (n, 4), scaled past their knees
HARD = {"F.hardswish": F.hardswish, "F.hardsigmoid": F.hardsigmoid}
#: names shared with other tables' samples: this table's gets a word more (the registry name stays first)
RENAMED = {"conv1d": "conv1d grouped", "conv2d": "conv2d depthwise", "group_norm": "group_norm affine"}


def _normal(shape, scale=1.0, transpose=False):
    def make(n, g):
        x = g.standard_normal(shape(n)).astype(np.float32) * np.float32(scale)
        return [x.transpose(0, 2, 1) if transpose else x]

    return make


def _sample(name, program, make, sizes, lazy):
    # eager's own tolerance: the lazy path runs torch's kernels (torch.testing's float32 default)
    return Sample(name, program, make, None, None, sizes, 1.3e-6, 1e-5, lazy=lazy, origin="lazy_ops")


def build() -> list[Sample]:
    out = []
    for name, (program, shape, compiles) in _OPS.items():
        bounded = (6, 2) if compiles == 2 else None  # data-dependent: both graphs per shape static, once bounded
        lazy = Lazy(compiles=compiles, bounded=bounded)
        out.append(_sample(RENAMED.get(name, name), program, _normal(shape), (4, 7, 11), lazy))
    for name, program in ZOO_SAMPLES.items():
        out.append(_sample(name, program, _normal(lambda n: (n, n + 3)), (4, 7, 11), Lazy()))
    for name, fn in SAME_SHAPE.items():  # (2, n, 4): the channel / normalised dim last
        program = lambda x, fn=fn: fn(x) * 2  # noqa: E731
        out.append(_sample(name, program, _normal(lambda n: (2, 4, n), 2.0, transpose=True), (3, 5, 8), Lazy()))
    for name, fn in HARD.items():
        out.append(_sample(name, fn, _normal(lambda n: (n, 4), 4.0), (3, 5), Lazy()))
    return out
