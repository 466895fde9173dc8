"""Ops whose size is a data-dependent count, beyond ``x[mask]``: a boolean-mask
``index_put`` whose values are one row per True (ChebConv's ``w[mask] = ...``) and
``nonzero`` (MFConv's degree buckets). Each program is exported with a dynamic,
bounded dim and runs bounded on XLA (one compile for every size and every count,
padding NaN) equal to torch eager, masks drawn at several densities (none, some,
all True): a count of 0 and a count at the bound are both served."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from engines.stablehlo import BoundedXlaProgram, Module, lower

pytestmark = pytest.mark.slow  # (an XLA compile per program)

N_MAX = 16


def _put_scaled(x):  # ChebConv: w[w == inf] = 0, then the rows of a mask rewritten from themselves
    w = x.clone()
    m = x > 0.3
    w[m] = x[m] * 2 + 1
    return w


def _put_rows(x):  # rows picked by their first column, rewritten as a block
    m = x[:, 0] > 0
    y = x.clone()
    y[m] = y[m] * 3 - 1
    return y


def _put_accumulate(x):
    m = x[:, 1] < 0
    return torch.index_put(x, (m,), x[m] * 2, accumulate=True)


def _nonzero_rows(x):  # MFConv: the nodes of each degree, by nonzero, then gathered
    idx = (x[:, 0] > 0).nonzero().view(-1)
    return x[idx].sum(0) + idx.numel(), idx


def _nonzero_2d(x):
    return torch.nonzero(x > 0.5)


PROGRAMS = {
    "put_scaled": _put_scaled,
    "put_rows": _put_rows,
    "put_accumulate": _put_accumulate,
    "nonzero_rows": _nonzero_rows,
    "nonzero_2d": _nonzero_2d,
}


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _inputs(n, density, rng):
    """``(n, 3)`` values, the share ``density`` of them positive (every mask above keys on sign)."""
    x = np.abs(rng.standard_normal((n, 3))).astype(np.float32) + 0.6
    sign = np.where(rng.random((n, 3)) < density, 1.0, -1.0).astype(np.float32)
    return x * sign


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_data_dependent_count_runs_bounded_once_equal_to_torch(name):
    fn = PROGRAMS[name]
    n = Dim("n", min=2, max=N_MAX)
    ep = torch.export.export(_Fn(fn), (torch.from_numpy(_inputs(8, 0.5, np.random.default_rng(0))),), dynamic_shapes=({0: n},))
    text = lower(ep, bounded=True)
    compiles = []
    prog = BoundedXlaProgram(Module(text, name), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    rng = np.random.default_rng(1)
    for size in (2, 7, N_MAX):
        for density in (0.0, 0.5, 1.0):
            x = _inputs(size, density, rng)
            with torch.no_grad():
                out = fn(torch.from_numpy(x))
            want = [w.numpy() for w in (out if isinstance(out, tuple) else (out,))]
            got = prog(*prog.convert([x]))
            got = [np.asarray(g) for g in (got.numpy() if hasattr(got, "numpy") else got)]
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                where = f"{name} n={size} density={density} out{i}"
                assert g.shape == w.shape, f"{where}: {g.shape} vs torch {w.shape}"
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=where)
    assert len(compiles) == 1, compiles
