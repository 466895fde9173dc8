"""The per-op samples of the StableHLO lowering (once ``tests/stablehlo/cases_stablehlo.py``).

Each: a small torch module, inputs at size ``n`` (every dynamic dim scales with ``n``), its
dims, an independent NumPy float64 oracle (plain NumPy on the same inputs and the module's
parameters as arrays: torch is never run), and substrings the lowered text must contain
(``?`` dims / ``#stablehlo.bounds``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .oracles import d, erf, f32, np_conv, np_softmax, var
from .sample import Fn, Lazy, LazyHlo, Lowered, Sample

#: the samples the compile-once executors pin (``tests/stablehlo/test_bounded.py``): every
#: bounded one, and the unbounded ones whose rewrites differ (size-derived slice starts,
#: dynamic_gather, dynamic_iota, reshapes of several ``?`` dims, convolutions over a dynamic
#: spatial dim); the rest passed there too when last checked in full (the test budget keeps this subset)
BOUNDED_ONCE = ("slice", "select", "index_select", "cumsum", "view_arith", "unsqueeze", "conv1d", "conv1d_strided", "conv2d")
#: the lazy path on these samples, with their dims: one compile over the sweep, but ``slice``'s
#: two (``x[1:]`` of one row is empty: its size-0/1 guard flips once)
LAZY: dict[str, Lazy] = dict.fromkeys(
    [
        "expand_symint", "add_sub_mul_div", "broadcast_binary", "ne", "gelu", "cumsum", "cumsum_bounded", "mean",
        "var", "softmax", "addmm_linear", "mm", "bmm", "cat", "split_with_sizes", "select", "permute_transpose",
        "unsqueeze", "view_arith", "embedding", "conv1d", "conv1d_strided", "conv2d", "layer_norm", "group_norm",
        "index_select", "index_add_scatter_add",
    ],
    Lazy(every_axis=False),
) | {"slice": Lazy(compiles=2, every_axis=False)}  # fmt: skip
#: the lazy trace lowered to StableHLO on these samples (a few: an XLA compile a size), and a
#: failure it has today with its reason
LAZY_HLO: dict[str, LazyHlo] = {
    **dict.fromkeys(["mm", "cat", "index_select"], LazyHlo()),
    # a module's parameters (requires_grad) reach torch.export as constants of the lazy graph
    "addmm_linear": LazyHlo(fails=r"Can't export tensors that require gradient"),
}


def _b(name="b", max=64):  # bounded
    return (name, 1, max)


def _u(name="n"):  # unbounded
    return (name, 1, None)


def r(rng, *shape):
    return rng.standard_normal(shape).astype(f32)


def case(
    name, module, make, dyn: dict, oracle, expect=(), sizes=(1, 2, 5, 64), export_n=3, oblivious=False, rtol=2e-4, atol=2e-5
):
    """One sample: ``dyn`` names each input's spec (dict order = input order)."""
    bounded = any("#stablehlo.bounds" in s for s in expect) or name in BOUNDED_ONCE
    return Sample(
        name,
        module,
        make,
        tuple(dyn.values()),
        oracle,
        tuple(sizes),
        rtol,
        atol,
        lazy=LAZY.get(name),
        lowered=Lowered(tuple(expect), export_n, oblivious, per_shape=True, bounded_once=bounded),
        lazy_hlo=LAZY_HLO.get(name),
        origin="lowering",
    )


