"""Unit tests: one graph per signature, run-time checks, 0-size axes, compile/jit behaviour."""

import einx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch._dynamo.testing

from engines import einx_symbolic as ex


def test_one_graph_for_many_shapes():
    ex.clear_cache()  # other tests may have built this signature already
    n0 = ex.compile_count()
    for e in range(1000, 1050):
        d, c = torch.randn(e, 8), torch.rand(e) + 1
        torch.testing.assert_close(ex.divide("e d, e -> e d", d, c), d / c.unsqueeze(-1))
    assert ex.compile_count() - n0 == 1


def test_graph_has_no_baked_sizes():
    code = ex.subtract("e, r -> e r", torch.zeros(4096), torch.zeros(3), graph=True)
    assert "4096" not in code and "def op" in code
    # and independently of the text: the graph built for one pair of sizes gives NumPy's answer for others
    ex.clear_cache()
    n0 = ex.compile_count()
    rng = np.random.default_rng(0)
    for e, r in ((4096, 3), (5, 7), (1, 1), (0, 2)):
        a, b = rng.standard_normal(e).astype(np.float32), rng.standard_normal(r).astype(np.float32)
        np.testing.assert_array_equal(
            ex.subtract("e, r -> e r", torch.from_numpy(a), torch.from_numpy(b)).numpy(), a[:, None] - b[None, :]
        )
    assert ex.compile_count() - n0 == 1


def test_zero_size_axes():
    d, c = torch.zeros(0, 8), torch.ones(0)
    assert ex.divide("e d, e -> e d", d, c).shape == (0, 8)
    assert ex.sum("a [b]", torch.zeros(3, 0)).tolist() == [0.0, 0.0, 0.0]
    assert ex.id("(a b) -> a b", np.zeros(0), b=4).shape == (0, 4)
    assert ex.dot("e [d], [d] f -> e f", torch.zeros(0, 3), torch.ones(3, 2)).shape == (0, 2)
    assert ex.get_at("[h], p -> p", torch.arange(4.0), torch.zeros(0, dtype=torch.long)).shape == (0,)


def test_runtime_check_names_axis_and_sizes():
    ex.divide("e d, e -> e d", torch.zeros(3, 8), torch.ones(3))
    with pytest.raises(einx.errors.AxisSizeError) as info:
        ex.divide("e d, e -> e d", torch.zeros(3, 8), torch.ones(4))
    msg = str(info.value)
    assert "e" in msg and "3" in msg and "4" in msg and "args[1].shape[0]" in msg and "^" in msg


def test_divisibility_check():
    assert ex.id("(a b) -> a b", torch.zeros(8), b=4).shape == (2, 4)
    with pytest.raises(einx.errors.AxisSizeError, match="not divisible"):
        ex.id("(a b) -> a b", torch.zeros(6), b=4)


def test_errors_subclass_einx_and_mark_expression():
    with pytest.raises(einx.errors.SemanticError) as info:
        ex.dot("a [b], [c] d -> a d", torch.zeros(3, 4), torch.zeros(4, 5))
    assert 'Expression: "a [b], [c] d -> a d"' in str(info.value) and "^" in str(info.value)
    with pytest.raises(einx.errors.SyntaxError):
        ex.id("a (b -> b a", torch.zeros(3, 4))
    with pytest.raises(einx.errors.RankError):
        ex.id("a b c -> a c b", torch.zeros(3, 4))


