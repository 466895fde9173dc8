"""The cached step's inline checks (issue 48, the seed's step): a followed leaf matched by its
dtype, rank, axes, bounds and constant sizes (those in one call), an op replayed by a generated
replayer that makes its node (``StepLog.follow``), and a served sync counted in an int. Each
test fails when the check it names is removed (``docs/findings/2026-12-05-seed-step.md``)."""

from __future__ import annotations

import pytest
import torch

import engines.lazy as L
from engines.lazy.replay import LeafCall, OpCall


def _leaf_calls(f) -> list:
    return [c for c in f.ctx.tape.calls if type(c) is LeafCall]


@pytest.mark.parametrize(
    "other",
    [(7, 3, 5), (7, 2, 4), (7, 2, 5)],  # the last constant axis, the first, both
    ids=["last", "first", "both"],
)
def test_a_leaf_follows_only_where_its_constant_sizes_are_the_last_steps(other):
    """A leaf with two constant axes (``const_of`` reads both in one call): a step whose input
    differs in either is a new leaf, a new key and a compile, never the last step's shape."""
    f = L.jit(lambda x: x * 2.0, dims=[{0: "n"}])
    for n in (5, 6):
        f(torch.randn(n, 3, 4))
    (before,) = _leaf_calls(f)
    x = torch.randn(*other)
    torch.testing.assert_close(f(x), x * 2.0)
    (after,) = _leaf_calls(f)
    assert after is not before and f.ctx.compiles() == 2
    y = torch.randn(8, 3, 4)  # and back: the first key's compile, followed from the step before it no more
    torch.testing.assert_close(f(y), y * 2.0)
    assert f.ctx.compiles() == 2


def test_a_leaf_of_another_dtype_or_rank_does_not_follow():
    f = L.jit(lambda x: x + 1, dims=[{0: "n"}])
    for n in (5, 6):
        f(torch.randn(n, 3))
    for x in (torch.randn(7, 3, dtype=torch.float64), torch.randn(7, 3, 1)):
        torch.testing.assert_close(f(x), x + 1)
    assert f.ctx.compiles() == 3


def test_an_op_on_another_operand_at_the_same_position_is_not_replayed():
    """``d / c.unsqueeze(-1)``'s replayer checks each operand's log position: a step calling
    ``unsqueeze`` on the other input (same shapes, so the same entry but for the position) must
    run on that input's values, under a key of its own."""
    use_first = [True]

    def prog(a, b):
        x = a if use_first[0] else b
        return x.unsqueeze(-1) * 1.0

    f = L.jit(prog, dims=[{0: "n"}, {0: "n"}])
    for n in (5, 6):
        f(torch.randn(n), torch.randn(n))
    assert type(f.ctx.tape.calls[2]) is OpCall and f.ctx.tape.calls[2].direct is not None
    use_first[0] = False
    a, b = torch.randn(7), torch.randn(7)
    torch.testing.assert_close(f(a, b), b.unsqueeze(-1))
    assert f.ctx.compiles() == 2


def test_an_op_with_another_plain_argument_is_not_replayed():
    """The replayer's test of a plain argument: ``unsqueeze(-1)`` then ``unsqueeze(0)``."""
    dim = [-1]
    f = L.jit(lambda a: a.unsqueeze(dim[0]) * 1.0, dims=[{0: "n"}])
    for n in (5, 6):
        f(torch.randn(n))
    dim[0] = 0
    a = torch.randn(7)
    out = f(a)
    assert out.shape == (1, 7)
    torch.testing.assert_close(out, a.unsqueeze(0))


def test_a_leaf_follows_the_functions_dims_and_bounds_of_each_step():
    """A followed leaf is the last step's only with the same axes and bounds: ``f.dims``
    replaced makes every axis constant (a compile per shape), and bounded mode's bounds are
    still checked, and keyed."""
    f = L.jit(lambda x: x * 2.0, dims=[{0: "n"}])
    for n in (5, 6, 7):
        f(torch.randn(n, 3))
    assert f.ctx.compiles() == 1
    f.dims = [False]
    for n in (5, 6):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), x * 2.0)
    assert f.ctx.compiles() == 3
    g = L.jit(lambda x: x * 2.0, mode="bounded", dims=[{0: "n"}], bounds=[{0: 8}])
    for n in (5, 6):
        g(torch.randn(n, 3))
    with pytest.raises(L.BoundError, match="past the bound 8"):
        g(torch.randn(9, 3))
    g.bounds = [{0: 16}]
    g(torch.randn(9, 3))


def test_served_syncs_are_counted_as_traces_and_hits():
    f = L.jit(lambda d, c: d / c.unsqueeze(-1), dims=[{0: "e"}, {0: "e"}])
    for n in range(5, 10):
        f(torch.randn(n, 8), torch.rand(n) + 0.5)
    stats = f.ctx.stats
    assert (stats["trace"], stats["hit"], stats["compile"]) == (5, 4, 1)
    assert f.ctx.stats["hit"] == 4  # (read twice: counted once)
