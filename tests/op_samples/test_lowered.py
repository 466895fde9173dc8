"""The op-sample table on torch.export -> ``engines.stablehlo`` lowering: the lowered text's
``?`` types and the substrings each sample expects; then the XLA executor and the reference
interpreter at every size (0 and 1 where the sample allows) against its reference (a NumPy
float64 oracle, else torch eager)."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.op_samples import SAMPLES
from engines.stablehlo import execute

from .runs import assert_reaches_pin, check, lowered

LOWERED = [s for s in SAMPLES if s.lowered is not None]
#: XLA compiles per op (~50 s of CPU): left out of `make check` (tests/conftest.py's SLOW names the rest)
_SLOW = {"breadth"}
PARAMS = [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.origin in _SLOW else []) for s in LOWERED]


@pytest.mark.parametrize("s", PARAMS)
def test_lowered_types(s):
    text, targets = lowered(s)
    sig = text.split("func.func public @main(", 1)[1].split("{", 1)[0]
    assert "?" in sig, sig
    for want in s.lowered.expect:
        assert want in text, f"{want!r} not in lowered text:\n{text}"
    assert_reaches_pin(s.name, "lowered", targets)


@pytest.mark.parametrize("s", PARAMS)
def test_executors_match_the_reference(s):
    text, _ = lowered(s)
    if s.origin == "lowering":
        assert 1 in s.sizes and max(s.sizes) >= 16 and len(s.sizes) >= 4
    # bounded modules compile once where XLA's padder can (tests/stablehlo/test_bounded.py
    # pins which); here every op must be right either way
    kw = {"on_unsupported": "per_shape"} if s.lowered.per_shape else {}
    for n in s.sizes:
        args = s.inputs(n)
        want = s.expected(args)
        arrays = [np.asarray(a) for a in args]  # (a scalar input as a 0-d array)
        for ex in s.lowered.executors:
            got = execute(text, arrays, executor=ex, **(kw if ex == "xla" else {}))
            check(got, want, s, f"{s.name} {ex} n={n}")
