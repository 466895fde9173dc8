"""Order statistics and sorted-sequence searches (``ops/selection.py``): torch's values and
indices, bounded (one compile) and unbounded, at two sizes of the searched or reduced dim."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import XlaExecutor, lower

NAN = float("nan")
#: name -> (fn of x and a sorted sequence s, x's rows at the first size); the second size doubles
#: x's last dim with distinct values (ties would leave torch's indices unspecified)
CASES = {
    "kthvalue": lambda x, s: torch.kthvalue(x, 2, dim=1),
    "median_dim": lambda x, s: torch.median(x, dim=1, keepdim=True),
    "median_all": lambda x, s: torch.median(x),
    "median_nan_row": lambda x, s: torch.median(torch.where(x > 2.5, NAN, x), dim=1).values,
    "nanmedian_dim": lambda x, s: torch.nanmedian(torch.where(x > 2.5, NAN, x), dim=1),
    "nanmedian_all": lambda x, s: torch.nanmedian(torch.where(x > 2.5, NAN, x)),
    "searchsorted_left": lambda x, s: torch.searchsorted(s, x),
    "searchsorted_right": lambda x, s: torch.searchsorted(s, x, right=True),
    "searchsorted_int32": lambda x, s: torch.searchsorted(s, x, out_int32=True),
    "bucketize": lambda x, s: torch.bucketize(x, s),
    "bucketize_right": lambda x, s: torch.bucketize(x, s, right=True),
}


def _inputs(n: int):
    x = torch.linspace(-3.0, 3.0, 3 * n).reshape(3, n)[:, torch.randperm(n, generator=torch.Generator().manual_seed(n))]
    s = torch.linspace(-2.0, 2.0, n).round(decimals=1)  # (values of x among them: the side matters)
    return x.contiguous(), s


@pytest.mark.parametrize("name", sorted(CASES))
def test_selection_matches_torch(name):
    fn = CASES[name]
    n = Dim("n", min=2, max=32)
    ep = torch.export.export(Fn(lambda _, x, s: fn(x, s)), _inputs(5), dynamic_shapes={"xs": ({1: n}, {0: n})})
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for size in (5, 10):
            x, s = _inputs(size)
            got = ex.run(text, [x.numpy(), s.numpy()])
            want = fn(x, s)
            want = [want] if isinstance(want, torch.Tensor) else list(want)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.numpy().dtype, name
                np.testing.assert_array_equal(g, w.numpy(), err_msg=f"{name} bounded={bounded} size={size}")
        if bounded:
            assert ex.compile_count() == 1
