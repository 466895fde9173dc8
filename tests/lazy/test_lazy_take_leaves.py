"""A step that takes the last step's nodes makes its leaves in one generated call
(``engines/lazy/leafcall.py``, ``take_leaves``): each test fails when the check it names is
removed (``docs/findings/2026-12-05-seed-step.md``, "The third cut")."""

from __future__ import annotations

import pytest
import torch

import engines.lazy as L


def _steady(f, *args_per_step):
    """``f`` called on each of ``args_per_step``, the last steps taken from the start (so the next takes too)."""
    for args in args_per_step:
        f(*args)
    assert f.ctx._spare is not None


def _divide(**kw):
    return L.jit(lambda d, c: d / c.unsqueeze(-1), dims=[{0: "e"}, {0: "e"}], **kw)


def _inputs(n: int):
    return torch.randn(n, 8), torch.rand(n) + 0.5


def test_a_cached_step_takes_its_leaves_at_once():
    f = _divide()
    _steady(f, *[_inputs(n) for n in (3, 4, 5)])
    d, c = _inputs(6)
    torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
    batch = f.ctx.tape.calls[0].batch
    assert batch.n == 2 and batch.calls == tuple(f.ctx.tape.calls[:2])
    assert f.ctx.vars.vars["p0_0"] is f.ctx.tape.calls[0].vars[0][1] and f.ctx.vars.hints["p0_0"] == 6


def test_sizes_an_input_name_shares_must_agree():
    f = _divide()
    _steady(f, *[_inputs(n) for n in (3, 4, 5)])
    with pytest.raises(ValueError, match="dim e is 6 in one input and 7 in another"):
        f(torch.randn(6, 8), torch.rand(7))


def test_an_input_of_another_rank_is_not_taken():
    f = L.jit(lambda x: x.sum(0), dims=[{0: "n"}])
    _steady(f, *[(torch.randn(n, 4),) for n in (3, 4, 5)])
    x = torch.randn(6, 4, 2)  # (axis 1 still 4: only the rank differs)
    torch.testing.assert_close(f(x), x.sum(0))


def test_an_input_that_is_no_tensor_is_not_taken():
    f = L.jit(lambda d, c: d / c, dims=[{0: "e"}, {0: "e"}])
    _steady(f, *[(torch.randn(n, 8), torch.rand(n, 1) + 0.5) for n in (3, 4, 5)])
    d = torch.randn(6, 8)
    torch.testing.assert_close(f(d, 2.0), d / 2.0)


def test_bounds_changed_in_place_are_the_steps():
    bounds = [{0: 16}]
    f = L.jit(lambda x: x * 2.0, mode="bounded", dims=[{0: "n"}], bounds=bounds)
    _steady(f, *[(torch.randn(n, 3),) for n in (5, 6, 7)])
    bounds[0][0] = 8
    with pytest.raises(L.BoundError, match="past the bound 8"):
        f(torch.randn(9, 3))


def test_a_bound_is_checked_on_a_taken_leaf():
    f = L.jit(lambda x: x * 2.0, mode="bounded", dims=[{0: "n"}], bounds=[{0: 8}])
    _steady(f, *[(torch.randn(n, 3),) for n in (5, 6, 7)])
    with pytest.raises(L.BoundError, match="past the bound 8"):
        f(torch.randn(9, 3))


def test_more_inputs_than_the_last_steps_positions_are_not_taken():
    f = L.jit(lambda *xs: xs[-1], dims=[{0: "n"}] * 3)
    _steady(f, *[(torch.randn(n), torch.randn(n)) for n in (3, 4, 5)])
    xs = torch.randn(6), torch.randn(6), torch.randn(6)
    assert f(*xs) is xs[-1]


def test_the_call_is_made_again_for_new_leaves():
    """A leaf made afresh (here: its dims changed and changed back) has a new call: the step's
    leaves are taken again by a call made for it (the last one refuses it: ``False``)."""
    dims = [{0: "e"}, {0: "e"}]
    f = L.jit(lambda d, c: d / c.unsqueeze(-1), dims=dims)
    _steady(f, *[_inputs(n) for n in (3, 4, 5)])
    dims[1] = {0: "e", 1: "f"}
    f(torch.randn(6, 8), torch.rand(6, 1) + 0.5)
    dims[1] = {0: "e"}
    _steady(f, *[_inputs(n) for n in (7, 8, 9)])
    d, c = _inputs(10)
    torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
    batch = f.ctx.tape.calls[0].batch
    assert batch.calls == tuple(f.ctx.tape.calls[:2])


def test_leaves_that_change_every_step_are_not_made_a_call_each_step(monkeypatch):
    """A call is made for the leaves a step meets only when the last attempt met the same ones:
    an input whose leaf is made afresh every step (its dtype alternates) never pays for one."""
    import sys

    leafcall = sys.modules["engines.lazy.leafcall"]
    made = []
    real = leafcall._batch
    monkeypatch.setattr(leafcall, "_batch", lambda cs: made.append(cs) or real(cs))
    f = _divide()
    for n in range(3, 13):
        d, c = _inputs(n)
        c = c.double() if n % 2 else c
        torch.testing.assert_close(f(d, c), d / c.unsqueeze(-1))
    assert made == []
    _steady(f, *[_inputs(n) for n in (13, 14, 15)])
    f(*_inputs(16))
    assert len(made) == 1
