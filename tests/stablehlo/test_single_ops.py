"""Single ops OpInfo found unlowered or refused (scans with an index, scatters with a
reduction, attention with a dynamic head dim, ...): torch's values at two sizes of a
dynamic dim, bounded (one XLA compile for both) and unbounded."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import XlaExecutor, lower


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


def _index(n, hi, seed=0):
    return torch.randint(0, hi, (n,), generator=torch.Generator().manual_seed(seed + n))


#: name -> (fn, inputs at size n, {input position: {dim: "n"}}); every dim named "n" is one Dim
CASES = {
    "sdpa_dynamic_head_dim": (
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        lambda n: (_randn(2, 3, n), _randn(2, 5, n, seed=1), _randn(2, 5, n, seed=2)),
        {0: {2: "n"}, 1: {2: "n"}, 2: {2: "n"}},
    ),
    "sdpa_causal_other_lengths": (
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda n: (_randn(2, 3, n), _randn(2, n, n, seed=1), _randn(2, n, 4, seed=2)),
        {0: {2: "n"}, 1: {1: "n", 2: "n"}, 2: {1: "n"}},
    ),
    "cummax_ties_and_nan": (
        lambda x: torch.cummax(torch.where(x > 1.5, float("nan"), x.round()), dim=1),
        lambda n: (_randn(3, n),),
        {0: {1: "n"}},
    ),
    "cummin_ties": (lambda x: torch.cummin(x.round(), dim=1), lambda n: (_randn(3, n),), {0: {1: "n"}}),
    "logcumsumexp_infinities": (
        lambda x: torch.logcumsumexp(torch.where(x > 1.0, float("inf"), torch.where(x < -1.0, -float("inf"), x)), 1),
        lambda n: (_randn(3, n),),
        {0: {1: "n"}},
    ),
    "index_reduce_mean_no_self": (
        lambda x, i, s: x.index_reduce(1, i, s, "mean", include_self=False),
        lambda n: (_randn(3, 4), _index(n, 4), _randn(3, n, seed=1)),
        {1: {0: "n"}, 2: {1: "n"}},
    ),
    "index_reduce_amax": (
        lambda x, i, s: x.index_reduce(0, i, s, "amax"),
        lambda n: (_randn(4, 3), _index(n, 4), _randn(n, 3, seed=1)),
        {1: {0: "n"}, 2: {0: "n"}},
    ),
    "put_accumulate_negative": (
        lambda x, i, s: x.put(i, s, accumulate=True),
        lambda n: (_randn(n, 3), _index(n, 3 * n) - n, _randn(n, seed=1)),
        {0: {0: "n"}, 1: {0: "n"}, 2: {0: "n"}},
    ),
    "diagonal_scatter_below": (
        lambda x, s: torch.diagonal_scatter(x, s, -2, 1, 2),
        lambda n: (_randn(2, n, 4), _randn(2, 4, seed=1)),
        {0: {1: "n"}},
    ),
    "histc_data_range": (lambda x: torch.histc(x, bins=7), lambda n: (_randn(n, 3),), {0: {0: "n"}}),
    "histc_given_range": (lambda x: torch.histc(x, bins=5, min=-1, max=1), lambda n: (_randn(n),), {0: {0: "n"}}),
    "segment_mean_lengths": (
        lambda d, ln: torch.segment_reduce(d, "mean", lengths=ln),
        lambda n: (_randn(2 * n, 3), torch.tensor([0, 3, 3] * (n // 3))),
        {0: {0: "m"}, 1: {0: "n"}},
    ),
    "segment_max_offsets_initial": (
        lambda d, off: torch.segment_reduce(d, "max", offsets=off, initial=0.5),
        lambda n: (_randn(n, 2), torch.tensor([1, 1, 3, n - 1])),
        {0: {0: "n"}},
    ),
    "mode_ties": (lambda x: torch.mode((x * 1.5).round(), 1, keepdim=True), lambda n: (_randn(3, n),), {0: {1: "n"}}),
    "cdist_p1_batched": (
        lambda a, b: torch.cdist(a, b, p=1.0),
        lambda n: (_randn(2, n, 3), _randn(2, 4, 3, seed=1)),
        {0: {1: "n"}},
    ),
    "cdist_pinf": (
        lambda a, b: torch.cdist(a, b, p=float("inf")),
        lambda n: (_randn(n, 3), _randn(n, 3, seed=1)),
        {0: {0: "n"}, 1: {0: "n"}},
    ),
    "pdist_p2": (lambda x: torch.nn.functional.pdist(x), lambda n: (_randn(n, 3),), {0: {0: "n"}}),
    "pdist_p0": (lambda x: torch.nn.functional.pdist(x.round(), p=0), lambda n: (_randn(n, 2),), {0: {0: "n"}}),
}


def _check(name, fn, make, dims, sizes=(6, 12)):
    names = {v for d in dims.values() for v in d.values()}
    made = {v: Dim(v, min=3, max=8 * sizes[-1]) for v in sorted(names)}
    shapes = {"xs": tuple({d: made[v] for d, v in dims.get(i, {}).items()} or None for i in range(len(make(sizes[0]))))}
    ep = torch.export.export(Fn(lambda _, *xs: fn(*xs)), make(sizes[0]), dynamic_shapes=shapes)
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for size in sizes:
            xs = make(size)
            got = ex.run(text, [x.numpy() for x in xs])
            want = fn(*xs)
            want = [want] if isinstance(want, torch.Tensor) else list(want)
            assert len(got) == len(want), name
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.numpy().dtype, name
                np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{name} bounded={bounded} {size=}")
        if bounded:
            assert ex.compile_count() == 1, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_single_op_matches_torch(name):
    _check(name, *CASES[name])
