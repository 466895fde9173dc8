"""Chains of floor divisions of sizes in bounded modules, generated: a stack of
1-D convolutions (random kernel, stride, padding, dilation, depth 1-5, as an
audio model's feature extractor) makes the output length ``L`` a chain of
``(L + 2p - d(k - 1) - 1) // s + 1``; the batch ``B`` is dynamic too, and the
features are flattened to ``(B * L, C)`` and split back to ``(B, L, 2, C / 2)``
or to ``(2 * B * L, C / 2)`` (a split and a combine in one reshape).

Each size is bounded by interval arithmetic on its normal form, so ``B * L``
can bound above ``bound(B) * bound(L)`` (``8 * 50`` elements against 406 rows):
XLA refused the static reshape between them ("Reshape operation has mismatched
element counts") while the unbounded module ran; XLA's padder refuses a reshape
that splits and combines a dynamic dim. Every module here gives
torch's shapes and values at several sizes up to the bound, with one compile
bounded; the unbounded module agrees at one size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.export import Dim

from engines.stablehlo import XlaExecutor, lower
from engines.torch_export_tools import export_oblivious_retry

T_MAX = 160
B_MAX = 4
CHANNELS = 4


class ConvStack(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        torch.manual_seed(0)
        convs, c = [], 1
        for k, s, p, d in layers:
            convs.append(torch.nn.Conv1d(c, CHANNELS, k, stride=s, padding=p, dilation=d))
            c = CHANNELS
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, x):
        y = x[:, None]
        for conv in self.convs:
            y = torch.nn.functional.gelu(conv(y))
        b, c, n = y.shape
        z = y.transpose(1, 2).reshape(b * n, c) * 2  # the (B * L) rows, as attention projections see them
        # WavLM's gated relative position bias splits C and combines the halves with the rows
        return z.reshape(b, n, 2, c // 2), z.sum(0), z.reshape(b * n * 2, c // 2).cumsum(1)


def _lengths(t, layers) -> list:
    """The length after each layer."""
    out = []
    for k, s, p, d in layers:
        t = (t + 2 * p - d * (k - 1) - 1) // s + 1
        out.append(t)
    return out


def _length(t, layers):
    return _lengths(t, layers)[-1]


def _t_min(layers, t_max=T_MAX):
    """The least input length whose every layer's length is at least 2 (torch.export
    specialises a length of 1, so a range reaching one is a constraint violation)."""
    return next(t for t in range(2, t_max) if min(_lengths(t, layers)) >= 2)


def check(layers, b_max=B_MAX, t_max=T_MAX):
    """Export ``ConvStack(layers)`` with dynamic B and T, run it bounded at a
    few sizes (one compile) and unbounded at one; each equals torch eager."""
    mod = ConvStack(layers).eval()
    t0 = _t_min(layers, t_max)
    b, t = Dim("B", min=2, max=b_max), Dim("T", min=t0, max=t_max)
    sample = torch.randn(3, max(t0, (t0 + t_max) // 2))
    ep = export_oblivious_retry(lambda **o: torch.export.export(mod, (sample,), dynamic_shapes=({0: b, 1: t},), **o))
    rng = np.random.default_rng(0)
    shapes = [(2, t0), (b_max, t_max), (int(rng.integers(2, b_max + 1)), int(rng.integers(t0, t_max + 1)))]
    for mode in ("bounded", "unbounded"):
        text = lower(ep, bounded=mode == "bounded")
        ex = XlaExecutor()
        for shape in shapes if mode == "bounded" else shapes[-1:]:
            x = rng.standard_normal(shape).astype(np.float32)
            with torch.no_grad():
                want = [w.numpy() for w in mod(torch.from_numpy(x))]
            got = ex.run(text, [x])
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                where = f"{layers} {mode} x{shape} out{i}"
                assert g.shape == w.shape, f"{where}: shape {g.shape}, torch {w.shape}"
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=where)
        if mode == "bounded":
            assert ex.compile_count() == 1, (layers, ex.compile_count())


@pytest.mark.slow
def test_an_audio_feature_stack_runs_bounded():
    """Wav2Vec2's stack shape (kernel 10 stride 5, then kernel 3 stride 2): its
    ``B * L`` bound was 406 rows for 8 * 50 elements at bounds 8 and 512."""
    check([(10, 5, 0, 1), (3, 2, 0, 1)], b_max=8, t_max=512)


_layer = st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(0, 2), st.integers(1, 2))


@pytest.mark.slow
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_layer, min_size=1, max_size=5).filter(lambda ls: min(_lengths(T_MAX - 1, ls)) >= 2 and _t_min(ls) < T_MAX // 2))
def test_generated_conv_stacks_run_bounded(layers):
    check(layers)
