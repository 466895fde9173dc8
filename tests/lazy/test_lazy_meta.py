"""The generic shape rule (``engines.lazy.ops.meta``): a torch function the registry lacks runs
on fake tensors with symbolic sizes, and its nodes lower to the function itself. It must trace
symbolically (one compile over sizes), turn the meta kernel's guards into lazy guards (a size
that breaks one re-traces), refuse by name what it cannot trace, and agree with the registry's
own rules where both apply."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import engines.lazy as L
from engines.lazy.ops import OPS, guess, meta


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
    """``hypot`` broadcasts: at n == m its meta kernel guards ``m == n`` and predicts ``n``. In a
    jit step that guard is dropped (optimistic) and the real output's shape checked instead: at
    m == 1 the prediction ``n`` still holds (one graph, the real kernel broadcasting); at n == 1 the
    meta kernel predicts ``m``, another graph. Every size: eager's values, no demotion."""
    assert "hypot" not in OPS
    f = L.jit(torch.hypot, dims=[{0: "n"}, {0: "m"}])
    for (n, m), compiles in (((3, 3), 1), ((5, 1), 1), ((1, 5), 2), ((4, 4), 2)):
        x, y = torch.randn(n, 2), torch.randn(m, 2)
        torch.testing.assert_close(f(x, y), torch.hypot(x, y))
        assert f.ctx.compiles() == compiles, (n, m)
    assert "check_shape" in f.ctx.last.ir and not guess.DEMOTED & {_HYPOT}


def test_a_following_step_replays_the_generic_rule_and_its_check(monkeypatch):
    """A step that follows the last one runs no meta kernel for a generic call (its node and
    its ``check_shape`` are the last step's, replayed: ``cdist`` against a parameter, as a VQ
    codebook), and the check still runs: a replayed prediction the sizes break is traced
    afresh (above: ``hypot`` at n == 1), not demoted."""
    assert "cdist" not in OPS
    book = torch.randn(6, 4)

    def prog(x):
        return torch.cdist(x, book).argmin(-1)

    f = L.jit(prog, dims=[{0: "n"}])
    f(torch.randn(3, 4))
    ran = []
    real = meta._run_meta
    monkeypatch.setattr(meta, "_run_meta", lambda func, name, *a: ran.append(name) or real(func, name, *a))
    for n in (5, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(f(x), prog(x))
    assert ran == [] and f.ctx.compiles() == 1
    assert "check_shape" in f.ctx.last.ir


def test_a_replay_needs_the_guards_the_optimistic_trace_dropped():
    """DeepLabV3's image pooling: ``interpolate`` of a 1 x 1 pool to the input's size. At h == 1 the
    meta kernel guards ``h == 1`` and predicts 1 (the guard dropped: optimistic); a step at h == 2
    must not replay that prediction (``cat`` would refuse it while recording, before any check
    ran): the call's dropped guards decide otherwise, so its rule runs again."""

    def prog(x):
        up = F.interpolate(F.adaptive_avg_pool2d(x, 1), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return torch.cat([x, up], 1)

    f = L.jit(prog, dims=[{2: "h", 3: "w"}])
    for h, compiles in ((1, 1), (1, 1), (2, 2), (3, 2)):
        x = torch.randn(1, 2, h, h + 1)
        torch.testing.assert_close(f(x), prog(x))
        assert f.ctx.compiles() == compiles, h


def test_outside_a_jit_step_the_meta_guards_are_lazy_guards():
    """A plain lazy leaf's sync has no step to trace again: the meta kernel's guards stay guards."""
    ctx = L.LazyContext()
    x, y = L.tensor(torch.randn(3, 2), ctx=ctx), L.tensor(torch.randn(3, 2), ctx=ctx)
    z = torch.hypot(x, y)
    assert "check_shape" not in L.ir_dump(z) and ctx.guards
    torch.testing.assert_close(z.value(), torch.hypot(x.node.data, y.node.data))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.fft.fft(x, n=8),  # pads or trims: a guard ``s0 <= 8``
        lambda x: torch.fft.rfft(x, n=6),
    ],
)
def test_a_guard_that_does_not_change_the_output_shape_compiles_once(fn):
    f = L.jit(fn, dims=[{0: "n"}])
    for n in (5, 11, 7):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), fn(x))
    assert f.ctx.compiles() == 1


_HYPOT = "torch_fn:torch._VariableFunctionsClass.hypot"


def _plant_a_wrong_guess(monkeypatch):
    """The meta rule predicts every symbolic size one too large while ``hypot`` is not demoted
    (a guess its guards would have ruled out), right once it is."""
    monkeypatch.setattr(guess, "DEMOTED", set())
    expr = meta._Fake.expr

    def wrong(self, s):
        e = expr(self, s)
        return e if e.is_const or _HYPOT in guess.DEMOTED else e + 1

    monkeypatch.setattr(meta._Fake, "expr", wrong)


def _sized(x, y):
    h = torch.hypot(x, y)
    return h.sum() * h.shape[0]  # (the guessed size reaches a value)


def test_a_wrong_guess_is_caught_at_run_time_demoted_and_traced_again(monkeypatch):
    _plant_a_wrong_guess(monkeypatch)
    f = L.jit(_sized, dims=[{0: "n"}, {0: "m"}])
    for n in (3, 6):
        x, y = torch.randn(n, 2), torch.randn(n, 2)
        torch.testing.assert_close(f(x, y), _sized(x, y))
    assert {_HYPOT} == guess.DEMOTED
    assert "check_shape" not in f.ctx.last.ir and any("m == n" in g for g in f.guard_log)


def test_without_the_check_a_wrong_guess_goes_unseen(monkeypatch):
    """The planted guess of the test above, its runtime check a no-op: a wrong value (the check is
    what catches it)."""
    _plant_a_wrong_guess(monkeypatch)
    monkeypatch.setitem(meta.LOWER, "check_shape", lambda t, shape, dtype, key: t)
    f = L.jit(_sized, dims=[{0: "n"}, {0: "m"}])
    x, y = torch.randn(3, 2), torch.randn(3, 2)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(f(x, y), _sized(x, y))
    assert not guess.DEMOTED


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


@pytest.mark.parametrize("traced", ["optimistic", "guarded"])
def test_a_concrete_operand_has_constant_sizes_in_the_fake_world(traced):
    """``conv3d`` of a lazy input by a concrete weight (torchvision's video ResNets): the fake
    weight had symbols of its own, which reached a guard (``s37*s41*s49*s98 > 1``) and then the
    lazy context, where no variable answers them (a SizeError). Its sizes are constants."""
    assert "conv3d" not in OPS
    w = torch.randn(4, 3, 3, 3, 3)

    def prog(x):
        return torch.nn.functional.conv3d(x, w, padding=1)

    f = L.jit(prog)
    if traced == "guarded":  # (the meta guards as lazy guards: what a demoted function takes)
        guess.DEMOTED.add(meta.lower_key(torch.nn.functional.conv3d, "conv3d"))
    try:
        for n in (5, 7, 9):
            x = torch.randn(1, 3, n, 6, 6)
            torch.testing.assert_close(f(x), prog(x))
    finally:
        guess.DEMOTED.discard(meta.lower_key(torch.nn.functional.conv3d, "conv3d"))
    assert f.ctx.compiles() == 1
