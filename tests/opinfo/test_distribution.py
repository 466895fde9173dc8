"""The distribution oracle (``conformance/opinfo/distribution.py``): a right sampler passes, a
broken one (a constant, a wrong range, values off the support) fails; random entries are the
ones op_db marks, judged in distribution and recorded so (route ``distribution``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.opinfo import distribution as D


def _judge(ours: torch.Tensor, draw) -> None:
    """``ours`` judged against ``draw()`` (eager's sampler), its reference pooled over seeds."""
    want = draw()
    ref = []
    for seed in range(1, 1 + D.REFERENCE // want.numel() + 1):
        torch.manual_seed(seed)
        ref.append(draw().double().numpy().reshape(-1))
    ref = [np.concatenate(ref)]
    D.judge([ours], [want], ref)
    D.judge_pooled([([ours], ref)])


def test_a_draw_of_the_same_law_passes():
    torch.manual_seed(12345)
    _judge(torch.empty(4000).uniform_(-2, 3), lambda: torch.empty(4000).uniform_(-2, 3))
    _judge(torch.empty(500).exponential_(2.0), lambda: torch.empty(500).exponential_(2.0))
    _judge(torch.empty(500).geometric_(0.3), lambda: torch.empty(500).geometric_(0.3))
    _judge(torch.empty(500).cauchy_(), lambda: torch.empty(500).cauchy_())  # (no moments: KS alone)


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (torch.full((4000,), 0.5), "Kolmogorov-Smirnov"),  # a constant at the law's mean
        (torch.empty(4000).uniform_(-2, 4), "Kolmogorov-Smirnov"),  # a wrong range
        (torch.empty(4000).uniform_(-2.5, 3.5), "Kolmogorov-Smirnov"),  # wider, same mean
    ],
)
def test_a_broken_sampler_fails(broken, said):
    with pytest.raises(D.Mismatch, match=said):
        _judge(broken, lambda: torch.empty(4000).uniform_(-2, 3))


def test_values_off_the_support_fail_even_in_a_small_sample():
    with pytest.raises(D.Mismatch, match="non-negative"):
        _judge(torch.tensor([0.3, -0.1, 2.0]), lambda: torch.empty(3).exponential_())
    with pytest.raises(D.Mismatch, match="integral"):
        _judge(torch.tensor([1.0, 2.5, 3.0]), lambda: torch.empty(3).geometric_(0.5))
    with pytest.raises(D.Mismatch, match="off the support"):
        _judge(torch.tensor([0.0, 1.0, 0.5]), lambda: torch.bernoulli(torch.full((3,), 0.5)))


def test_a_small_sample_is_not_judged_by_its_moments():
    """Below MIN_SAMPLE values only the support says anything: a constant inside it passes."""
    _judge(torch.full((D.MIN_SAMPLE - 1,), 0.5), lambda: torch.rand(D.MIN_SAMPLE - 1))


def test_a_wrong_shape_or_dtype_fails():
    with pytest.raises(D.Mismatch, match="eager"):
        _judge(torch.rand(999), lambda: torch.rand(1000))
    with pytest.raises(D.Mismatch, match="eager"):
        _judge(torch.rand(1000).double(), lambda: torch.rand(1000))


def test_the_ks_critical_distance_holds_its_level():
    """Two samples of one law: the distance stays under the critical value in 200 tries."""
    rng = np.random.default_rng(0)
    worst = max(D.ks_distance(rng.normal(size=300), rng.normal(size=3000)) / D.ks_critical(300, 3000) for _ in range(200))
    assert worst < 1.0


def test_op_db_marks_the_random_entries():
    assert all(D.is_random(e) for e in ("bernoulli", "normal", "uniform", "randn", "multinomial", "nn.functional.rrelu"))
    assert not any(D.is_random(e) for e in ("add", "sin", "empty", "nonzero_static"))


def test_the_reference_draws_other_numbers_each_seed_despite_op_dbs_fixed_seed():
    from conformance.opinfo.samples import entry_name, op_db, samples

    (op,) = [o for o in op_db() if entry_name(o) == "uniform"]
    s = next(iter(samples(op, limit=1)))
    ref = D.reference(s.fn, s.call, s.leaves[0], s.leaves[0][0].numel())
    assert ref[0].size >= min(D.REFERENCE, D.MAX_SEEDS * s.leaves[0][0].numel()) and len(np.unique(ref[0])) > ref[0].size // 2
    # and the op's own seeding is back after it
    a, b = s.call([t.clone() for t in s.leaves[0]]), s.call([t.clone() for t in s.leaves[0]])
    assert torch.equal(a, b)


def test_a_random_entry_passes_in_distribution_and_a_broken_sampler_is_a_mismatch(monkeypatch):
    from conformance.opinfo import paths
    from conformance.opinfo.samples import entry_name, op_db, samples
    from engines.stablehlo.lowering import registry

    (op,) = [o for o in op_db() if entry_name(o) == "uniform"]
    s = next(iter(samples(op, limit=1)))  # [s0], 10 then 20 values: 30 judged together
    (v,) = paths.run_stablehlo(s, "other", ("bounded",))
    assert (v.verdict, v.route) == ("pass", "distribution")

    def constant(ctx, node, x, low=0.0, high=1.0, generator=None):
        from engines.stablehlo.lowering.ops.random import uniform01

        u = uniform01(ctx, ctx.out_shape(node), ctx.out_dtype(node))  # (drawn, then dropped)
        return ctx.binary(
            "stablehlo.add",
            ctx.binary("stablehlo.multiply", u, ctx.constant(0.0, u.dtype, u.sym_shape)),
            ctx.constant((low + high) / 2, u.dtype, u.sym_shape),
        )

    monkeypatch.setitem(registry.LOWERINGS, torch.ops.aten.uniform.default, constant)
    (v,) = paths.run_stablehlo(s, "other", ("bounded",))
    assert v.verdict == "mismatch" and v.route == "", v


def test_the_tables_name_the_entries_passed_in_distribution():
    from conformance.opinfo.table import in_distribution

    rows = [
        {"entry": "uniform", "family": "f", "verdict": "pass", "message": "", "route": "distribution"},
        {"entry": "uniform", "family": "f", "verdict": "pass", "message": "", "route": "distribution"},
        {"entry": "normal", "family": "f", "verdict": "pass", "message": "", "route": "distribution"},
        {"entry": "normal", "family": "f", "verdict": "mismatch", "message": "", "route": ""},
        {"entry": "sin", "family": "f", "verdict": "pass", "message": "", "route": ""},
    ]
    assert in_distribution(rows) == ["uniform"]
