"""Special functions after Cephes (``ops/bessel_jy.py``, ``bessel_k.py``, ``airy.py``,
``erfcx.py``, ``igamma.py``) and the float-bit ops (``ops/floatbits.py``): torch's values,
bounded (one XLA compile) and unbounded, at two sizes, each branch's edges, poles and
off-domain values (NaN, +-inf, subnormals) included."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import XlaExecutor, lower

S = torch.special
#: every branch of the Bessel forms: near 0, the switch at 5 (J, Y) or 2 (K), far, off-domain
BESSEL = [0.0, -0.0, 1e-6, 0.3, -1.7, 2.0, 2.01, 4.99, 5.0, 5.01, -7.5, 12.0, 29.0, 100.0, 1e4, np.nan, -3.0]
#: igamma's (a, x) grid: the series (x <= a or x <= 1), the fraction, large a near x, the edges
IGAMMA_A = [0.1, 0.5, 1.0, 2.5, 9.0, 30.0, 150.0, 1000.0, 0.0, -1.0, np.inf, np.nan]
IGAMMA_X = [0.05, 0.6, 1.0, 1.2, 2.0, 8.5, 31.0, 140.0, 1100.0, 0.0, -0.5, np.inf]
_PAIRS = list(itertools.product(IGAMMA_A, IGAMMA_X))
_FLOATS = [0.0, -0.0, 1e-40, -3e-45, 1.17e-38, 0.5, 1.0, -1.0, -7.25, 3e38, 1e-7, np.inf, -np.inf, np.nan]

#: name -> (torch fn of its inputs, the inputs' values, exact)
FUNCTIONS = {
    "bessel_j0": (S.bessel_j0, [BESSEL], False),
    "bessel_j1": (S.bessel_j1, [BESSEL], False),
    "bessel_y0": (S.bessel_y0, [BESSEL], False),
    "bessel_y1": (S.bessel_y1, [BESSEL], False),
    "modified_bessel_k0": (S.modified_bessel_k0, [BESSEL], False),
    "modified_bessel_k1": (S.modified_bessel_k1, [BESSEL], False),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0, [BESSEL], False),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1, [BESSEL], False),
    "airy_ai": (S.airy_ai, [[-20.0, -8.4, -2.1, -2.09, -0.5, 0.0, 1.3, 2.08, 2.09, 8.3, 103.0, 104.0, np.inf, np.nan]], False),
    "erfcx": (S.erfcx, [[-30.0, -26.0, -6.0, -0.5, 0.0, 0.99, 1.0, 7.99, 8.0, 50.1, 1e8, 1e30, np.inf, np.nan]], False),
    "log_ndtr": (S.log_ndtr, [[-1e3, -40.0, -1.01, -1.0, -0.3, 0.0, 2.0, 6.0, 30.0, np.inf, -np.inf, np.nan]], False),
    "igamma": (torch.igamma, [[a for a, _ in _PAIRS], [x for _, x in _PAIRS]], False),
    "igammac": (torch.igammac, [[a for a, _ in _PAIRS], [x for _, x in _PAIRS]], False),
    "frexp": (torch.frexp, [_FLOATS], True),
    "nextafter": (lambda x: torch.nextafter(x, x.flip(0)), [_FLOATS], True),
    "nextafter_zero": (lambda x: torch.nextafter(x, torch.zeros_like(x)), [_FLOATS], True),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_cephes_functions_match_torch(name):
    fn, inputs, exact = FUNCTIONS[name]
    arrays = [np.array(v, np.float32) for v in inputs]
    n = Dim("n", min=2, max=4096)
    ep = torch.export.export(
        Fn(lambda _, *xs: fn(*xs)), tuple(torch.tensor(a) for a in arrays), dynamic_shapes={"xs": tuple({0: n} for _ in arrays)}
    )
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for k in (1, 3):
            xs = [np.tile(a, k) for a in arrays]
            got = ex.run(text, xs)
            want = fn(*[torch.from_numpy(x) for x in xs])
            want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype
                if exact:  # bit for bit
                    np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8), err_msg=f"{name} {xs}")
                else:
                    np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, err_msg=f"{name} bounded={bounded} {xs}")
        if bounded:
            assert ex.compile_count() == 1
