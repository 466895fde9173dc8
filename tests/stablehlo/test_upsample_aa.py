"""Antialiased upsampling over dynamic image sides
(``engines/stablehlo/lowering/ops/upsample_aa.py``): bilinear and bicubic, down and
up, align_corners both ways, scale factors and sizes that are expressions of the
input's sides, through ``F.interpolate(antialias=True)`` (the ``.vec`` overloads)
and the ``.default`` overloads called directly. Bounded (one XLA compile, NaN host
padding) and unbounded, equal to torch eager at odd, unequal sides."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engines.stablehlo import BoundedXlaProgram, Module, XlaExecutor, lower

aten = torch.ops.aten
SIZES = ((2, 7, 9), (3, 11, 5), (4, 16, 13), (2, 30, 31))
#: timm ViT's embedding width scale: XLA's CPU compiler got a product-and-sum width pass
#: wrong from 48 channels on (2 were right)
CHANNELS = 64


class UpsampleAA(torch.nn.Module):
    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        return (
            F.interpolate(x, size=(7, 5), mode="bilinear", antialias=True),
            F.interpolate(x, size=(2 * h, w + 3), mode="bicubic", antialias=True),
            F.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True),
            F.interpolate(x, scale_factor=(1.5, 0.75), mode="bilinear", antialias=True),
            F.interpolate(x, size=(16, 16), mode="bicubic", antialias=True, align_corners=True),
            F.interpolate(x, size=(3, 3), mode="bilinear", antialias=True, align_corners=True),
            aten._upsample_bilinear2d_aa.default(x, [3, 3], False, 1.7, 0.9),  # scales that disagree with the size
            aten._upsample_bilinear2d_aa.default(x, [3, 3], True, 1.7, 0.9),
            aten._upsample_bicubic2d_aa.default(x, [h, 5], False),  # an unchanged side: copied
        )


def _export():
    from engines.torch_export_tools import export_oblivious_retry

    b, h, w = (torch.export.Dim(n, min=lo, max=hi) for n, lo, hi in (("B", 2, 4), ("H", 3, 32), ("W", 3, 32)))
    x = torch.randn(3, CHANNELS, 11, 9)
    return export_oblivious_retry(
        lambda **o: torch.export.export(UpsampleAA(), (x,), dynamic_shapes=({0: b, 2: h, 3: w},), strict=False, **o)
    )


@pytest.mark.parametrize(
    ("bounded", "decompose"),
    [(True, True), (False, True), (False, False)],
    ids=["bounded", "unbounded", "unbounded-undecomposed"],
)
def test_antialiased_upsample_over_dynamic_sides_matches_torch(bounded, decompose):
    text = lower(_export(), bounded=bounded, decompose=decompose)
    compiles = []
    prog = BoundedXlaProgram(Module(text, "upsample_aa"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    ex = XlaExecutor()
    for b, h, w in SIZES:
        x = np.random.default_rng(h * w).standard_normal((b, CHANNELS, h, w)).astype(np.float32)
        got = prog(*prog.convert([x])).numpy() if bounded else ex.run(text, [x])
        want = [t.numpy() for t in UpsampleAA()(torch.from_numpy(x))]
        assert len(got) == len(want) == 9
        for i, (g, e) in enumerate(zip(got, want, strict=True)):
            where = f"output {i} at (B, H, W) = {(b, h, w)}"
            assert g.shape == e.shape, f"{where}: shape {g.shape}, torch {e.shape}"
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=where)
    if bounded:
        assert len(compiles) == 1 and compiles[0].startswith("bounded entry of"), compiles
    else:
        assert ex.compile_count() == len(SIZES)


def test_integer_input_is_refused_by_name():
    from conformance.op_samples import Fn
    from engines.stablehlo.lowering.builder import LoweringError

    x = torch.randint(0, 255, (1, 1, 6, 6), dtype=torch.uint8)
    ep = torch.export.export(Fn(lambda self, x: aten._upsample_bilinear2d_aa.default(x, [3, 3], False)), (x,), strict=False)
    with pytest.raises(LoweringError, match="antialiased bilinear upsampling of ui8"):
        lower(ep, bounded=False)


class PosEmbed(torch.nn.Module):
    """timm ViT's position-embedding resize (as ``harness minify`` reduced the zoo case): a
    static 4x4 grid of 64 channels, bicubic to the image's patch grid (side // 16)."""

    def forward(self, x, grid):
        n = x.shape[2] // 16
        return aten._upsample_bicubic2d_aa.vec(grid, [n, n], False, None), aten._upsample_bicubic2d_aa.vec(
            grid, [4, n], False, None
        )


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "unbounded"])
def test_a_static_grid_resized_to_the_images_grid_matches_torch(bounded):
    p = torch.export.Dim("p16", min=2, max=8)
    grid = torch.randn(1, CHANNELS, 4, 4)
    ep = torch.export.export(
        PosEmbed(), (torch.randn(2, 3, 64, 64), grid), dynamic_shapes=({2: 16 * p, 3: 16 * p}, None), strict=False
    )
    text = lower(ep, bounded=bounded)
    prog = BoundedXlaProgram(Module(text, "pos_embed"), pad_value=np.nan) if bounded else None
    ex = XlaExecutor()
    for side in (64, 96, 128, 48):
        x = np.zeros((2, 3, side, side), np.float32)
        got = prog(*prog.convert([x, grid.numpy()])).numpy() if prog else ex.run(text, [x, grid.numpy()])
        for i, (g, e) in enumerate(zip(got, PosEmbed()(torch.from_numpy(x), grid), strict=True)):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"output {i} at side {side}")
