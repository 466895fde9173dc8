"""Upsampling over a dynamic image side (``engines/stablehlo/lowering/ops/pool.py``):
nearest and bilinear, align_corners both ways, scale factors (integer and
fractional) and explicit sizes, through ``F.interpolate`` (the ``.vec``
overloads) and the ``.default`` overloads called directly; the cases are
generated from a grid, one module holds them all. Bounded (one XLA compile,
NaN host padding) and unbounded, equal to torch eager at odd, unequal sides."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engines.stablehlo import BoundedXlaProgram, Module, XlaExecutor, lower

aten = torch.ops.aten
SIZES = ((2, 7, 9), (3, 11, 5), (4, 16, 13))


def _grid():
    """(mode, align_corners, scale_factor, size) of F.interpolate."""
    out = []
    for mode, target in itertools.product(
        ("nearest", "bilinear"), ((2, None), (3, None), (1.5, None), (None, (7, 9)), (None, (20, 5)))
    ):
        for align in (None,) if mode == "nearest" else (False, True):
            out.append((mode, align, *target))
    return out


GRID = _grid()


class Upsample(torch.nn.Module):
    def forward(self, x):
        out = [F.interpolate(x, size=size, scale_factor=sf, mode=m, align_corners=ac) for m, ac, sf, size in GRID]
        h, w = x.shape[2], x.shape[3]
        out += [  # the .default overloads: an output size, a scale per dim or none
            aten.upsample_bilinear2d.default(x, [2 * h, 2 * w], False, 2.0, 2.0),
            aten.upsample_bilinear2d.default(x, [13, 6], True),
            aten.upsample_bilinear2d.default(x, [h + 3, w], False, scales_w=1.0),
            aten.upsample_nearest2d.default(x, [2 * h, 3 * w], 2.0, 3.0),
            aten.upsample_nearest2d.default(x, [5, 17]),
        ]
        return tuple(out)


def _export():
    from engines.torch_export_tools import export_oblivious_retry

    b, h, w = (torch.export.Dim(n, min=lo, max=hi) for n, lo, hi in (("B", 2, 4), ("H", 3, 16), ("W", 3, 16)))
    x = torch.randn(3, 2, 11, 9)
    return export_oblivious_retry(
        lambda **o: torch.export.export(Upsample(), (x,), dynamic_shapes=({0: b, 2: h, 3: w},), strict=False, **o)
    )


# decompose=False keeps the .default overloads (run_decompositions turns them into index ops)
@pytest.mark.parametrize(
    ("bounded", "decompose"), [(True, True), (True, False), (False, True)], ids=["bounded", "bounded-undecomposed", "unbounded"]
)
def test_upsample_over_dynamic_sides_matches_torch(bounded, decompose):
    ep = _export()
    text = lower(ep, bounded=bounded, decompose=decompose)
    compiles = []
    prog = BoundedXlaProgram(Module(text, "upsample"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    ex = XlaExecutor()
    for b, h, w in SIZES:
        x = np.random.default_rng(h * w).standard_normal((b, 2, h, w)).astype(np.float32)
        got = prog(*prog.convert([x])).numpy() if bounded else ex.run(text, [x])
        want = [t.numpy() for t in Upsample()(torch.from_numpy(x))]
        assert len(got) == len(want) == len(GRID) + 5
        for i, (g, e) in enumerate(zip(got, want, strict=True)):
            where = f"output {i} ({GRID[i] if i < len(GRID) else 'a .default overload'}) at (B, H, W) = {(b, h, w)}"
            assert g.shape == e.shape, f"{where}: shape {g.shape}, torch {e.shape}"
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=where)
    if bounded:
        assert len(compiles) == 1 and compiles[0].startswith("bounded entry of"), compiles
    else:
        assert ex.compile_count() == len(SIZES)
