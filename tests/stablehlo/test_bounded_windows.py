"""Windowed ops over a dynamic image side on the bounded executor
(``engines/stablehlo/execution/padder_window.py``): convolutions (strided,
dilated, padded, grouped, transposed) and pools (max with indices, average,
ceil mode, adaptive), each family one module generated from a parameter grid,
with a dynamic batch and two independent dynamic sides. One XLA compile serves
every size; the host padding is NaN, so a window that reads past a live size
shows up; every output equals torch eager at odd sizes (H != W)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engines.stablehlo import BoundedXlaProgram, Module, lower
from engines.stablehlo.execution.padder_rewrite import bound_entry

#: (batch, H, W) of the sweep: unequal sides, odd but for the last (at the bounds, 4 and 16)
SIZES = ((2, 7, 9), (3, 11, 5), (4, 16, 13))
#: the pools' sweep: odd sides only (torch.export asserts the parity of the traced sides for ceil_mode)
ODD_SIZES = ((2, 7, 9), (3, 11, 5), (4, 15, 13))
CHANNELS = 4


def _conv_grid():
    """conv2d (kernel, stride, padding, dilation, groups): every combination."""
    return list(itertools.product((1, 3), (1, 2), (0, 1), (1, 2), (1, 2)))


def _transposed_grid():
    """conv_transpose2d (kernel, stride, padding, output_padding, dilation, groups), output_padding < stride."""
    return [g for g in itertools.product((2, 3), (1, 2), (0, 1), (0, 1), (1, 2), (1, 2)) if g[3] < g[1]]


def _pool_grid():
    """pools (kernel, stride, padding, dilation, ceil_mode); torch needs padding <= kernel // 2."""
    return [g for g in itertools.product((2, 3), (1, 2), (0, 1), (1, 2), (False, True)) if g[2] <= g[0] // 2]


class Convs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.grid = _conv_grid()
        self.convs = torch.nn.ModuleList(
            torch.nn.Conv2d(CHANNELS, 2 * g, k, stride=s, padding=p, dilation=d, groups=g) for k, s, p, d, g in self.grid
        )

    def forward(self, x):
        return tuple(c(x) for c in self.convs)


class Transposed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.grid = _transposed_grid()
        self.convs = torch.nn.ModuleList(
            torch.nn.ConvTranspose2d(CHANNELS, 2 * g, k, stride=s, padding=p, output_padding=op, dilation=d, groups=g)
            for k, s, p, op, d, g in self.grid
        )

    def forward(self, x):
        return tuple(c(x) for c in self.convs)


class Pools(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = _pool_grid()

    def forward(self, x):
        out = []
        for k, s, p, d, ceil in self.grid:
            out.extend(F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True))
            if d == 1:  # avg_pool2d has no dilation; count_include_pad both ways
                out.append(F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=ceil))
                out.append(F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=not ceil))
        out.append(F.adaptive_avg_pool2d(x, (3, 2)))
        out.append(F.adaptive_avg_pool2d(x, 1))
        return tuple(out)


def _export(module):
    from engines.torch_export_tools import export_oblivious_retry

    b, h, w = (torch.export.Dim(n, min=lo, max=hi) for n, lo, hi in (("B", 2, 4), ("H", 5, 16), ("W", 5, 16)))
    x = torch.randn(3, CHANNELS, 11, 9)
    with torch.no_grad():
        return export_oblivious_retry(
            lambda **o: torch.export.export(module, (x,), dynamic_shapes=({0: b, 2: h, 3: w},), strict=False, **o)
        )


@pytest.mark.parametrize("family", [Convs, Transposed, Pools], ids=lambda f: f.__name__.lower())
def test_windows_over_dynamic_sides_compile_once_and_match_torch(family):
    module = family().eval()
    text = lower(_export(module), bounded=True)
    rewritten = bound_entry(text, family.__name__).rewritten
    op = "stablehlo.reduce_window" if family is Pools else "stablehlo.convolution"
    assert rewritten.get(op, 0) >= len(module.grid), rewritten  # every window over a side, not the padder
    compiles = []
    prog = BoundedXlaProgram(Module(text, family.__name__), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    for b, h, w in ODD_SIZES if family is Pools else SIZES:
        x = np.random.default_rng(h * w).standard_normal((b, CHANNELS, h, w)).astype(np.float32)
        got = prog(*prog.convert([x])).numpy()
        with torch.no_grad():
            want = [t.numpy() for t in module(torch.from_numpy(x))]
        assert len(got) == len(want)
        for i, (g, e) in enumerate(zip(got, want, strict=True)):
            where = f"{family.__name__} output {i} at (B, H, W) = {(b, h, w)}"
            assert g.shape == e.shape, f"{where}: shape {g.shape}, torch {e.shape}"
            if e.dtype == np.int64:  # max-pool indices: exact
                np.testing.assert_array_equal(g, e, err_msg=where)
            else:
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=where)
    assert len(compiles) == 1 and compiles[0].startswith("bounded entry of"), compiles
