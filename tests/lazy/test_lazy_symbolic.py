"""Sizes on the lazy path: input dims as variables of the size algebra
(``engines.sizes``; the algebra itself is tested in tests/sizes), their
hints, and guards on forced values."""

import pytest
import torch

import engines.lazy as L
from engines import sizes


def _vars(*dims):
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(*dims))
    return ctx, [e for e in x.node.shape]


def test_input_dims_are_size_variables_with_hints():
    ctx, (a, b) = _vars(3, 4)
    assert isinstance(a, sizes.Expr) and L.Expr is sizes.Expr
    assert a.vars == {ctx.vars[sizes.emit.parse(str(a)).single_atom().name].sym}
    e1 = a * 2 + b + 1
    assert e1 == 1 + b + 2 * a and hash(e1) == hash(1 + b + 2 * a)
    assert a + b - b == a and a * b - b * a == 0
    assert sizes.evaluate(e1, ctx.vars.hints) == 11
    named = L.LazyContext()
    x, y = named.input(torch.zeros(5), {0: "n"}), named.input(torch.zeros(5), {0: "n"})
    assert x.node.shape == y.node.shape  # one variable for one name
    assert str(x.shape[0] * 2) == "SymSize(2*n, hint=10)"  # shown with the user's name
    with pytest.raises(ValueError, match="dim n is 5 in one input and 6"):
        named.input(torch.zeros(6), {0: "n"})


def test_floordiv_and_mod_fold_and_evaluate_on_hints():
    ctx, (a, b) = _vars(6, 4)
    hint = ctx.vars.hint
    assert (a * 4) // 2 == a * 2
    assert (a * b) // b == a
    odd = a * 2 + 1
    assert odd // 2 == a and odd % 2 == 1  # (2a + 1) // 2 == a
    opaque = a // 4
    assert not opaque.is_const and hint(opaque) == 1
    assert hint(a % b) == 2 and hint(odd) == 13


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
    assert [str(g).split(" (")[0] for g in ctx.guards] == [f"{n.expr} > 2 is True", f"{n.expr} == 5 is True"]
    assert ctx.guards[1].reason == "int"
    with pytest.raises(ZeroDivisionError):
        n // 0


def test_python_number_protocol_on_a_size():
    """``n ** 2`` stays symbolic; ``n ** 0.5`` (diffusers' ``int(seq ** 0.5)`` patch grid),
    ``2 ** n``, ``round(n)``, ``math.floor(n)`` read the size (a guard), as ``float(n)``
    does; they were TypeErrors out of the engine."""
    import math

    ctx = L.LazyContext()
    n = ctx.input(torch.zeros(16, 3)).shape[0]
    sq = n**2
    assert isinstance(sq, L.SymSize) and sq.hint == 256 and ctx.guards == []
    assert n**0 == 1 and abs(n) is n and ctx.guards == []
    assert int(n**0.5) == 4 and 2**n == 65536 and n**-1 == 1 / 16
    assert round(n) == math.floor(n) == math.ceil(n) == math.trunc(n) == 16
    assert [str(g).split(" (")[0] for g in ctx.guards] == [f"{n.expr} == 16 is True"]  # (one guard, read once)


def test_a_size_read_by_a_float_power_traces_a_graph_per_size():
    f = L.jit(lambda x: x.reshape(int(x.shape[0] ** 0.5), -1))
    for n in (4, 9, 9):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x.reshape(int(n**0.5), -1))
    assert f.ctx.compiles() == 2


def test_shifts_of_a_size_stay_symbolic():
    ctx = L.LazyContext()
    n = ctx.input(torch.zeros(13, 3)).shape[0]
    r, s = n >> 2, n << 1
    assert isinstance(r, L.SymSize) and isinstance(s, L.SymSize) and (r.hint, s.hint) == (3, 26)
    assert ctx.guards == []
