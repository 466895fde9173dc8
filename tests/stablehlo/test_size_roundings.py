"""Slices bounded by roundings of sizes -- ``round(n / 3)``, ``math.ceil(n / 4)``,
``math.floor``, true division, ``//``, ``%``, shifts, combined -- generated from a
table of size expressions: torch.export traces each (``RoundToInt(IntTrueDiv(s, 3))``,
``CeilToInt(0.5*ToFloat(s))``, ...), the size algebra reads it
(:mod:`engines.sizes.rational`), and the bounded and unbounded XLA executors give
torch eager's shapes and values at every size (one compile bounded)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engines.stablehlo import XlaExecutor, lower

from .test_size_classes import BOUND, _export, _flat, _slices

SIZES = (2, 5, 9, 15, 20, 33, BOUND)

#: size expressions of the dynamic dim n, each a slice stop and start of x and cat([x, x])
ROUNDED = {
    "round_div3": lambda n: round(n / 3),  # ties at n = 3k + 1.5 never; half-even at /2 and /4
    "round_div2": lambda n: round(n / 2),
    "round_div4_plus1": lambda n: round((n + 2) / 4),
    "ceil_div4": lambda n: math.ceil(n / 4),
    "floor_div3": lambda n: math.floor(n / 3),
    "ceil_half": lambda n: math.ceil(n * 0.5),
    "round_mul_1p5_div4": lambda n: round(n * 1.5 / 4),
    "trunc_half": lambda n: torch.sym_int(n * 0.5) if isinstance(n, torch.SymInt) else int(n * 0.5),
    "round_plus_floordiv": lambda n: round(n / 3) + n // 4,
    "ceil_minus_mod": lambda n: math.ceil(n / 3) - n % 3,
    "round_shr": lambda n: round((n >> 1) / 3),
    "floor_of_truediv_sum": lambda n: math.floor(n / 2 + n / 4),
}


@pytest.mark.parametrize("mode", ["bounded", "unbounded"])
def test_slices_by_rounded_sizes_are_torchs(mode):
    """All table entries in one program (4 slices each): torch's shapes and values
    at every size of the sweep; one XLA compile bounded, one per size unbounded."""
    progs = {name: _slices(f) for name, f in ROUNDED.items()}

    def prog(x):
        return [o for p in progs.values() for o in p(x)]

    text = lower(_export(prog), bounded=mode == "bounded")
    ex = XlaExecutor()
    labels = [f"{name}.{s}" for name in ROUNDED for s in ("x[:k]", "x[k:]", "xx[:k]", "xx[k:]")]
    for n in SIZES:
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        want = [w.numpy() for w in _flat(prog(torch.from_numpy(x)))]
        got = ex.run(text, [x])
        assert len(got) == len(want) == len(labels)
        for label, g, w in zip(labels, got, want, strict=True):
            assert g.shape == w.shape, f"{label} {mode} n={n}: shape {g.shape}, torch {w.shape}"
            np.testing.assert_array_equal(g, w, err_msg=f"{label} {mode} n={n}")
    assert ex.compile_count() == (1 if mode == "bounded" else len(SIZES))
