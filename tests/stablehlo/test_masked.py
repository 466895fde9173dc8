"""Selections by data (``ops/masked.py``): ``masked_select``, ``unique``, ``unique_consecutive``
(a count from data: bounded, one XLA compile serves every count; unbounded, refused by name)
and ``masked_scatter``, ``nonzero_static`` (sizes from shapes: both modes), torch's values at
two sizes with other data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import XlaExecutor, lower
from engines.stablehlo.execution.xla import DataDependentSize

SMALL = np.array([3.0, 1.0, 2.0, 3.0, 1.0, 5.0, 5.0, 0.0], np.float32)
BIG = np.array([4.0, 4.0, -1.0, 2.5, 0.0, 0.0, 7.0, 2.5, 2.5, 9.0, -3.0, 4.0, 1.0, 1.0, 8.0, 0.0], np.float32)

#: name -> (torch fn of x [2n], its size comes from data)
PROGRAMS = {
    "masked_select": (lambda x: torch.masked_select(x.reshape(2, -1), x.reshape(2, -1)[0] > 1), True),
    "unique": (lambda x: torch.unique(x, return_inverse=True, return_counts=True), True),
    "unique_values": (lambda x: torch.unique(x, sorted=False), True),
    "unique_consecutive": (lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True), True),
    "masked_scatter": (lambda x: x.masked_scatter(x > 2, -x.flip(0)), False),
    "nonzero_static": (lambda x: torch.nonzero_static((x > 3).reshape(2, -1), size=5, fill_value=-7), False),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_data_dependent_selections_match_torch(name):
    fn, data_size = PROGRAMS[name]
    h = Dim("h", min=2, max=64)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.tensor(SMALL),), dynamic_shapes={"xs": ({0: 2 * h},)})
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        if data_size and not bounded:
            with pytest.raises(DataDependentSize, match="set_dimension_size"):
                ex.run(text, [SMALL])
            continue
        for x in (SMALL, BIG):
            got = ex.run(text, [x])
            want = fn(torch.from_numpy(x))
            want = want if isinstance(want, tuple) else (want,)
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w.numpy(), err_msg=f"{name} bounded={bounded} x={x}")
                assert g.dtype == w.numpy().dtype
        if bounded:
            assert ex.compile_count() == 1
