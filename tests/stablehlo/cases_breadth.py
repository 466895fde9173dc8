"""Programs with what real exported programs use beyond the per-op cases:
SymInt/SymBool/SymFloat arithmetic, runtime assertions, scalar inputs,
sorting, pools, resampling, scatter forms, transposed convolution,
``torch.cond``/``map``/``scan``.

Each program: a torch module, an input maker ``make(n, rng)`` (every dynamic
dim scales with ``n``; n = 0 where the program allows it), the
``dynamic_shapes`` and substrings the lowered text must contain (`?` dims).
The reference is torch eager on the same inputs (these ops' semantics are
torch's: tie order, index conventions, resampling rules).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch._higher_order_ops.map import map as hmap
from torch._higher_order_ops.scan import scan
from torch.export import Dim

from .cases_stablehlo import Fn  # one module wrapper for both case tables


def _masked_put(s, x):
    y = x.clone()
    y[x > 0.5] = 0.0
    return y, torch.index_put(x, (x < 0,), torch.tensor(2.0), accumulate=True)


f32 = np.float32


@dataclass
class Program:
    name: str
    module: torch.nn.Module
    make: Callable  # (n, rng) -> list of np.ndarray / Python scalars
    dyn: tuple  # dynamic_shapes, one entry per input
    expect: Sequence[str] = ()
    sizes: Sequence[int] = (1, 2, 5, 40)
    export_n: int = 5
    oblivious: bool = False
    export_kw: dict = field(default_factory=dict)
    rtol: float = 1e-4
    atol: float = 1e-5


def r(g, *shape):
    return g.standard_normal(shape).astype(f32)


def distinct(g, *shape):
    """Distinct values (no ties: sort/topk/max-pool indices are then unambiguous)."""
    n = int(np.prod(shape))
    return g.permutation(max(n, 1))[:n].reshape(shape).astype(f32) / 7.0 - 1.0


DEFERRED = {"prefer_deferred_runtime_asserts_over_guards": True}


def _symint_math(s, x):
    k = x.shape[0]
    kf = torch.sym_float(k)
    return (
        x * (k**2) + (k >> 1) + (k << 2) + torch.sym_max(k, 5) - torch.sym_min(k, 3),
        x * (kf / 3.0) + torch.sym_sqrt(k) + math.floor(k / 3) + math.ceil(k / 4) + round(k / 4),
        torch.full((2,), k > 3),
        torch.full((2,), k != 4),
    )


def _asserted(s, x):
    k = x.shape[0]
    torch._check(k % 2 == 0)
    torch._check(k != 10)
    return x.view(k // 2, 2, x.shape[1]) * 2.0


def _slice_assign(s, x, v):
    y = torch.slice_scatter(x, v, 0, 1, 1 + v.shape[0])
    y[::2, 0] = -1.0  # in-place slice assignments -> slice_scatter
    y[-2:] = y[-2:] * 0.5
    return y


def _pad_sequence(s, a, b):
    return torch.nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0)


def _advanced(s, x, i, j):
    y = x.clone()
    y[i, :, j] = 5.0  # index tensors around a slice: the indexed dims go first
    z = x.clone()
    z[:, 1, j] += 1.0  # a leading slice, then adjacent index dims
    return x[i, :, j], x[i, 1], x[:, 2, j], x[i, j % 3], y, z


def _core_more(s, x):
    a = x.clamp(-0.9, 0.9)
    return (
        x.argmax(1),
        x.argmin(0),
        *x.max(1),
        *x.min(0, keepdim=True),
        x.prod(1),
        x.abs().log2(),
        x.abs().log10(),
        torch.atan2(x, x + 1),
        torch.fmod(x, 0.3),
        x.tan(),
        a.asin(),
        a.acos(),
        x.atan(),
        x.sinh(),
        x.cosh(),
        x.trunc(),
        x.isnan(),
        (x / 0).isinf(),
        F.hardtanh(x),
        F.leaky_relu(x, 0.1),
        F.elu(x),
        *torch.var_mean(x, 0),
        x.norm(dim=1),
        torch.linalg.vector_norm(x, 3, 0),
        x.repeat(2, 3),
        s.bn(x[..., None])[..., 0],
    )


def _cond_size(s, x, y):
    return torch.cond(x.shape[0] > 4, lambda x, y: x.sin() + y, lambda x, y: x.cos() * 2 - y, (x, y))


def _cond_data(s, x):
    return torch.cond(x.sum() > 0, lambda x: x * 2.0, lambda x: x.abs() + 1.0, (x,))


def _map(s, xs, y, z):
    return hmap(lambda x, y: x * 2 + y.sum() + x.max(), xs, y), hmap(lambda r: r.cumsum(0) * 2, z)


def _scan(s, x):
    def f(c, xi):
        c = c + xi
        return c, c * xi

    return scan(f, torch.zeros(3), x)


def build() -> list[Program]:
    P: list[Program] = []
    add = P.append
    n0 = Dim("n", min=0)
    n1 = Dim("n", min=1)
    nb = Dim("n", min=1, max=64)

    add(
        Program(
            "symint_math",
            Fn(_symint_math),
            lambda n, g: [r(g, n, 3)],
            ({0: n1},),
            # (no shift ops: `k << 2` / `k >> 1` lower as 4*k and k // 2, which shape refinement folds)
            expect=[
                "tensor<?x3xf32>",
                "stablehlo.power",
                "stablehlo.minimum",  # round(k / 4) in the size algebra: its tie test (engines.sizes.rational)
                "stablehlo.sqrt",
                "stablehlo.compare GT",
                "tensor<f64>",
            ],
            sizes=(1, 2, 4, 9, 40),
        )
    )
    add(
        Program(
            "runtime_asserts",
            Fn(_asserted),
            lambda n, g: [r(g, 2 * n, 3)],
            ({0: n1},),
            expect=["stablehlo.custom_call @shape_assertion", "Ne(s"],
            sizes=(2, 4, 20),
            export_n=3,
            export_kw=DEFERRED,
        )
    )
    add(
        Program(
            "scalar_inputs",
            Fn(lambda s, x, k, f: (x * k + f, (x * 0 + k * 2 - 1) // 3, x * (k > 4))),
            lambda n, g: [r(g, n + 3), n + 1, 2.5],
            ({0: n0}, Dim.DYNAMIC, None),
            expect=["tensor<i64>", "tensor<f64>", "tensor<?xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=2,
            oblivious=True,
        )
    )
    add(
        Program(
            "slice_scatter",
            Fn(_slice_assign),
            lambda n, g: [r(g, n + 3, 3), r(g, n, 3)],
            ({0: Dim("n", min=3)}, {0: Dim("m", min=0)}),
            expect=["stablehlo.dynamic_update_slice", "stablehlo.scatter", "tensor<?x3xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=2,
            oblivious=True,
        )
    )
    add(
        Program(
            "pad_sequence",
            Fn(_pad_sequence),
            lambda n, g: [r(g, n, 2), r(g, 2 * n + 1, 2)],
            ({0: Dim("a", min=0)}, {0: Dim("b", min=1)}),
            expect=["stablehlo.dynamic_pad", "tensor<2x?x2xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "cumsum_dynamic",
            Fn(lambda s, x, i: (torch.cumsum(x, 0), torch.cumsum(i, 0), torch.cumsum(x, 1))),
            lambda n, g: [r(g, n, 3), g.integers(-9, 9, (n,)).astype(np.int64)],
            ({0: n0}, {0: n0}),
            expect=["stablehlo.gather", "tensor<?x3xf32>", "tensor<?xi64>"],
            sizes=(0, 1, 2, 5, 100),
            oblivious=True,
            atol=1e-4,
        )
    )
    add(
        Program(
            "sort_topk",
            Fn(
                lambda s, x: (
                    *torch.sort(x, 0),
                    torch.argsort(x, 1, descending=True),
                    *torch.topk(x, 2, dim=1),
                    *torch.topk(x, 1, dim=0, largest=False),
                )
            ),
            lambda n, g: [distinct(g, n, 4)],
            ({0: n1},),
            expect=["stablehlo.sort", "tensor<?x2xf32>", "tensor<?x4xi64>", "tensor<1x4xi64>"],
        )
    )
    add(
        Program(
            "index_put_mask_one_value",  # x[mask] = v, v one value: a select (ChebConv's w[w == inf] = 0)
            Fn(_masked_put),
            lambda n, g: [r(g, n + 1, 3)],
            ({0: Dim("N", min=1)},),
            expect=["stablehlo.select", "tensor<?x3xf32>"],
        )
    )
    add(
        Program(
            "index_put_multi",
            Fn(
                lambda s, x, i, j, v: (torch.index_put(x, (i, j), v, accumulate=True), torch.index_put(x, (i,), v[:, None] * 2.0))
            ),
            lambda n, g: [
                r(g, n + 2, 4),
                g.integers(0, n + 2, (2 * n,)).astype(np.int64),
                g.integers(0, 4, (2 * n,)).astype(np.int64),
                r(g, 2 * n),
            ],
            ({0: Dim("N", min=1)}, {0: Dim("E", min=0)}, {0: Dim("E", min=0)}, {0: Dim("E", min=0)}),
            expect=["stablehlo.scatter", "tensor<?x4xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "advanced_indexing",
            Fn(_advanced),
            lambda n, g: [
                r(g, n + 2, 3, 4),
                g.integers(0, n + 2, (2 * n,)).astype(np.int64),
                g.integers(0, 4, (2 * n,)).astype(np.int64),
            ],
            ({0: Dim("N", min=2)}, {0: Dim("E", min=0)}, {0: Dim("E", min=0)}),
            expect=["stablehlo.gather", "stablehlo.scatter", "tensor<?x3xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "scatter_reduce",
            Fn(
                lambda s, x, i, v: tuple(
                    x.scatter_reduce(0, i[:, None].expand(-1, 4), v, red, include_self=inc)
                    for red in ("sum", "prod", "amax", "amin", "mean")
                    for inc in (True, False)
                )
            ),
            lambda n, g: [r(g, n + 2, 4), g.integers(0, n + 2, (2 * n,)).astype(np.int64), r(g, 2 * n, 4)],
            ({0: Dim("N", min=2)}, {0: Dim("E", min=0)}, {0: Dim("E", min=0)}),
            expect=["stablehlo.scatter", "tensor<?x4xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "group_norm_dynamic_c",
            Fn(lambda s, x: F.group_norm(x, 2, eps=1e-5)),
            lambda n, g: [r(g, 3, 2 * n, 5)],
            ({1: 2 * Dim("c", min=1)},),
            expect=["tensor<3x?x5xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )
    add(
        Program(
            "batch_statistics_norms",
            Fn(
                lambda s, x: (
                    F.instance_norm(x, eps=1e-5),
                    F.instance_norm(x, weight=torch.linspace(0.5, 2, 3), bias=torch.linspace(-1, 1, 3)),
                    F.batch_norm(x, None, None, training=True),
                )
            ),
            lambda n, g: [r(g, n + 1, 3, 4, 2 * n + 2)],
            ({0: Dim("b", min=1), 3: Dim("w", min=2)},),
            expect=["tensor<?x3x4x?xf32>"],
            sizes=(1, 2, 5, 30),
            export_n=3,
        )
    )
    add(
        Program(
            "pools",
            Fn(
                lambda s, x: (
                    *F.max_pool2d(x, 2, return_indices=True),
                    *F.max_pool2d(x, 3, 2, 1, return_indices=True),
                    F.avg_pool2d(x, 2),
                    F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                    F.adaptive_avg_pool2d(x, (3, 2)),
                    F.adaptive_avg_pool1d(x[0], 5),
                )
            ),
            lambda n, g: [distinct(g, 2, 3, n + 3, 2 * n + 4)],
            ({2: Dim("h", min=3), 3: Dim("w", min=4)},),
            expect=["stablehlo.reduce_window", "tensor<2x3x?x?xi64>"],
            sizes=(1, 2, 5, 30),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "pools_ceil_mode",
            Fn(
                lambda s, x: (
                    *F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                    F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
                    F.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False),
                )
            ),
            lambda n, g: [distinct(g, n, 2, 6, 7)],
            ({0: Dim("b", min=1)},),
            expect=["stablehlo.reduce_window", "tensor<?x2x4x4xi64>"],
            sizes=(1, 2, 5, 30),
        )
    )
    add(
        Program(
            "upsample",
            Fn(
                lambda s, x: (
                    F.interpolate(x, scale_factor=2, mode="nearest"),
                    F.interpolate(x, scale_factor=3, mode="bilinear"),
                    F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
                    F.interpolate(x[:, :, 0], scale_factor=2, mode="linear"),
                )
            ),
            lambda n, g: [r(g, n, 2, n + 1, 5)],
            ({0: Dim("b", min=1), 2: Dim("h", min=2)},),
            expect=["tensor<?x2x?x10xf32>", "tensor<?x2x7x9xf32>", "stablehlo.dynamic_gather"],
            sizes=(1, 2, 5, 30),
            export_n=3,
        )
    )
    add(
        Program(
            "conv_transpose",
            Fn(
                lambda s, x: (s.t1(x), s.t2(x)),
                t1=torch.nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1),
                t2=torch.nn.ConvTranspose1d(4, 6, 2, stride=1, groups=2, dilation=2),
            ),
            lambda n, g: [r(g, 2, 4, n + 1)],
            ({2: Dim("L", min=2)},),
            expect=["stablehlo.convolution", "lhs_dilate = [2]", "tensor<2x3x?xf32>"],
            sizes=(1, 2, 5, 40),
            export_n=3,
            oblivious=True,
        )
    )
    bn = torch.nn.BatchNorm1d(4).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    add(
        Program(
            "core_aten_more",
            Fn(_core_more, bn=bn),
            lambda n, g: [distinct(g, n, 4) * 3],
            ({0: Dim("n", min=2)},),
            expect=["stablehlo.atan2", "stablehlo.reduce", "tensor<?xi64>", "tensor<?x12xf32>"],
            sizes=(2, 3, 7, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        Program(
            "cond_size",
            Fn(_cond_size),
            lambda n, g: [r(g, n, 3), r(g, 3)],
            ({0: nb}, None),
            expect=["stablehlo.if", "tensor<?x3xf32, #stablehlo.bounds<64, ?>>"],
            sizes=(1, 4, 5, 64),
        )
    )
    add(
        Program(
            "cond_data",
            Fn(_cond_data),
            lambda n, g: [r(g, n, 3) + (1.0 if n % 2 else -1.0)],
            ({0: n1},),
            expect=["stablehlo.if", "tensor<?x3xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )
    add(
        Program(
            "map",
            Fn(_map),
            lambda n, g: [r(g, n, 3), r(g, 3), r(g, 3, n + 1)],
            ({0: n0}, None, {1: Dim("m", min=1)}),
            expect=["stablehlo.while", "stablehlo.dynamic_slice", "tensor<?x3xf32>", "tensor<3x?xf32>"],
            sizes=(1, 2, 3, 40),
            oblivious=True,
        )
    )
    add(
        Program(
            "scan",
            Fn(_scan),
            lambda n, g: [r(g, n, 3)],
            ({0: n0},),
            expect=["stablehlo.while", "stablehlo.dynamic_update_slice", "tensor<?x3xf32>"],
            sizes=(1, 2, 3, 40),
            oblivious=True,
        )
    )
    # pad T up to a multiple of 8: the high padding (-t) % 8 negates a size, which
    # must reach XLA as 0 - t (shape refinement has no folder for negate)
    add(
        Program(
            "pad_to_multiple",
            Fn(lambda s, x: F.pad(x, (0, 0, 0, (-x.shape[1]) % 8))),
            lambda n, g: [r(g, 2, n, 3)],
            ({1: n1},),
            expect=["stablehlo.dynamic_pad", "stablehlo.subtract", "tensor<2x?x3xf32>"],
            sizes=(1, 2, 5, 8, 40),
        )
    )
    return P


PROGRAMS = build()
