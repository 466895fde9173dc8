"""Samples with what real exported programs use beyond the per-op ones (once the second half
of ``tests/stablehlo/cases_breadth.py``): norms over batch statistics, pools, resampling,
transposed convolution, more core ATen math, ``torch.cond``/``map``/``scan``.

As :mod:`.programs`: inputs scale with ``n``; the reference is torch eager.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch._higher_order_ops.map import map as hmap
from torch._higher_order_ops.scan import scan

from .programs import distinct, program, r
from .sample import Fn, Sample


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


def build() -> list[Sample]:
    P: list[Sample] = []
    add = P.append
    n0 = ("n", 0, None)
    n1 = ("n", 1, None)
    nb = ("n", 1, 64)

    add(
        program(
            "group_norm_dynamic_c",
            Fn(lambda s, x: F.group_norm(x, 2, eps=1e-5)),
            lambda n, g: [r(g, 3, 2 * n, 5)],
            ({1: ("c", 1, None, 2)},),
            expect=["tensor<3x?x5xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )
    add(
        program(
            "batch_statistics_norms",
            Fn(
                lambda s, x: (
                    F.instance_norm(x, eps=1e-5),
                    F.instance_norm(x, weight=torch.linspace(0.5, 2, 3), bias=torch.linspace(-1, 1, 3)),
                    F.batch_norm(x, None, None, training=True),
                )
            ),
            lambda n, g: [r(g, n + 1, 3, 4, 2 * n + 2)],
            ({0: ("b", 1, None), 3: ("w", 2, None)},),
            expect=["tensor<?x3x4x?xf32>"],
            sizes=(1, 2, 5, 30),
            export_n=3,
        )
    )
    add(
        program(
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
            ({2: ("h", 3, None), 3: ("w", 4, None)},),
            expect=["stablehlo.reduce_window", "tensor<2x3x?x?xi64>"],
            sizes=(1, 2, 5, 30),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        program(
            "pools_ceil_mode",
            Fn(
                lambda s, x: (
                    *F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                    F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
                    F.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False),
                )
            ),
            lambda n, g: [distinct(g, n, 2, 6, 7)],
            ({0: ("b", 1, None)},),
            expect=["stablehlo.reduce_window", "tensor<?x2x4x4xi64>"],
            sizes=(1, 2, 5, 30),
        )
    )
    add(
        program(
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
            ({0: ("b", 1, None), 2: ("h", 2, None)},),
            expect=["tensor<?x2x?x10xf32>", "tensor<?x2x7x9xf32>", "stablehlo.dynamic_gather"],
            sizes=(1, 2, 5, 30),
            export_n=3,
        )
    )
    add(
        program(
            "upsample_aa",
            Fn(
                lambda s, x: (
                    F.interpolate(x, size=(2 * x.shape[2], 3), mode="bicubic", antialias=True),
                    F.interpolate(x, size=(x.shape[2] + 1, 2), mode="bilinear", antialias=True),
                    torch.ops.aten._upsample_bicubic2d_aa.default(x, [4, x.shape[3] + 2], True),
                )
            ),
            lambda n, g: [r(g, n, 2, n + 1, 5)],
            ({0: ("b", 1, None), 2: ("h", 2, None)},),
            expect=["tensor<?x2x?x3xf32>", "stablehlo.reduce"],
            sizes=(1, 2, 5, 30),
            export_n=3,
        )
    )
    add(
        program(
            "conv_transpose",
            Fn(
                lambda s, x: (s.t1(x), s.t2(x)),
                t1=torch.nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1),
                t2=torch.nn.ConvTranspose1d(4, 6, 2, stride=1, groups=2, dilation=2),
            ),
            lambda n, g: [r(g, 2, 4, n + 1)],
            ({2: ("L", 2, None)},),
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
        program(
            "core_aten_more",
            Fn(_core_more, bn=bn),
            lambda n, g: [distinct(g, n, 4) * 3],
            ({0: ("n", 2, None)},),
            expect=["stablehlo.atan2", "stablehlo.reduce", "tensor<?xi64>", "tensor<?x12xf32>"],
            sizes=(2, 3, 7, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        program(
            "cond_size",
            Fn(_cond_size),
            lambda n, g: [r(g, n, 3), r(g, 3)],
            ({0: nb}, None),
            expect=["stablehlo.if", "tensor<?x3xf32, #stablehlo.bounds<64, ?>>"],
            sizes=(1, 4, 5, 64),
        )
    )
    add(
        program(
            "cond_data",
            Fn(_cond_data),
            lambda n, g: [r(g, n, 3) + (1.0 if n % 2 else -1.0)],
            ({0: n1},),
            expect=["stablehlo.if", "tensor<?x3xf32>"],
            sizes=(1, 2, 5, 40),
        )
    )
    add(
        program(
            "map",
            Fn(_map),
            lambda n, g: [r(g, n, 3), r(g, 3), r(g, 3, n + 1)],
            ({0: n0}, None, {1: ("m", 1, None)}),
            expect=["stablehlo.while", "stablehlo.dynamic_slice", "tensor<?x3xf32>", "tensor<3x?xf32>"],
            sizes=(1, 2, 3, 40),
            oblivious=True,
        )
    )
    add(
        program(
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
        program(
            "pad_to_multiple",
            Fn(lambda s, x: F.pad(x, (0, 0, 0, (-x.shape[1]) % 8))),
            lambda n, g: [r(g, 2, n, 3)],
            ({1: n1},),
            expect=["stablehlo.dynamic_pad", "stablehlo.subtract", "tensor<2x?x3xf32>"],
            sizes=(1, 2, 5, 8, 40),
        )
    )
    return P
