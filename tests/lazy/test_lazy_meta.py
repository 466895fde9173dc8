"""The generic shape rule (``engines.lazy.ops.meta``): a torch function the registry lacks runs
on fake tensors with symbolic sizes, and its nodes lower to the function itself. It must trace
symbolically (one compile over sizes), turn the meta kernel's guards into lazy guards (a size
that breaks one re-traces), refuse by name what it cannot trace, and agree with the registry's
own rules where both apply."""

from __future__ import annotations

import pytest
import torch

import engines.lazy as L
from engines.lazy.ops import OPS, meta


def test_a_function_without_a_registry_entry_traces_symbolically():
    assert "acosh" not in OPS and "special_xlogy" not in OPS

    def prog(x, y):
        return torch.special.xlogy(torch.acosh(x + 1), y) * 2

    f = L.jit(prog, dims=[{0: "n"}, {0: "n"}])
    for n in (3, 7, 7):
        x, y = torch.rand(n, 4), torch.rand(n, 4)
        torch.testing.assert_close(f(x, y), prog(x, y))
    assert f.ctx.compiles() == 1
    ir = f.ctx.last.ir
    assert "torch_fn:" in ir and "s0_0" in ir  # the generic node, over the symbolic size


def test_a_guard_of_the_meta_kernel_retraces_at_a_size_that_breaks_it():
    """``hypot`` broadcasts: at n == m its meta kernel guards ``m == n``; at m == 1 that guard
    fails, so the step is traced again (a reused graph would predict the wrong shape)."""
    assert "hypot" not in OPS
    f = L.jit(torch.hypot, dims=[{0: "n"}, {0: "m"}])
    x, y = torch.randn(3, 2), torch.randn(3, 2)
    torch.testing.assert_close(f(x, y), torch.hypot(x, y))
    assert any("m == n" in g for g in f.guard_log)
    x, y = torch.randn(5, 2), torch.randn(1, 2)
    torch.testing.assert_close(f(x, y), torch.hypot(x, y))
    assert f.ctx.compiles() == 2
    x, y = torch.randn(4, 2), torch.randn(4, 2)  # the first graph again
    torch.testing.assert_close(f(x, y), torch.hypot(x, y))
    assert f.ctx.compiles() == 2


def test_several_outputs_keep_their_structure():
    f = L.jit(torch.frexp, dims=[{0: "n"}])
    for n in (3, 6):
        x = torch.randn(n, 2)
        got, want = f(x), torch.frexp(x)
        assert type(got) is type(want)
        torch.testing.assert_close(got.mantissa, want.mantissa)
        torch.testing.assert_close(got.exponent, want.exponent)
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize(
    ("fn", "kind"),
    [
        (torch.unique, "data-dependent output"),
        (lambda x: torch.Tensor.acosh_(x + 2), "in-place"),
        (lambda x: torch.acosh(x, out=torch.empty(4)), "in-place"),
        (torch.rand_like, "random"),
        (
            lambda x: torch.nn.functional.triplet_margin_with_distance_loss(
                x, x, x, distance_function=torch.nn.PairwiseDistance()
            ),
            "unsupported argument",
        ),
    ],
)
def test_what_the_generic_rule_cannot_trace_is_refused_by_name(fn, kind):
    with pytest.raises(L.UntraceableOp) as e:
        L.jit(fn, dims=[{0: "n"}])(torch.rand(4))
    assert e.value.kind == kind


# -- the registry's rules against the meta kernel's, on operands of several dtypes and shapes --------
_DTYPES = (torch.float32, torch.int64, torch.bool)
_UNARY = ("neg", "abs", "sign", "floor", "exp", "sqrt", "sigmoid", "isnan", "logical_not", "bitwise_not", "square", "round")
_BINARY = (
    *("add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "atan2"),
    *("eq", "ne", "lt", "ge", "logical_and", "logical_xor", "bitwise_and", "bitwise_xor"),
)


def _example(dtype, shape):
    return (torch.rand(shape) * 4).to(dtype)


def _both(func, name, *args, **kwargs):
    """(the registry's (shape, dtype), the meta rule's) for ``func(*args)`` on lazy leaves; None when torch refuses."""
    try:
        want = func(*args, **kwargs)
    except (RuntimeError, TypeError):
        return None
    out = []
    for impl in (OPS[name], meta._generic(func, name)):
        ctx = L.LazyContext()
        lazy = [ctx.input(a) if isinstance(a, torch.Tensor) else a for a in args]
        r = impl(*lazy, **kwargs)
        out.append((r.node.hints(ctx.vars.hints), r.node.dtype))
    return out, (tuple(want.shape), want.dtype)


@pytest.mark.parametrize("name", _UNARY)
def test_unary_rules_agree_with_the_meta_kernel(name):
    for dt in _DTYPES:
        got = _both(getattr(torch, name), name, _example(dt, (3, 2)))
        if got is not None:
            (reg, gen), want = got
            assert reg == gen == want, (name, dt)


@pytest.mark.parametrize("name", _BINARY)
def test_binary_rules_agree_with_the_meta_kernel(name):
    for da in _DTYPES:
        for db in _DTYPES:
            for sa, sb in (((3, 1), (1, 4)), ((3,), (2, 3))):
                got = _both(getattr(torch, name), name, _example(da, sa), _example(db, sb))
                if got is not None:
                    (reg, gen), want = got
                    assert reg == gen == want, (name, da, db, sa, sb)


@pytest.mark.parametrize("name", ["clamp", "clamp_min", "clamp_max", "clip"])
def test_clamp_bounds_broadcast_as_the_meta_kernel_says(name):
    x, lo = _example(torch.float32, (5, 1)), _example(torch.float32, (5, 5))
    args = (x, lo) if name in ("clamp_min", "clamp_max") else (x, lo, None)
    (reg, gen), want = _both(getattr(torch, name), name, *args)
    assert reg == gen == want


def test_a_tensor_attribute_the_class_lacks_takes_the_generic_rule():
    f = L.jit(lambda x: x.mH * 2 + x.H.sum(), dims=[{0: "n", 1: "n"}])
    for n in (3, 5):
        x = torch.randn(n, n)
        torch.testing.assert_close(f(x), x.mH * 2 + x.H.sum())
    assert f.ctx.compiles() == 1