def build() -> list[Sample]:
    C: list[Sample] = []
    add = C.append

    # expand with size arithmetic: x.expand(y.shape[0] * 2, -1, -1)
    add(
        case(
            "expand_symint",
            Fn(lambda s, x, y: x.expand(y.shape[0] * 2, -1, -1) + 1.0),
            lambda n, g: [r(g, 1, n, 4), r(g, n, 4)],
            {"x": {1: _u("m")}, "y": {0: _b()}},
            lambda p, x, y: [np.broadcast_to(d(x), (2 * y.shape[0],) + x.shape[1:]) + 1.0],
            expect=[
                "tensor<1x?x4xf32>",
                "#stablehlo.bounds<128",
                "stablehlo.dynamic_broadcast_in_dim",
                "stablehlo.get_dimension_size",
                "stablehlo.multiply",
            ],
        )
    )

    # elementwise tensor/scalar forms; one Dim shared by both inputs
    b = _b()
    add(
        case(
            "add_sub_mul_div",
            Fn(lambda s, x, y: (x + y, x - y, x * y, x / (y.abs() + 1), x + 2, x * 3.0, x / 2, x - 1.5, 2.0 - x)),
            lambda n, g: [r(g, n, 4), r(g, n, 4)],
            {"x": {0: b}, "y": {0: b}},
            lambda p, x, y: [
                d(x) + y,
                d(x) - y,
                d(x) * y,
                d(x) / (np.abs(d(y)) + 1),
                d(x) + 2,
                d(x) * 3,
                d(x) / 2,
                d(x) - 1.5,
                2.0 - d(x),
            ],
            expect=["tensor<?x4xf32, #stablehlo.bounds<64, ?>>"],
        )
    )
    add(
        case(
            "broadcast_binary",
            Fn(lambda s, x, v, c: (x * v, x + c, x.sum(1, keepdim=True) * x)),
            lambda n, g: [r(g, n, n + 1), r(g, n + 1), r(g, n, 1)],
            {"x": {0: _u(), 1: _u("m")}, "v": {0: _u("m")}, "c": {0: _u()}},
            lambda p, x, v, c: [d(x) * v, d(x) + c, d(x).sum(1, keepdims=True) * x],
            expect=["tensor<?x?xf32>"],
        )
    )
    add(
        case(
            "ne",
            Fn(lambda s, x, y: (x != 2, x != y, (x.float() != 0.0))),
            lambda n, g: [g.integers(0, 4, (n, 3)).astype(np.int64), g.integers(0, 4, (n, 3)).astype(np.int64)],
            {"x": {0: _u()}, "y": {0: _u()}},
            lambda p, x, y: [x != 2, x != y, x != 0],
            expect=["tensor<?x3xi1>", "tensor<?x3xi64>"],
        )
    )
    add(
        case(
            "gelu",
            Fn(lambda s, x: (F.gelu(x), F.gelu(x, approximate="tanh"))),
            lambda n, g: [r(g, n, 5) * 3],
            {"x": {0: _b()}},
            lambda p, x: [
                0.5 * d(x) * (1 + erf(d(x) / math.sqrt(2))),
                0.5 * d(x) * (1 + np.tanh(math.sqrt(2 / math.pi) * (d(x) + 0.044715 * d(x) ** 3))),
            ],
            expect=["#stablehlo.bounds<64, ?>"],
        )
    )
    add(
        case(
            "cumsum",
            Fn(lambda s, x, i: (torch.cumsum(x, 0), torch.cumsum(x, 1), torch.cumsum(i, 0))),
            lambda n, g: [r(g, n, 4), g.integers(-5, 5, (n,)).astype(np.int64)],
            {"x": {0: _u()}, "i": {0: _u()}},
            lambda p, x, i: [np.cumsum(d(x), 0), np.cumsum(d(x), 1), np.cumsum(i)],
            expect=["tensor<?x4xf32>", "stablehlo.dynamic_iota", "stablehlo.reduce_window"],
        )
    )
    # bounded: ceil(log2 64) = 6 unrolled scan steps, no while: the dynamic padder serves it
    add(
        case(
            "cumsum_bounded",
            Fn(lambda s, x: torch.cumsum(x, 0)),
            lambda n, g: [r(g, n, 3)],
            {"x": {0: _b()}},
            lambda p, x: [np.cumsum(d(x), 0)],
            expect=["tensor<?x3xf32, #stablehlo.bounds<64, ?>>", "stablehlo.gather"],
        )
    )
    add(
        case(
            "mean",
            Fn(lambda s, x: (x.mean(0), x.mean(1), x.mean(), x.mean((0, 2), keepdim=True))),
            lambda n, g: [r(g, n, 3, n + 1)],
            {"x": {0: _b(), 2: _u("m")}},
            lambda p, x: [d(x).mean(0), d(x).mean(1), d(x).mean(), d(x).mean((0, 2), keepdims=True)],
            expect=["tensor<?x3x?xf32, #stablehlo.bounds<64, ?, ?>>", "tensor<3x?xf32>"],
        )
    )
    add(
        case(
            "var",
            Fn(lambda s, x: (x.var(0), x.var(1, unbiased=False), x.var(0, correction=0, keepdim=True))),
            lambda n, g: [r(g, n, 4)],
            {"x": {0: _u()}},
            lambda p, x: [var(d(x), 0, 1), d(x).var(1), d(x).var(0, keepdims=True)],
            expect=["tensor<?x4xf32>"],
        )
    )
    add(
        case(
            "softmax",
            Fn(lambda s, x: (torch.softmax(x, 0), torch.softmax(x, -1), F.log_softmax(x, 0))),
            lambda n, g: [r(g, n, 6)],
            {"x": {0: _b()}},
            lambda p, x: [np_softmax(d(x), 0), np_softmax(d(x), -1), np.log(np_softmax(d(x), 0))],
            expect=["#stablehlo.bounds<64, ?>"],
        )
    )
    add(
        case(
            "addmm_linear",
            Fn(lambda s, x: s.lin(x), lin=torch.nn.Linear(4, 3)),
            lambda n, g: [r(g, n, 4)],
            {"x": {0: _b()}},
            lambda p, x: [d(x) @ p["lin.weight"].T + p["lin.bias"]],
            expect=["tensor<?x3xf32, #stablehlo.bounds<64, ?>>"],
        )
    )
    k = _u("k")
    add(
        case(
            "mm",
            Fn(lambda s, a, c: torch.mm(a, c)),
            lambda n, g: [r(g, n, n + 1), r(g, n + 1, n + 2)],
            {"a": {0: _u("m"), 1: k}, "c": {0: k, 1: _u("p")}},
            lambda p, a, c: [d(a) @ d(c)],
            expect=["tensor<?x?xf32>", "stablehlo.dot_general"],
        )
    )
    B, k2 = _u("B"), _u("k")
    add(
        case(
            "bmm",
            Fn(lambda s, a, c: torch.bmm(a, c)),
            lambda n, g: [r(g, n, n + 1, n + 2), r(g, n, n + 2, 3)],
            {"a": {0: B, 1: _u("m"), 2: k2}, "c": {0: B, 1: k2}},
            lambda p, a, c: [d(a) @ d(c)],
            expect=["tensor<?x?x?xf32>", "tensor<?x?x3xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )
    add(
        case(
            "cat",
            Fn(lambda s, x, y: (torch.cat([x, y], 0), torch.cat([x, x], 1))),
            lambda n, g: [r(g, n, 3), r(g, n + 2, 3)],
            {"x": {0: _u()}, "y": {0: _u("m")}},
            lambda p, x, y: [np.concatenate([x, y], 0), np.concatenate([x, x], 1)],
            expect=["tensor<?x3xf32>", "tensor<?x6xf32>"],
        )
    )
    add(
        case(
            "split_with_sizes",
            Fn(lambda s, x: (*torch.split(x, [1, 2, 3], 1), *x.split(4, 1))),
            lambda n, g: [r(g, n, 6)],
            {"x": {0: _b()}},
            lambda p, x: [x[:, :1], x[:, 1:3], x[:, 3:], x[:, :4], x[:, 4:]],
            expect=["tensor<?x2xf32, #stablehlo.bounds<64, ?>>"],
        )
    )
    add(
        case(
            "slice",
            Fn(lambda s, x: (x[1:], x[:, ::2], x[x.shape[0] // 2 :], x[:-1, 1:3], x.narrow(0, 1, x.shape[0] - 1))),
            lambda n, g: [r(g, n, 5)],
            {"x": {0: _u()}},
            lambda p, x: [x[1:], x[:, ::2], x[x.shape[0] // 2 :], x[:-1, 1:3], x[1:]],
            expect=["stablehlo.real_dynamic_slice", "tensor<?x3xf32>", "tensor<?x2xf32>"],
            oblivious=True,
        )
    )
    add(
        case(
            "select",
            Fn(lambda s, x: (x[:, 1], x[-1], x.select(0, 0), x[:, :, -1])),
            lambda n, g: [r(g, n, 4, 3)],
            {"x": {0: _u()}},
            lambda p, x: [x[:, 1], x[-1], x[0], x[:, :, -1]],
            expect=["tensor<?x3xf32>", "tensor<?x4xf32>"],
        )
    )
    add(
        case(
            "permute_transpose",
            Fn(lambda s, x: (x.permute(2, 0, 1), x.transpose(0, 1), x.t() if False else x.mT)),
            lambda n, g: [r(g, n, n + 1, 4)],
            {"x": {0: _b(), 1: _u("m")}},
            lambda p, x: [x.transpose(2, 0, 1), x.transpose(1, 0, 2), np.swapaxes(x, -1, -2)],
            expect=["tensor<4x?x?xf32, #stablehlo.bounds<?, 64, ?>>", "stablehlo.transpose"],
        )
    )
    add(
        case(
            "unsqueeze",
            Fn(lambda s, x: (x.unsqueeze(0), x.unsqueeze(-1), x[:, None, :])),
            lambda n, g: [r(g, n, 3)],
            {"x": {0: _u()}},
            lambda p, x: [x[None], x[..., None], x[:, None, :]],
            expect=["tensor<1x?x3xf32>", "tensor<?x3x1xf32>"],
        )
    )
    add(
        case(
            "view_arith",
            Fn(
                lambda s, x, y: (
                    x.view(x.shape[0] * x.shape[1], -1),
                    y.view(y.shape[0], y.shape[1] * y.shape[2], y.shape[3]),
                    x.reshape(-1),
                    x.flatten(0, 1) * 2,
                )
            ),
            lambda n, g: [r(g, n, n + 1, 4), r(g, n, n + 1, n + 2, 3)],
            {"x": {0: _b(), 1: _u("m")}, "y": {0: _u("s0"), 1: _u("s1"), 2: _u("s2")}},
            lambda p, x, y: [x.reshape(-1, 4), y.reshape(y.shape[0], -1, 3), x.reshape(-1), d(x).reshape(-1, 4) * 2],
            expect=["stablehlo.dynamic_reshape", "tensor<?x4xf32>", "tensor<?x?x3xf32>"],
            sizes=(1, 2, 5, 30),
        )
    )
    add(
        case(
            "embedding",
            Fn(lambda s, i, j: (s.emb(i), s.emb(j)), emb=torch.nn.Embedding(10, 4)),
            lambda n, g: [g.integers(0, 10, (n,)).astype(np.int64), g.integers(0, 10, (n, 2)).astype(np.int64)],
            {"i": {0: _b()}, "j": {0: _u()}},
            lambda p, i, j: [p["emb.weight"][i], p["emb.weight"][j]],
            expect=["tensor<?x4xf32, #stablehlo.bounds<64, ?>>", "stablehlo.gather"],
        )
    )
    add(
        case(
            "conv1d",
            Fn(lambda s, x: (s.c(x), s.c2(x)), c=torch.nn.Conv1d(3, 4, 3, padding=1), c2=torch.nn.Conv1d(3, 2, 2)),
            lambda n, g: [r(g, n, 3, n + 2)],
            {"x": {0: _u("B"), 2: _u("L")}},
            lambda p, x: [np_conv(d(x), p["c.weight"], p["c.bias"], pad=1), np_conv(d(x), p["c2.weight"], p["c2.bias"])],
            expect=["tensor<?x3x?xf32>", "tensor<?x4x?xf32>", "stablehlo.convolution"],
            oblivious=True,
        )
    )
    # a static batch, a bounded length, stride 2, padding 1 (the bounded executor masks the padding)
    add(
        case(
            "conv1d_strided",
            Fn(lambda s, x: s.c(x), c=torch.nn.Conv1d(3, 4, 3, stride=2, padding=1)),
            lambda n, g: [r(g, 2, 3, n + 2)],
            {"x": {2: _b("L", 66)}},
            lambda p, x: [np_conv(d(x), p["c.weight"], p["c.bias"], stride=2, pad=1)],
            expect=["tensor<2x3x?xf32, #stablehlo.bounds<?, ?, 66>>", "stablehlo.convolution"],
            oblivious=True,
        )
    )
    add(
        case(
            "conv2d",
            Fn(lambda s, x: s.c(x), c=torch.nn.Conv2d(2, 3, 3, padding=1)),
            lambda n, g: [r(g, n, 2, n + 1, n + 2)],
            {"x": {0: _b("B", 16), 2: _u("H"), 3: _u("W")}},
            lambda p, x: [np_conv(d(x), p["c.weight"], p["c.bias"], pad=1)],
            expect=["tensor<?x2x?x?xf32, #stablehlo.bounds<16, ?, ?, ?>>"],
            sizes=(1, 2, 5, 16),
        )
    )
    add(
        case(
            "layer_norm",
            Fn(lambda s, x: s.ln(x), ln=torch.nn.LayerNorm(4)),
            lambda n, g: [r(g, n, n + 1, 4)],
            {"x": {0: _u(), 1: _u("m")}},
            lambda p, x: [
                (d(x) - d(x).mean(-1, keepdims=True)) / np.sqrt(d(x).var(-1, keepdims=True) + 1e-5) * p["ln.weight"]
                + p["ln.bias"]
            ],
            expect=["tensor<?x?x4xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )

    def gn_oracle(p, x):
        N, Cc = x.shape[:2]
        xg = d(x).reshape(N, 2, -1)
        y = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
        sh = (1, Cc) + (1,) * (x.ndim - 2)
        return [y * p["gn.weight"].reshape(sh) + p["gn.bias"].reshape(sh)]

    add(
        case(
            "group_norm",
            Fn(lambda s, x: s.gn(x), gn=torch.nn.GroupNorm(2, 4)),
            lambda n, g: [r(g, n, 4, n + 1)],
            {"x": {0: _b("B"), 2: _u("L")}},
            gn_oracle,
            expect=["tensor<?x4x?xf32, #stablehlo.bounds<64, ?, ?>>"],
        )
    )
    add(
        case(
            "index_select",
            Fn(lambda s, x, i: (torch.index_select(x, 0, i), torch.index_select(x, 1, i % 3), x[i])),
            lambda n, g: [r(g, n + 2, 3), g.integers(0, 3, (n,)).astype(np.int64)],
            {"x": {0: _u("N")}, "i": {0: _u("E")}},
            lambda p, x, i: [x[i], x[:, i % 3], x[i]],
            expect=["tensor<?x3xf32>", "stablehlo.dynamic_gather"],
        )
    )

    E = _u("E")

    def gnn(s, x, src, dst):
        msg = torch.index_select(x, 0, src) * 0.5
        a = torch.zeros(x.shape[0], x.shape[1]).index_add(0, dst, msg)
        b_ = torch.zeros_like(x).scatter_add(0, dst.unsqueeze(1).expand(-1, x.shape[1]), msg)
        return a, b_

    def gnn_oracle(p, x, src, dst):
        out = np.zeros(x.shape)
        np.add.at(out, dst, d(x)[src] * 0.5)
        return [out, out]

    add(
        case(
            "index_add_scatter_add",
            Fn(gnn),
            lambda n, g: [
                r(g, n, 4),
                g.integers(0, n, (2 * n + 1,)).astype(np.int64),
                g.integers(0, n, (2 * n + 1,)).astype(np.int64),
            ],
            {"x": {0: _u("N")}, "src": {0: E}, "dst": {0: E}},
            gnn_oracle,
            expect=["tensor<?x4xf32>", "stablehlo.scatter"],
        )
    )
    return C
