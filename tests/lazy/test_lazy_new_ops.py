"""The ops added for real models, generated from the op registry: every op the modules
``ops.order``, ``ops.datadep`` and ``ops.layers`` register has a sample
program here (a test fails when one is added without), and each sample runs over three sizes
in unbounded mode equal to torch eager, with its exact compile count."""

import pytest
import torch
import torch.nn.functional as F

import engines.lazy as L
from engines.lazy.ops import F_OPS, OPS, datadep, layers, order

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
SAMPLES = {
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


def _registered() -> set:
    out = set()
    for table in (OPS, F_OPS):
        for name, fn in table.items():
            mod = getattr(fn, "__module__", "")
            if mod in (order.__name__, datadep.__name__, layers.__name__):
                out.add(name)
    return out


def test_every_new_op_has_a_sample():
    assert _registered() == {name.split(" ")[0] for name in SAMPLES}


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_new_op_matches_eager_with_exact_compiles(name):
    program, shape, compiles = SAMPLES[name]
    f = L.jit(program)
    for n in (4, 7, 11):
        torch.manual_seed(n)
        x = torch.randn(*shape(n))
        for got, want in zip(_flat(f(x)), _flat(program(x)), strict=True):
            torch.testing.assert_close(got, want)
    assert f.ctx.compiles() == compiles


def test_topk_past_the_size_is_a_shape_error():
    with pytest.raises(L.ShapeError, match="topk"):
        torch.topk(L.tensor(torch.randn(3)), 4)


def test_symbolic_k():
    f = L.jit(lambda x: x.topk(x.shape[0] // 2).values)
    for n in (4, 6, 10):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x.topk(n // 2).values)
    assert f.ctx.compiles() == 1


_DATADEP = [name for name, (_p, _s, compiles) in SAMPLES.items() if compiles == 2]


@pytest.mark.parametrize("name", _DATADEP)
def test_data_dependent_ops_in_static_and_bounded_mode(name):
    """Static: the count is a constant of the next graph's key (both graphs per shape, none on a
    repeat); bounded: its variable is bounded by the operand's elements, so both graphs once."""
    program, shape, _ = SAMPLES[name]
    static = L.jit(program, mode="static")
    bounded = L.jit(program, mode="bounded", bounds=[{ax: 16 for ax in range(len(shape(1)))}])
    for n in (4, 7, 7, 11):
        torch.manual_seed(n)
        x = torch.randn(*shape(n))
        for f in (static, bounded):
            for got, want in zip(_flat(f(x)), _flat(program(x)), strict=True):
                torch.testing.assert_close(got, want)
    assert static.ctx.compiles() == 6 and bounded.ctx.compiles() == 2
    (leaf,) = [v for v in bounded.ctx.vars.vars.values() if v.name == "nnz0"]
    assert leaf.bound == 16 ** len(shape(1))


@pytest.mark.parametrize("mode", ["static", "unbounded"])
def test_inplace_into_a_concrete_tensor_with_lazy_operands(mode):
    """torch_geometric's ``scatter``: ``src.new_zeros(n).scatter_add_(0, index, src)`` where ``src``
    is a tensor torch made from constant sizes (static mode). The concrete tensor cannot name a lazy
    value: the result is computed (a split: 2 graphs) and written into it, as torch writes it."""

    def program(x, i):
        acc = torch.zeros(5)  # constant sizes: a concrete tensor, in every mode
        out = acc.index_add_(0, i, x * 2)
        return out + 1, acc * 3

    f = L.jit(program, mode=mode)
    for n in (4, 7, 11):
        x, i = torch.randn(n), torch.randint(0, 5, (n,))
        for got, want in zip(f(x, i), program(x, i), strict=True):
            torch.testing.assert_close(got, want)
    # static: the graph up to the write per shape, the rest (over the 5 written values) once
    assert f.ctx.compiles() == (3 + 1 if mode == "static" else 2)


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_ceil_mode_pools_keep_sizes_symbolic_where_no_window_starts_in_the_padding(pool):
    """Every (kernel, stride, padding) of a small grid: where padding + stride fits the window
    the rounded-up size is symbolic (one compile, equal to eager at every size); past it the
    registry refuses and the generic rule of torch's meta kernel traces it (equal to eager)."""
    fn = F.max_pool2d if pool == "max" else F.avg_pool2d
    for k in (2, 3):
        for s in (1, 2, 3):
            for p in range(k // 2 + 1):

                def program(x, k=k, s=s, p=p):
                    return fn(x, k, stride=s, padding=p, ceil_mode=True)

                f = L.jit(program)
                if p + s > k:  # the registry's rule refuses: the generic one (torch's meta kernel) traces it
                    for n in (7, 8):
                        x = torch.randn(1, 2, n, n)
                        torch.testing.assert_close(f(x), program(x))
                    continue
                for n in range(k + 1, k + 9):
                    x = torch.randn(1, 2, n, n + 1)
                    torch.testing.assert_close(f(x), program(x))
                assert f.ctx.compiles() == 1, (k, s, p)


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


@pytest.mark.parametrize("name", sorted(ZOO_SAMPLES))
def test_zoo_functions_match_eager_in_one_compile(name):
    program = ZOO_SAMPLES[name]
    f = L.jit(program)
    for n in (4, 7, 11):
        x = torch.randn(n, n + 3)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1


def test_a_tensor_of_repeats_is_refused_by_name():
    with pytest.raises(L.UntraceableOp, match="tensor of repeats"):
        L.jit(lambda x: x.repeat_interleave(torch.tensor([1, 2]), dim=0))(torch.randn(2, 3))


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


@pytest.mark.parametrize("name", sorted(SAME_SHAPE))
def test_same_shape_functions_match_eager_in_one_compile(name):
    fn = SAME_SHAPE[name]
    f = L.jit(lambda x: fn(x) * 2)
    for n in (3, 5, 8):
        x = torch.randn(2, 4, n).transpose(1, 2) * 2  # (2, n, 4): the channel / normalised dim last
        torch.testing.assert_close(f(x), fn(x) * 2)
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize("fn", [F.hardswish, F.hardsigmoid])
def test_hard_activations(fn):
    f = L.jit(fn)
    for n in (3, 5):
        x = torch.randn(n, 4) * 4
        torch.testing.assert_close(f(x), fn(x))
    assert f.ctx.compiles() == 1
