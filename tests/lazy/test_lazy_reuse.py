"""A cached step takes the last step's nodes and lazy tensors by position (``engines/lazy/reuse.py``):
only when no one else holds any of them, and from the start of the step only. Each test fails
when the check it names is removed (``docs/findings/2026-12-05-seed-step.md``, "Taking the last step's nodes")."""

from __future__ import annotations

import weakref

import torch

import engines.lazy as L


def _divide():
    return L.jit(lambda d, c: d / c.unsqueeze(-1), dims=[{0: "e"}, {0: "e"}])


def _inputs(n: int):
    return torch.randn(n, 8), torch.rand(n) + 0.5


def test_a_cached_step_takes_the_last_steps_nodes_and_tensors():
    """From the third step on (the first step's leaves are held by its compile), each step takes
    every node and tensor of the last one, and returns what eager does."""
    f = _divide()
    for n in (3, 4):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
    assert len(f.ctx._spare) == 4
    assert all(t.node.data is None for t in f.ctx._spare)  # (the step's inputs and output: not kept alive)
    tensors, nodes = [id(t) for t in f.ctx._spare], [id(t.node) for t in f.ctx._spare]  # (ids: not held here)
    for n in range(5, 9):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
        assert f.ctx.reused == 4
        assert [id(t) for t in f.ctx._spare] == tensors and [id(t.node) for t in f.ctx._spare] == nodes
    assert f.ctx.compiles() == 1


def test_a_tensor_the_program_keeps_keeps_its_steps_nodes():
    """A tensor kept from a step (not synced: its graph reads that step's leaves) leaves every node
    of its step as it was: the next step makes its own (the tensors' reference counts)."""
    kept = []

    def prog(d, c, keep):
        x = c.unsqueeze(-1)
        if keep:
            kept.append(x)
        return d / x

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        f(*_inputs(n), False)
    d, c = _inputs(6)
    f(d, c, True)
    for n in (7, 8, 9):
        d2, c2 = _inputs(n)
        torch.testing.assert_close(f(d2, c2, False), d2 / c2.unsqueeze(-1))
    x = kept[0].node
    assert x.op == "unsqueeze" and x.args[0].data is c  # its step's leaf, with its step's input


def test_a_tensor_watched_by_a_weak_reference_is_not_taken():
    """A weak reference to a step's tensor keeps the step's nodes from being taken again."""
    watched = []

    def prog(d, c, watch):
        x = c.unsqueeze(-1)
        if watch:
            watched.append(weakref.ref(x))
        return d / x

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        f(*_inputs(n), False)
    f(*_inputs(6), True)
    assert f.ctx._spare is None
    d, c = _inputs(7)
    torch.testing.assert_close(f(d, c, False), d / c.unsqueeze(-1))
    assert watched[0]() is None  # (freed: not kept by a later step)


def test_a_node_held_elsewhere_is_not_taken():
    """A node held without its tensor (here the program's own reference) is never changed by a
    later step: its step's nodes are not taken (the nodes' reference counts)."""
    held = []

    def prog(d, c, hold):
        x = c.unsqueeze(-1)
        if hold:
            held.append(x.node)
        return d / x

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        f(*_inputs(n), False)
    d, c = _inputs(6)
    f(d, c, True)
    for n in (7, 8):
        d2, c2 = _inputs(n)
        torch.testing.assert_close(f(d2, c2, False), d2 / c2.unsqueeze(-1))
    (x,) = held
    assert x.op == "unsqueeze" and x.args[0].data is c


def test_a_tensor_with_an_attribute_set_is_not_taken():
    """An attribute the program set on a lazy tensor is not seen by a later step's tensor."""
    seen = []

    def prog(d, c, tag):
        x = c.unsqueeze(-1)
        seen.append(hasattr(x, "tag"))
        if tag:
            x.tag = "step"
        return d / x

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        f(*_inputs(n), False)
    f(*_inputs(6), True)
    d, c = _inputs(7)
    torch.testing.assert_close(f(d, c, False), d / c.unsqueeze(-1))
    assert seen == [False] * 5


def test_a_step_that_leaves_the_last_one_takes_nothing_after_it():
    """A step whose call at a position differs (another plain argument) makes that node and every
    later one afresh (a taken node's operands are always this step's), and returns eager's values;
    the step after it takes nothing of it past that position either."""

    def prog(d, c, k):
        return d / (c.unsqueeze(-1) * k)

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        d, c = _inputs(n)
        f(d, c, 2)
    assert f.ctx._spare is not None
    # taken: the two leaves and unsqueeze; all five once a step repeats the last (not one that compiled:
    # its traced graph holds its nodes until the collector frees it, so the step after it may take none)
    for n, k, taken in ((6, 3, 3), (7, 3, None), (8, 3, 5), (9, 2, 3)):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c, k), d / (c.unsqueeze(-1) * k))
        assert taken is None or f.ctx.reused == taken


def test_tensors_a_step_does_not_take_are_its_pool():
    """The last step's tensors past where a step left it are the pool of that step (it makes no
    new lazy tensor objects for the nodes it makes afresh)."""

    def prog(d, c, k):
        return d / (c.unsqueeze(-1) * k)

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}, None])
    for n in (3, 4, 5):
        f(*_inputs(n), 2)
    objects = {id(t) for t in f.ctx._spare}
    for n, k in ((6, 3), (7, 2), (8, 3)):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c, k), d / (c.unsqueeze(-1) * k))
        assert {id(t) for t in f.ctx._spare or f.ctx._pool} <= objects


def test_a_step_with_an_in_place_op_returns_eagers_values():
    """An in-place op names a new node for its tensor (the step's tensors and nodes no longer one to
    one by position): such a step's nodes are not taken by position, and each step is eager's."""

    def prog(d, c):
        x = c.unsqueeze(-1) + 0.0
        x.mul_(2.0)
        return d / x

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}])
    for n in range(3, 9):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c), d / (c.unsqueeze(-1) * 2.0))


def test_a_step_whose_tensors_swapped_nodes_is_not_taken():
    """Each node held once, but not by the tensor made with it (two tensors' nodes swapped): the
    step's tensors and nodes are not one to one by position, so none is taken again."""

    def prog(d, c):
        x, y = c * 2.0, c * 3.0
        x.node, y.node = y.node, x.node
        return d / x.unsqueeze(-1) + y.unsqueeze(-1)

    f = L.jit(prog, dims=[{0: "e"}, {0: "e"}])
    for n in range(3, 9):
        d, c = _inputs(n)
        torch.testing.assert_close(f(d, c), d / (c * 3.0).unsqueeze(-1) + (c * 2.0).unsqueeze(-1))


def test_a_long_step_is_checked_by_the_loop():
    """A step of more than 64 positions is checked by ``spare``'s loop (``reuse.spare_check``
    generates the checks of shorter ones): taken as a short one is, and not while the program
    keeps one of its tensors."""
    kept = []

    def prog(x, keep):
        for _ in range(70):
            x = x + 1
        if keep:
            kept.append(x)
        return x * 2

    f = L.jit(prog, dims=[{0: "e"}, None])
    for n in (3, 4, 5):
        x = torch.randn(n)
        torch.testing.assert_close(f(x, False), (x + 70) * 2)
    assert f.ctx.reused == 72 and len(f.ctx._spare) == 72
    f(torch.randn(6), True)
    assert f.ctx._spare is None
    x = torch.randn(7)
    torch.testing.assert_close(f(x, False), (x + 70) * 2)
    assert kept[0].node.op == "add" and kept[0].node.args[1] == 1
