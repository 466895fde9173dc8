"""The step log (``engines.lazy.steplog``): a cached step skips the graph walk
and the full key, and never serves a step whose graph differs."""

import pytest
import torch

import engines.lazy as L


def test_cached_steps_take_the_step_log_and_agree_with_the_full_key():
    f = L.jit(lambda x, e: x * 2 + e.unsqueeze(-1), dims=[{0: "n"}, {0: "n"}])
    for n in (5, 6, 7, 5):
        x, e = torch.randn(n, 3), torch.randn(n)
        torch.testing.assert_close(f(x, e), x * 2 + e.unsqueeze(-1))
    assert f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 3
    # one step-log entry, pointing at the one compiled graph
    ((entry, positions, shapes, _),) = f.ctx.fast.values()
    assert entry is f.ctx.last and positions == (0, 1)
    assert shapes({"p0_0": 4, "p0_1": 3}) == ((4, 3),)  # the output's predicted shape, compiled once
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


def test_a_cached_step_follows_new_sizes_and_a_new_structure_compiles():
    """Cached steps run on each call's sizes; a different op sequence, operand
    dtype or flag is another key (one compile each), and coming back hits."""

    def prog(x, e, flag):
        y = x / e.unsqueeze(-1)
        return y * 2 if flag else y + 1

    f = L.jit(prog, dims=[{0: "n"}, {0: "n"}, None])
    calls = [
        (5, torch.float32, True),
        (9, torch.float32, True),
        (9, torch.float32, False),
        (3, torch.float32, False),
        (4, torch.float64, False),
        (6, torch.float32, True),
    ]
    for n, dt, flag in calls:
        x, e = torch.randn(n, 3, dtype=dt), torch.rand(n, dtype=dt) + 0.5
        out = f(x, e, flag)
        assert out.shape == (n, 3) and out.dtype == dt
        torch.testing.assert_close(out, prog(x, e, flag))
    assert f.ctx.compiles() == 3 and f.ctx.stats["hit"] == 3 and len(f.ctx.fast) == 3


def test_a_guard_that_flips_on_a_cached_step_retraces_and_recompiles():
    f = L.jit(lambda x: x[: x.shape[0] // 2] if x.shape[0] > 4 else x * 1, dims=[{0: "n"}])
    for n in (8, 10, 3, 2, 12):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x[: n // 2] if n > 4 else x)
    assert f.ctx.compiles() == 2 and f.ctx.stats["hit"] == 3
    assert any("n > 4 is True" in g for g in f.guard_log) and any("n > 4 is False" in g for g in f.guard_log)


def test_step_variables_are_named_by_position_and_their_arithmetic_repeats():
    """A jit step names each size variable ``p<leaf>_<axis>`` -- the same names every
    step -- so a cached step's size arithmetic is the last step's (memoised), and
    an unnamed dim's guard reads the same each step (the log does not grow)."""
    seen = []

    def prog(x):
        seen.append(((x.shape[0] * 2 + 1).live(), (x.shape[0] // 2).live()))
        return x.expand(2, -1) if x.shape[0] >= 1 else x

    f = L.jit(prog)
    for n in (3, 4, 5):
        torch.testing.assert_close(f(torch.randn(n)).shape, (2, n))
    assert [str(e) for e in seen[0]] == ["2*p0_0 + 1", "p0_0 // 2"]
    assert seen[0][0] == seen[2][0] and seen[0][1] is seen[1][1] is seen[2][1]
    assert list(f.guard_log) == ["p0_0 >= 1 is True (bool)"]


def test_sizes_and_tensors_of_a_finished_step_are_refused():
    """Step names repeat, so a size or lazy tensor kept from an earlier step would read
    the current step's sizes: refused by its step stamp instead."""
    kept = {}

    def prog(x):
        if "size" in kept:
            for use in (
                lambda: kept["size"] * 2,
                lambda: x.expand(kept["size"], -1),
                lambda: int(kept["size"]),
                lambda: kept["tensor"].shape,
                lambda: x + kept["tensor"],
            ):
                with pytest.raises(L.FinishedStep, match="finished step"):
                    use()
        kept["size"], kept["tensor"] = x.shape[0], x * 1
        return x + 1

    f = L.jit(prog)
    for n in (3, 3, 5):
        x = torch.randn(n, 2)
        torch.testing.assert_close(f(x), x + 1)
