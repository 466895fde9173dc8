"""Per-op: export with dynamic dims -> lower -> check types -> both executors vs NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx.experimental._config as fx_config

from engines.stablehlo import execute, lower

from .cases_stablehlo import CASES

_LOWERED = {}


def lowered(case):
    if case.name not in _LOWERED:
        g = np.random.default_rng(0)
        sample = tuple(torch.from_numpy(a) for a in case.make(case.export_n, g))
        # Fn.forward(*xs): the per-input specs (dict order = input order) go under "xs".
        # backed_size_oblivious: without it torch.export guards derived sizes
        # such as n-1 != 1 (from the sample) and rejects Dim(min=1).
        with fx_config.patch(backed_size_oblivious=case.oblivious):
            ep = torch.export.export(case.module, sample, dynamic_shapes={"xs": tuple(case.dyn.values())})
        _LOWERED[case.name] = (ep, lower(ep))
    return _LOWERED[case.name]


def _check(got, want, case, where):
    assert len(got) == len(want), where
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        b = np.asarray(b)
        assert a.shape == b.shape, f"{where} out{i}: shape {a.shape} != {b.shape}"
        if b.dtype == np.bool_ or np.issubdtype(b.dtype, np.integer):
            np.testing.assert_array_equal(a, b, err_msg=f"{where} out{i}")
        else:
            np.testing.assert_allclose(
                a.astype(np.float64), b, rtol=case.rtol, atol=case.atol, equal_nan=True, err_msg=f"{where} out{i}"
            )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_types(case):
    _, text = lowered(case)
    sig = text.split("func.func public @main(", 1)[1].split("{", 1)[0]
    assert "?" in sig, sig
    for s in case.expect:
        assert s in text, f"{s!r} not in lowered text:\n{text}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_executors_match_numpy(case):
    _, text = lowered(case)
    assert 1 in case.sizes and max(case.sizes) >= 16 and len(case.sizes) >= 4
    params = case.params()
    for n in case.sizes:
        args = case.make(n, np.random.default_rng(n))
        want = case.oracle(params, *args)
        # bounded modules compile once where XLA's padder can (tests/stablehlo/test_bounded.py
        # pins which); here every op must be right either way
        _check(execute(text, args, executor="xla", on_unsupported="per_shape"), want, case, f"{case.name} xla n={n}")
        _check(execute(text, args, executor="interpreter"), want, case, f"{case.name} interpreter n={n}")
