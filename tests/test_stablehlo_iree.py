"""``stablehlo_iree``: our lowering's `?` module compiled once by IREE serves every
size of the seed case, oracle-checked, in both modes; bounded refuses a size
above its bound naming the dim. Skips where IREE's wheels are missing."""

from __future__ import annotations

import numpy as np
import pytest

import cases
from backends.stablehlo_iree import StablehloIree

CASE = "gnn_edge_divide"
pytestmark = pytest.mark.slow


def _backend():
    backend = StablehloIree()
    ok, why = backend.available()
    if not ok:
        pytest.skip(f"stablehlo_iree: {why} (the peers extra: make setup)")
    backend.startup()
    return backend


@pytest.mark.parametrize("mode", ["unbounded", "bounded"])
def test_one_lowering_and_one_iree_compile_serve_every_size(mode):
    backend = _backend()
    case = cases.get(CASE)
    program = backend.prepare(case, mode)
    got = []
    for i, e in enumerate([7, 1000, 1013, 1049]):
        inputs = case.make_inputs({"e": e}, seed=i)
        y = program(*program.convert(inputs))
        program.sync(y)
        np.testing.assert_allclose(program.to_numpy(y), case.expected(inputs), rtol=1e-5, atol=1e-6)
        got.append(program.compile_stats())
    assert got == [{"lowering": 1, "iree_compile": 1}] * 4
    reasons = program.compile_reasons()
    assert len(reasons) == 2 and "once for every size" in reasons[1]
    if mode == "bounded":
        assert "range hints" in reasons[1]
        from backends.base import BoundError

        with pytest.raises(BoundError, match=r"dim 'e' \(axis 0\) is 2049, above its bound 2048"):
            program.convert(case.make_inputs({"e": 2049}, seed=0))
