"""The step log (``backends.lazy.steplog``): a cached step skips the graph walk
and the full key, and never serves a step whose graph differs."""

import pytest
import torch

import backends.lazy as L


def test_cached_steps_take_the_step_log_and_agree_with_the_full_key():
    f = L.jit(lambda x, e: x * 2 + e.unsqueeze(-1), dims=[{0: "n"}, {0: "n"}])
    for n in (5, 6, 7, 5):
        x, e = torch.randn(n, 3), torch.randn(n)
        torch.testing.assert_close(f(x, e), x * 2 + e.unsqueeze(-1))
    assert f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 3
    # one step-log entry, pointing at the one compiled graph
    ((entry, positions),) = f.ctx.fast.values()
    assert entry is f.ctx.last and positions == (0, 1)
    # the full path, on the same step, builds the key the cache holds
    _, key = f.trace(torch.randn(9, 3), torch.randn(9))
    assert f.ctx.cache[key] is entry


def test_a_guard_with_another_result_is_another_step():
    def branch(x):
        return x * 2 if x.shape[0] > 4 else x + 1  # forces the size: a guard

    f = L.jit(branch)
    for n in (3, 5, 6, 2):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x * 2 if n > 4 else x + 1)
    assert f.ctx.compiles() == 2 and len(f.ctx.fast) == 2


def test_static_mode_keys_the_shapes():
    f = L.jit(lambda x: x.sum(0), mode="static")
    for n in (3, 4, 3):
        x = torch.randn(n, 2)
        torch.testing.assert_close(f(x), x.sum(0))
    assert f.ctx.compiles() == 2 and len(f.ctx.fast) == 2


@pytest.mark.parametrize("k", [2.0, 3.0, -0.0, 0.0])
def test_python_scalars_are_part_of_the_step(k):
    f = L.jit(lambda x, k: x * k)  # the scalar is baked into the graph: -0.0 and 0.0 are two steps
    x = torch.tensor([1.0, -2.0])
    for scalar in (2.0, 3.0, k, -k):
        out = f(x, scalar)
        torch.testing.assert_close(out, x * scalar)
        assert torch.equal(torch.signbit(out), torch.signbit(x * scalar))


def test_an_operand_from_outside_the_step_takes_the_full_path():
    ctx = L.LazyContext("unbounded")
    outside = ctx.input(torch.ones(3), dims=False)  # made before the step: not in its log
    f = L.jit(lambda x: x + outside, ctx=ctx)
    for n in (3, 3):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x + 1)
    assert ctx.compiles() == 1 and ctx.stats["hit"] == 1 and len(ctx.fast) == 0