def test_constraint_params_are_runtime_values():
    ex.clear_cache()
    n0 = ex.compile_count()
    x = torch.arange(6.0)
    for b in (1, 2, 3, 6):
        assert torch.equal(ex.id("(a b) -> a b", x, b=b), x.reshape(6 // b, b))
    assert ex.compile_count() - n0 == 1


def _compiled_frames(warm: bool) -> list[int]:
    """dynamo frame counts after each of five novel edge counts."""
    torch._dynamo.reset()
    ex.clear_cache()
    if warm:  # the signature's graph is built before dynamo sees the call
        ex.divide("e d, e -> e d", torch.randn(3, 8), torch.rand(3) + 1)
    counter = torch._dynamo.testing.CompileCounter()

    @torch.compile(backend=counter, dynamic=True)
    def f(d, c):
        return ex.divide("e d, e -> e d", d, c)

    frames = []
    for e in (5, 7, 11, 13, 17):
        d, c = torch.randn(e, 8), torch.rand(e) + 1
        torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
        frames.append(counter.frame_count)
    return frames


def test_torch_compile_dynamic_no_recompile_per_shape():
    # with the graph built, dynamo traces the generated code once for every size
    assert _compiled_frames(warm=True) == [1, 1, 1, 1, 1]
    # a cold cache: dynamo traces through the build (one frame; it parses with string
    # methods, no regex), and once more when the cache it guarded on has filled; never
    # again per shape (one graph build: test_torch_compile_cold_cache_builds_once)
    assert _compiled_frames(warm=False) == [1, 2, 2, 2, 2]


def test_torch_compile_cold_cache_builds_once():
    n0 = ex.compile_count()
    _compiled_frames(warm=False)
    assert ex.compile_count() - n0 == 1


def test_jax_jit_traces_once_per_shape_only():
    traces = []

    @jax.jit
    def f(d, c):
        traces.append(d.shape)
        return ex.divide("e d, e -> e d", d, c)

    ex.clear_cache()
    n0 = ex.compile_count()
    for e in (3, 4, 3):
        d, c = jnp.ones((e, 2)), jnp.full((e,), 2.0)
        np.testing.assert_allclose(np.asarray(f(d, c)), 0.5)
    assert len(traces) == 2  # jax's own retrace per new shape, nothing more
    assert ex.compile_count() - n0 == 1  # one graph serves both traces


def test_rearrange_alias_and_backend_kwarg():
    x = np.arange(6.0).reshape(2, 3)
    assert ex.rearrange("a b -> b a", x).shape == (3, 2)
    y = ex.id("a b -> b a", x, backend="torch")
    assert isinstance(y, torch.Tensor) and y.shape == (3, 2)


@pytest.mark.parametrize("n", range(1, 31))
def test_divisor_of_several_factors_agrees_with_einx(n, cmp):
    # the divisor of "(a b c)" given a and b is the product a*b: the check must test d % (a*b),
    # not (d % a) * b (14 is divisible by a=2 but not by a*b=6: einx raises AxisSizeError)
    for args in [
        ("rearrange", "(a b c) -> a b c", np.arange(n), {"a": 2, "b": 3}),
        ("id", "(a b c) d -> a b c d", torch.randn(n, 1), {"b": 1, "c": 2}),
        ("id", "(a b c) d -> a b c d", torch.randn(n, 2), {"b": 2, "c": 2}),
    ]:
        (k1, r1), (_k2, r2) = cmp(*args[:3], **args[3])
        if k1 == "err":  # the same error class as einx: the divisibility check, not a failure later on
            assert isinstance(r1, einx.errors.AxisSizeError) and isinstance(r2, einx.errors.AxisSizeError), (args, r1, r2)


def test_product_divisor_check_and_source():
    with pytest.raises(einx.errors.AxisSizeError, match="not divisible by a \\* b = 6"):
        ex.rearrange("(a b c) -> a b c", np.arange(14), a=2, b=3)
    x = torch.randn(2, 1)
    assert torch.equal(ex.id("(a b c) d -> a b c d", x, b=1, c=2), einx.id("(a b c) d -> a b c d", x, b=1, c=2))
    code = ex.rearrange("(a b c) -> a b c", np.arange(12), a=2, b=3, graph=True)
    assert "d0_0 % (p_a * p_b) != 0" in code and "d0_0 // (p_a * p_b)" in code
