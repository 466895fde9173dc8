"""Replay past a mid-step sync and over concrete tensors (``engines.lazy.replay``).

A step that syncs midway (a data-dependent count, a value read) goes on logging: its later
calls are kept and followed, and each later sync is keyed by the log, so a step that follows
the last one to its end traces no graph. A call over a parameter (a concrete tensor the rule
makes a constant leaf of) is kept too, matched by the tensor's identity and version."""

from __future__ import annotations

import torch

import engines.lazy as L
from engines.lazy import passes, runtime
from engines.lazy.ops import linalg
from engines.lazy.replay import Held, OpCall, Ref


def _masked(x, w):
    y = x[x[:, 0] > 0]  # a data-dependent count: a sync, then a leaf of a new size variable
    return (y * w).sum(0) + x.sum(0)


def _traced(monkeypatch) -> list:
    """The graphs ``sync`` traces (a sync the log did not key, or keyed and not found)."""
    seen: list = []
    real = passes.trace
    monkeypatch.setattr(runtime.passes, "trace", lambda roots, table: seen.append(roots) or real(roots, table))
    return seen


def test_a_step_is_logged_keyed_and_followed_past_a_mid_step_sync(monkeypatch):
    f = L.jit(_masked, dims=[{0: "n"}, None])
    w = torch.randn(3)
    for n in (6, 7):
        f(torch.randn(n, 3, generator=torch.Generator().manual_seed(n)), w)
    tape = f.ctx.tape
    assert len(tape.syncs) == 2  # the count's sync and the step's own
    first = tape.syncs[0][0]
    assert any(type(c) is OpCall for c in tape.calls[first:])  # calls after the first sync are kept
    compiles, seen = f.ctx.compiles(), _traced(monkeypatch)
    for n in (9, 4, 9):
        x = torch.randn(n, 3, generator=torch.Generator().manual_seed(n))
        torch.testing.assert_close(f(x, w), _masked(x, w))
        assert [s[3] for s in f.ctx.tape.syncs] == [s[3] for s in tape.syncs]  # the last step's keys, taken
    assert seen == [] and f.ctx.compiles() == compiles  # both syncs found by their log keys


def test_a_step_that_syncs_elsewhere_follows_no_further():
    """The same calls, another tensor synced midway (read as a value): the nodes the sync made
    leaves differ, so the step's later sync, though at the same place, must not take the last
    step's key; and a value read in one step only: the keys are those of a fresh trace."""

    def prog(x, which):
        y, z = x * 2.0, x + 1.0
        if which is not None:
            (y if which else z).numpy()  # (a sync of one of them: a leaf holding its value now)
        return y * z

    followed, fresh = L.jit(prog, dims=[{0: "n"}, None]), L.jit(prog, dims=[{0: "n"}, None])
    for n, which in ((3, True), (4, True), (5, False), (6, True), (6, None), (7, None), (7, False)):
        x = torch.randn(n)
        fresh.ctx.tape = None
        torch.testing.assert_close(followed(x, which), prog(x, which))
        fresh(x, which)
        assert followed.ctx.last_key == fresh.ctx.last_key, (n, which)
    assert followed.ctx.compiles() == fresh.ctx.compiles()


def _linear_rules(monkeypatch) -> list:
    ran: list = []
    real = linalg.assume_eq
    monkeypatch.setattr(linalg, "assume_eq", lambda *a: ran.append(a[-1]) or real(*a))
    return ran


def test_a_call_over_a_parameter_is_replayed_while_the_parameter_is_unchanged(monkeypatch):
    lin = torch.nn.Linear(4, 3)
    f = L.jit(lambda x: lin(x).relu(), dims=[{0: "n"}])
    for n in (2, 3):
        f(torch.randn(n, 4))
    (call,) = {id(c): c for c in f.ctx.tape.calls if type(c) is OpCall and c.op == "linear"}.values()
    assert [type(s) for s in call.spec] == [Ref, Held, Held] and len(call.consts) == 2
    ran = _linear_rules(monkeypatch)
    x = torch.randn(5, 4)
    torch.testing.assert_close(f(x), lin(x).relu())
    assert ran == []  # the weight and bias are the last step's: no rule ran
    with torch.no_grad():
        lin.weight.mul_(2.0)  # (in place: its version moves, a rule may read its values)
    torch.testing.assert_close(f(x), lin(x).relu())
    assert ran == ["linear"]
    lin.bias = torch.nn.Parameter(torch.randn(3))  # another tensor: not the last step's
    torch.testing.assert_close(f(x), lin(x).relu())
    assert ran == ["linear", "linear"] and f.ctx.compiles() == 1


def test_the_constants_of_a_replayed_call_are_logged_as_its_rule_logs_them():
    """A replayed call over a parameter logs the constant leaves and the node a fresh trace does:
    the same entries and key, and the node's operands are this step's leaves, not the last one's."""
    norm = torch.nn.LayerNorm(4)
    prog = lambda x: norm(x * 2.0)  # noqa: E731 (F.layer_norm: its weight and bias by keyword)
    followed, fresh = L.jit(prog, dims=[{0: "n"}]), L.jit(prog, dims=[{0: "n"}])
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        fresh.ctx.tape = None
        torch.testing.assert_close(followed(x), norm(x * 2.0))
        fresh(x)
        assert followed.ctx.tape.entries == fresh.ctx.tape.entries and followed.ctx.last_key == fresh.ctx.last_key
    call = next(c for c in followed.ctx.tape.calls if type(c) is OpCall and c.consts)
    assert call.kwrefs  # (the weight and bias Nodes by keyword, as Refs)
    g, _ = followed.trace(torch.randn(6, 4))  # (a followed step, traced: its graph's leaves are its own)
    log = followed.ctx.log
    assert len(g.inputs) == 3 and all(log.nodes[n.pos] is n for n in g.inputs)
    assert followed.ctx.compiles() == fresh.ctx.compiles() == 1


def test_a_list_of_operands_is_matched_item_by_item():
    """``cat([x, y])`` and ``cat([y, x])`` (operands by position), or over a float zero of
    either sign: a replayed call takes the last step's node only when each item is its own."""

    def prog(x, y, swap, k):
        return torch.cat([y, x * k] if swap else [x * k, y]) * 2.0

    f = L.jit(prog, dims=[{0: "n"}, {0: "n"}, None, None])
    for n, swap, k in ((3, False, 1.0), (4, False, 1.0), (4, True, 1.0), (5, True, -0.0), (6, True, 0.0), (6, False, 0.0)):
        x, y = torch.randn(n), torch.randn(n)
        out = f(x, y, swap, k)
        torch.testing.assert_close(out, prog(x, y, swap, k))
        assert torch.equal(torch.signbit(out), torch.signbit(prog(x, y, swap, k)))
    assert any(type(c) is OpCall and c.op == "cat" for c in f.ctx.tape.calls)
