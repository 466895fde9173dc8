"""Replay (``engines.lazy.replay``): a jit step that follows the last one takes each call's
shape, dtype and log entry from it instead of running the call's shape rule. It must serve
exactly what a fresh trace of the step would: the same outputs, keys and compiles, with
every guard a replayed rule made decided again; a call that cannot be replayed (an in-place
op, a data-dependent size, a Python scalar of another type or sign) is traced as it was."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import engines.lazy as L
from engines.lazy.ops import rules
from engines.lazy.replay import LeafCall, OpCall

# -- a program grammar: ops on a running tensor ``y`` (rank 1 or 2), drawn from a table ----------
# each: (name, the ranks it takes, y -> y); ``v`` is a second input of shape (p,), p = n or 1
SCALARS = (2.0, 3, -1.5, 0.0, -0.0, True)


def _scale(s):
    return lambda y, v: y * s


OPS = {
    **{f"scale {s!r}": ((1, 2), _scale(s)) for s in SCALARS},
    "add self": ((1, 2), lambda y, v: y + y),
    "broadcast v": ((1,), lambda y, v: y + v),  # p == n or p == 1: a guard per step
    "rows v": ((2,), lambda y, v: y * v.unsqueeze(-1)),
    "slice 3": ((1, 2), lambda y, v: y[:3]),  # clamps: a guard on n <= 3
    "half": ((1, 2), lambda y, v: y[: y.shape[0] // 2]),
    "sum last": ((2,), lambda y, v: y.sum(-1)),
    "unsqueeze": ((1,), lambda y, v: y.unsqueeze(-1)),
    "transpose": ((2,), lambda y, v: y.transpose(0, 1).contiguous().transpose(0, 1)),
    "where": ((1, 2), lambda y, v: torch.where(y > 0, y, y * 0.5)),
    "in place": ((1, 2), lambda y, v: y.clone().add_(1.0)),
    "mask": ((1,), lambda y, v: y[y > 0]),  # a data-dependent count: a new size variable
    "flatten": ((2,), lambda y, v: y.reshape(-1)),
    "view rows": ((1,), lambda y, v: y[: (y.shape[0] // 2) * 2].view(-1, 2)),
    "branch": ((1, 2), lambda y, v: y * 2 if y.shape[0] > 3 else y - 1),
    "softmax": ((1, 2), lambda y, v: torch.softmax(y, dim=-1)),
    # the generic rule's (torch's meta kernel, its prediction checked at run time): a following step
    # replays the call and its check (a prediction that fails: tests/lazy/test_lazy_meta.py)
    "hypot v": ((1,), lambda y, v: torch.hypot(v, y)),
    "cdist": ((2,), lambda y, v: torch.cdist(y, y[:2])),
    # syncs midway (the step goes on logging and following): a value read, a branch on one, a sync
    "value read": ((1, 2), lambda y, v: y * float(y.abs().sum() > 2)),
    "value branch": ((1, 2), lambda y, v: y + 1 if bool(y.sum() > 0) else y * 3),
    "sync": ((1, 2), lambda y, v: (y.numpy(), y)[1] + 0.5),
}


def _program(names):
    def prog(x, v):
        y = x
        for name in names:
            ranks, op = OPS[name]
            if y.ndim in ranks:
                y = op(y, v)
        return y * 1.0

    return prog


def _inputs(n, m, p, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, m, generator=g), torch.randn(p, generator=g)


def _same(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, msg=what)
    assert torch.equal(torch.signbit(got), torch.signbit(want)), what  # (-0.0: a step of its own)


def _run(f, steps, follow: bool):
    keys, outs = [], []
    for i, (n, m, p) in enumerate(steps):
        if not follow:
            f.ctx.tape = None  # (a fresh trace: no last step to follow)
        outs.append(f(*_inputs(n, m, p, i)))
        keys.append(f.ctx.last_key)
    return keys, outs


@settings(deadline=None)
@given(
    names=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6),
    sizes=st.lists(
        st.tuples(st.integers(1, 7), st.integers(1, 4), st.booleans()).map(lambda t: (t[0], t[1], t[0] if t[2] else 1)),
        min_size=2,
        max_size=6,
    ),
)
def test_a_generated_program_replays_what_a_fresh_trace_does(names, sizes):
    """Programs from the op table above, over steps whose sizes change (and flip their
    guards): each step equals eager torch, and keys, compiles and guards equal those of the
    same steps traced afresh (nothing followed)."""
    prog = _program(names)
    steps = sizes + sizes[:2]  # (back to earlier sizes: steps that follow a step of other sizes)
    try:
        for i, (n, m, p) in enumerate(steps):
            prog(*_inputs(n, m, p, i))
    except RuntimeError:  # torch refuses the program at some size (a broadcast of p != n): so must we
        with pytest.raises((RuntimeError, L.ShapeError)):
            _run(L.jit(prog), steps, follow=True)
        return
    followed, fresh = L.jit(prog), L.jit(prog)
    keys, outs = _run(followed, steps, follow=True)
    fresh_keys, _ = _run(fresh, steps, follow=False)
    for i, (n, m, p) in enumerate(steps):
        _same(outs[i], prog(*_inputs(n, m, p, i)), (names, steps[i]))
    assert keys == fresh_keys, names
    assert followed.ctx.compiles() == fresh.ctx.compiles(), names
    assert list(followed.guard_log) == list(fresh.guard_log), names


def test_a_following_step_runs_no_shape_rule(monkeypatch):
    """The point of replay: on a step that follows, neither ``d / c.unsqueeze(-1)``'s broadcast
    rule nor the leaves' plan runs; the step logs the last step's calls and takes its key."""
    f = L.jit(lambda d, c: d / c.unsqueeze(-1), dims=[{0: "e"}, {0: "e"}])
    f(torch.randn(5, 8), torch.rand(5))
    f(torch.randn(6, 8), torch.rand(6))
    tape = f.ctx.tape
    assert [type(c) for c in tape.calls] == [LeafCall, LeafCall, OpCall, OpCall]
    ran = []
    real = rules.broadcast
    monkeypatch.setattr(rules, "broadcast", lambda *a: ran.append(a) or real(*a))
    from engines.lazy.ops import elementwise

    monkeypatch.setattr(elementwise, "broadcast", rules.broadcast)
    d, c = torch.randn(9, 8), torch.rand(9) + 0.5
    torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
    assert ran == []  # no rule ran
    assert all(a is b for a, b in zip(f.ctx.tape.calls, tape.calls, strict=True))  # the last step's calls
    assert f.ctx.tape.keyed is tape.keyed and f.ctx.compiles() == 1
    f.ctx.tape = None  # a step that has no step to follow runs the rule
    f(d, c)
    assert len(ran) == 1


def test_a_guard_a_replayed_rule_made_is_decided_again():
    """``y + v`` of sizes n and p: equal sizes (a guard n == p) the last step; p == 1 now, so
    the guard decides otherwise and the rule runs again (a broadcast over n)."""
    f = L.jit(lambda y, v: (y + v) * 2)
    for n, p in ((4, 4), (5, 5), (5, 1), (1, 6), (6, 6)):
        y, v = torch.randn(n), torch.randn(p)
        torch.testing.assert_close(f(y, v), (y + v) * 2)
    assert f.ctx.compiles() == 3  # n == p, p == 1, n == 1


def test_a_constant_axis_of_another_size_is_another_leaf():
    f = L.jit(lambda x: x.sum(0), dims=[{0: "n"}])
    for n, m in ((3, 2), (4, 2), (4, 5), (2, 5)):
        x = torch.randn(n, m)
        torch.testing.assert_close(f(x), x.sum(0))
    assert f.ctx.compiles() == 2


def test_scalars_match_by_type_and_value():
    """``x * 2`` and ``x * 2.0`` and ``x * True`` differ in dtype or graph; each step equals torch."""
    f = L.jit(lambda x, k: x * k)
    x = torch.arange(4, dtype=torch.int64)
    for k in (2, 2, 2.0, True, 3, 2.0, float("nan"), float("nan"), -0.0, 0.0):
        out = f(x, k)
        assert out.dtype == (x * k).dtype
        torch.testing.assert_close(out, x * k, equal_nan=True)
        assert torch.equal(torch.signbit(out), torch.signbit(x * k))


def test_bounds_and_named_dims_are_checked_on_a_following_step():
    f = L.jit(lambda a, b: a + b, mode="bounded", dims=[{0: "n"}, {0: "n"}], bounds=[{0: 8}, {0: 8}])
    for n in (3, 4):
        f(torch.randn(n), torch.randn(n))
    with pytest.raises(L.BoundError, match="dim n of input is 9, past the bound 8"):
        f(torch.randn(9), torch.randn(9))
    with pytest.raises(ValueError, match="dim n is 5 in one input and 6 in another"):
        f(torch.randn(5), torch.randn(6))
    torch.testing.assert_close(f(a := torch.randn(7), b := torch.randn(7)), a + b)
    assert f.ctx.compiles() == 1


def test_a_step_that_leaves_the_last_one_traces_the_rest():
    """A step that records another op midway stops following: its later calls run their rules
    and its key is built, so it compiles (or hits) its own graph."""

    def prog(x, flag):
        y = x.unsqueeze(0) * 2.0
        y = y + 1 if flag else y - 1
        return y.sum(0) * 3.0

    f = L.jit(prog, dims=[{0: "n"}, None])
    for n, flag in ((3, True), (4, True), (5, False), (6, False), (2, True)):
        x = torch.randn(n)
        torch.testing.assert_close(f(x, flag), prog(x, flag))
    assert f.ctx.compiles() == 2 and f.ctx.stats["hit"] == 3


def test_calls_that_are_not_replayed():
    """An in-place op (it renames its operand) and a data-dependent size (a new variable each
    step) are traced every step, and still equal torch; the calls over a list of operands
    (``cat``, ``stack``) are kept."""

    def prog(x):
        y = x.clone()
        y.mul_(2.0)
        s = torch.stack([x.sum(), x.amax()]).sum()
        z = y[y > 0]  # nonzero count: data-dependent (a sync; the step log goes on)
        return torch.cat([z, z]) + s

    f = L.jit(prog)
    for i, n in enumerate((5, 6, 6, 9)):
        x = torch.randn(n, generator=torch.Generator().manual_seed(i))
        torch.testing.assert_close(f(x), prog(x))
    kept = {c.impl.__name__ for c in f.ctx.tape.calls if type(c) is OpCall}
    assert {"mul", "gt", "sum", "amax", "cat", "stack"} <= kept  # (mul_'s out-of-place mul is a call of its own)
    assert not kept & {"mul_", "getitem"}, kept


def test_a_call_with_its_operands_by_keyword_is_replayed(monkeypatch):
    """``baddbmm(input=..., batch1=..., batch2=..., beta=, alpha=)`` (BLOOM's attention scores, the
    generic rule's): kept with its operands by name, so a following step runs no rule for it;
    a step that passes other operands by those names replays nothing of it (equal to torch)."""
    from engines.lazy.ops import meta

    flip = [False]

    def prog(a, b, c):
        x, y = b * 2, c * 3
        if flip[0]:
            x, y = y, x
        return torch.baddbmm(input=a, batch1=x, batch2=y, beta=1.0, alpha=0.25)

    def inputs(n, seed):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(2, n, n, generator=g) for _ in range(3)]

    f = L.jit(prog, dims=[{1: "n", 2: "n"}] * 3)
    f(*inputs(4, 0))
    f(*inputs(5, 1))
    ran = []
    real = meta._run_meta
    monkeypatch.setattr(meta, "_run_meta", lambda func, name, *a: ran.append(name) or real(func, name, *a))
    x = inputs(7, 2)
    torch.testing.assert_close(f(*x), prog(*x))
    assert ran == [] and any(type(c) is OpCall and c.kwspec for c in f.ctx.tape.calls)
    flip[0] = True
    x = inputs(6, 3)
    torch.testing.assert_close(f(*x), prog(*x))
    assert ran == ["baddbmm"]


def test_a_step_that_syncs_another_of_its_tensors_has_another_key():
    """Two steps that record the same calls but return different tensors of them: the second
    follows the first to its sync, and must not take its key (the synced positions differ)."""

    def prog(x, which):
        y, z = x * 2.0, x + 1.0
        return y if which else z

    f = L.jit(prog, dims=[{0: "n"}, None])
    for n, which in ((3, True), (4, True), (4, False), (5, False), (6, True)):
        x = torch.randn(n)
        torch.testing.assert_close(f(x, which), prog(x, which))
    assert f.ctx.compiles() == 2


def test_a_step_keeps_only_the_last_steps_log():
    """Each step follows the one before it, not a chain of them: the logs of earlier steps,
    and their tensors, are freed."""
    import sys

    f = L.jit(lambda d, c: d / c.unsqueeze(-1), dims=[{0: "e"}, {0: "e"}])
    f(torch.randn(2, 8), torch.rand(2))
    first = f.ctx.tape
    for n in range(3, 30):
        f(torch.randn(n, 8), torch.rand(n))
    assert sys.getrefcount(first) == 2  # (this function's name and the call's argument): nothing else holds it
    assert f.ctx.tape.follows is None and f.ctx.tape.nodes == ()  # (its tensors: the caller's now, or freed)


def test_a_step_under_another_default_dtype_follows_nothing():
    """Rules read torch's default dtype (``int / int``, ``torch.zeros(n)``): a step after
    ``torch.set_default_dtype`` traces afresh and compiles for the new dtype (followed, the
    division would keep the last step's dtype and its kernel run to another)."""
    f = L.jit(lambda x: x / 2)
    before = torch.get_default_dtype()
    try:
        for dt in (torch.float32, torch.float32, torch.float64, torch.float64, torch.float32):
            torch.set_default_dtype(dt)
            x = torch.arange(5)
            out = f(x)
            assert out.dtype == dt
            torch.testing.assert_close(out, x / 2)
    finally:
        torch.set_default_dtype(before)
    assert f.ctx.compiles() == 2


def test_a_data_dependent_leaf_returned_as_is_is_not_replayed():
    """``argwhere`` of an input makes its output a leaf (after a sync); a step that returns it
    follows the last one, and must not replay that call as a node with no data."""
    f = L.jit(torch.argwhere, dims=[{0: "n"}])
    for n in (4, 8, 8):
        x = torch.tensor([0.0, 1.0] * (n // 2))
        torch.testing.assert_close(f(x), torch.argwhere(x))
    assert not any(type(c) is OpCall for c in f.ctx.tape.calls)
