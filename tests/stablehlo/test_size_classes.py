"""Correctness classes of the compile-once XLA executors, each generated over
programs rather than one example: a run returns torch's result (values and
shape) or fails naming the op, never a wrong result nor a crash.

* slice bounds computed from a size (shifts, ``//``, ``%``, a bound that may pass
  the end): the bounded, bucketed and per-shape executors agree with torch eager,
  or the run is refused by name (a non-monotone size in a bucket);
* a static slice of a value whose dim is dynamic (``topk(x, 2)``, ``x[:2]`` after
  a sort, a cumsum, ...): the bounded executor once crashed the process here
  (heap corruption in ``execute_sharded``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import PadderUnsupported, XlaExecutor, lower
from engines.torch_export_tools import export_oblivious_retry

BOUND = 64
SIZES = (5, 9, 20, 33)


def _export(fn, cols=3):
    n = Dim("n", min=2, max=BOUND)
    return export_oblivious_retry(
        lambda **o: torch.export.export(
            Fn(lambda _, x: fn(x)), (torch.randn(20, cols),), dynamic_shapes={"xs": ({0: n},)}, strict=False, **o
        )
    )


def _flat(out):
    return [out] if isinstance(out, torch.Tensor) else [o for x in out for o in _flat(x)]


#: size functions of the dynamic dim n; each is a slice stop (``x[:f]``) and a slice
#: start (``x[f:]``) of ``x`` and of ``cat([x, x])`` (twice the rows: bounds past n stay in range)
SIZE_FNS = {
    "shr1": lambda n: n >> 1,
    "n_minus_shr1": lambda n: n - (n >> 1),
    "shl1_minus1": lambda n: (n << 1) - 1,
    "floordiv3": lambda n: n // 3,
    "past_end": lambda n: 65 - n,  # above n for small n: torch clamps it
    "neg_shr1": lambda n: -(n >> 1),  # negative: counts from the end
    "mod4_plus1": lambda n: n % 4 + 1,  # not monotone in n
    "parity_plus1": lambda n: n - 2 * (n >> 1) + 1,  # sign not evident from intervals: max/min form
}
#: (mode, size fn) pairs refused by name rather than served: a bucket's bound comes from its
#: largest shape, which a size that falls as n grows exceeds at smaller shapes
REFUSED = {("bucketed", "mod4_plus1"), ("bucketed", "past_end"), ("bucketed", "parity_plus1")}


def _slices(f):
    def prog(x):
        xx = torch.cat([x, x])
        k = f(x.shape[0])
        return x[:k], x[k:], xx[:k], xx[k:]

    return prog


@pytest.mark.parametrize("name", sorted(SIZE_FNS))
def test_slice_bounds_from_sizes_are_torchs_or_refused(name):
    """Every mode gives torch's shapes and values over the sweep (one compile in
    bounded mode), or (``REFUSED``) fails naming the op with PadderUnsupported."""
    prog = _slices(SIZE_FNS[name])
    ep = _export(prog)
    for mode in ("bounded", "bucketed", "unbounded"):
        text = lower(ep, bounded=mode == "bounded")
        ex = XlaExecutor()
        for n in SIZES:
            x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
            want = [w.numpy() for w in _flat(prog(torch.from_numpy(x)))]
            if (mode, name) in REFUSED:
                try:
                    got = ex.run(text, [x], bucketed=True)
                except PadderUnsupported as e:
                    assert "does not grow with the argument sizes" in str(e) and e.op, e
                    break
            else:
                got = ex.run(text, [x], bucketed=mode == "bucketed")
            for i, (g, w) in enumerate(zip(got, want, strict=False)):
                assert g.shape == w.shape, f"{name} {mode} n={n} out{i}: shape {g.shape}, torch {w.shape}"
                np.testing.assert_array_equal(g, w, err_msg=f"{name} {mode} n={n} out{i}")
        else:
            assert (mode, name) not in REFUSED or mode != "bucketed" or ex.compile_count() == 1, (
                f"{name} {mode}: expected a refusal at some size of the sweep"
            )
        if mode == "bounded":
            assert ex.compile_count() == 1, (name, ex.compile_count())


#: producers of a value with the dynamic dim 0, each then sliced statically
PRODUCERS = {
    "sort": lambda x: x.sort(dim=0).values,
    "argsort": lambda x: x.argsort(dim=0, stable=True),
    "cumsum": lambda x: x.cumsum(0),
    "exp": lambda x: x.exp(),
    "softmax": lambda x: x.softmax(0),
    "matmul": lambda x: x @ x.T @ x,
    "input": lambda x: x,
}
#: static slices of dim 0 (the dim is at least 2, so each reads live rows only)
STATIC_SLICES = {
    "head2": lambda v: v[:2],
    "rows1_2": lambda v: v[1:2],
    "narrow": lambda v: v.narrow(0, 0, 2),
    "topk2": lambda v: v.float().topk(2, dim=0).values,
    "select0": lambda v: v[0],
}


def test_static_slices_of_dynamic_values_run_bounded():
    """Every (producer, static slice) pair in one bounded module: torch's values
    at every size, one compile (the class once aborted the process)."""

    def prog(x):
        return [s(p(x)) for p in PRODUCERS.values() for s in STATIC_SLICES.values()]

    ep = _export(prog, cols=4)
    text = lower(ep, bounded=True)
    ex = XlaExecutor()
    names = [f"{p}.{s}" for p in PRODUCERS for s in STATIC_SLICES]
    for n in SIZES + (2, BOUND):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        want = [w.numpy() for w in prog(torch.from_numpy(x))]
        got = ex.run(text, [x])
        for name, g, w in zip(names, got, want, strict=False):
            assert g.shape == w.shape, f"{name} n={n}"
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{name} n={n}")
    assert ex.compile_count() == 1
