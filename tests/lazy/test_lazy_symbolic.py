"""The size algebra: normal forms, folding, and guards on forced values."""

import pytest
import torch

import backends.lazy as L
from backends.lazy.symbolic import Expr


def _vars(*sizes):
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(*sizes))
    return ctx, [e for e in x.node.shape]


def test_equal_structures_hash_equal():
    _, (a, b) = _vars(3, 4)
    two = Expr.const(2)
    e1 = a.mul(two).add(b).add(Expr.const(1))
    e2 = Expr.const(1).add(b).add(two.mul(a))
    assert e1 == e2 and hash(e1) == hash(e2) and e1.key == e2.key
    assert a.add(b).sub(b) == a
    assert a.mul(b).sub(b.mul(a)) == Expr.const(0)


def test_floordiv_and_mod_fold():
    _, (a, b) = _vars(6, 4)
    assert a.mul(Expr.const(4)).floordiv(Expr.const(2)) == a.mul(Expr.const(2))
    assert a.mul(b).floordiv(b) == a
    odd = a.mul(Expr.const(2)).add(Expr.const(1))
    assert odd.floordiv(Expr.const(2)) == a  # (2a + 1) // 2 == a
    assert odd.mod(Expr.const(2)) == Expr.const(1)
    opaque = a.floordiv(Expr.const(4))
    assert not opaque.is_const and opaque.eval() == 1
    assert a.mod(b).eval() == 2


def test_symsize_arithmetic_stays_symbolic():
    ctx, _ = _vars(5, 3)
    x = ctx.input(torch.zeros(5, 3))
    n = x.shape[0]
    assert isinstance(n, L.SymSize)
    m = (n * 2 + 1) // 2 - n % 3
    assert isinstance(m, L.SymSize) and m.hint == 5 - 2
    assert ctx.guards == []  # nothing forced yet
    assert str((n * 2).expr).startswith("2*")


def test_forcing_records_guards():
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(5, 3))
    n = x.shape[0]
    cmp = n > 2
    assert isinstance(cmp, L.SymBool) and ctx.guards == []
    if cmp:
        pass
    assert int(n) == 5
    assert [str(g).split(" (")[0] for g in ctx.guards] == [
        f"{n.expr} > 2 is True", f"{n.expr} == 5 is True"]
    assert ctx.guards[1].reason == "int"
    with pytest.raises(ZeroDivisionError):
        n // 0
