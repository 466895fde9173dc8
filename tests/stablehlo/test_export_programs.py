"""PyTorch-style export programs of issue 36's remaining classes, beyond the other
tables' variants: a guard that refines a size on XLA (divisibility, a view by it), a
``round()`` of a size feeding a view, bilinear upsampling to sizes computed from the
input's, a contraction over a zero-size dim. Each runs bounded (one compile) and
unbounded equal to torch eager at every size, or is refused at lowering, before any
compile, naming the construct; never a wrong result. (And a repeat count that is a
size, which WavLM's lowering met.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import LoweringError, XlaExecutor, lower
from engines.torch_export_tools import export_oblivious_retry


def _div4_view(x):
    n = x.shape[0]
    torch._check(n % 4 == 0)
    return x.reshape(n // 4, 4 * x.shape[1]).sum(1)


def _round_view(x):
    k = round(x.shape[0] / 2)  # half to even
    return x[:k] * 2, x[k:].cumsum(0)


def _bilinear_sizes(x):
    img = x[None, None]
    h, w = x.shape
    return F.interpolate(img, size=(2 * h + 1, w), mode="bilinear", align_corners=False), F.interpolate(
        img, size=(h // 2 + 1, 2 * w), mode="bilinear", align_corners=True
    )


def _zero_contraction(x):
    empty = x[:, :0]  # (n, 0)
    return empty @ empty.T + 1, (x.T @ x[:, :0]).sum() + x.sum()


def _repeat_by_size(x):
    return x.repeat(x.shape[0] // 2, 1), x[None].repeat(x.shape[0], 1, 2)  # WavLM repeats its bias B times


#: name -> (program, Dim min, sizes, refusal words or None)
PROGRAMS = {
    "div4_view": (_div4_view, 4, (4, 8, 20, 32), None),
    "round_view": (_round_view, 2, (3, 5, 10, 31), None),
    "bilinear_sizes": (_bilinear_sizes, 2, (3, 7, 16), None),
    "zero_contraction": (_zero_contraction, 2, (2, 5, 9), None),
    "repeat_by_size": (_repeat_by_size, 2, (2, 5, 9), None),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_export_programs_match_torch_or_are_refused(name):
    fn, lo, sizes, refusal = PROGRAMS[name]
    n = Dim("n", min=lo, max=32)
    ep = export_oblivious_retry(
        lambda **o: torch.export.export(Fn(lambda _, x: fn(x)), (torch.randn(8, 3),), dynamic_shapes={"xs": ({0: n},)}, **o)
    )
    for bounded in (True, False):
        if refusal is not None:
            with pytest.raises(LoweringError, match=refusal):
                lower(ep, bounded=bounded)
            continue
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for s in sizes:
            x = np.random.default_rng(s).standard_normal((s, 3)).astype(np.float32)
            out = fn(torch.from_numpy(x))
            want = [w.numpy() for w in (out if isinstance(out, tuple) else (out,))]
            got = ex.run(text, [x])
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                where = f"{name} bounded={bounded} n={s} out{i}"
                assert g.shape == w.shape, f"{where}: {g.shape} vs {w.shape}"
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=where)
        if bounded:
            assert ex.compile_count() == 1
