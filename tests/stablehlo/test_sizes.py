"""Symbolic sizes in the lowering: derived input dims, floor/mod fix-ups on
sizes that can be negative, CSE by normal form (engines.sizes)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch.export import Dim

from engines import sizes
from engines.stablehlo import execute, lower
from engines.stablehlo.lowering.builder import LoweringContext, Value
from engines.stablehlo.lowering.symbolic import as_dim

EXECUTORS = ("xla", "interpreter")


def _scalar_ops(text, op):
    return re.findall(rf"stablehlo\.{op} .*[:,] tensor<i32>$", text, re.M)


class Odd(torch.nn.Module):
    def forward(self, x):
        return x[1::2] * 2.0


def test_derived_input_dim_is_solved_with_an_exact_divide():
    n = Dim("n", min=2, max=100)
    ep = torch.export.export(Odd(), (torch.randn(7),), dynamic_shapes={"x": {0: 2 * n + 1}})
    (shape,) = [tuple(p.meta["val"].shape) for p in ep.graph.nodes if p.op == "placeholder"]
    s = as_dim(shape[0]) - 1  # 2*n: the input dim is not n itself
    assert isinstance(s, sizes.Expr) and s.single_atom() is None
    text = lower(ep)
    assert "#stablehlo.bounds<201>" in text and "#stablehlo.bounds<100>" in text
    assert len(_scalar_ops(text, "divide")) == 1  # (size - 1) / 2, exact: no floor fix-up
    assert _scalar_ops(text, "remainder") == [] and _scalar_ops(text, "select") == []
    for k in (2, 5, 9):
        x = np.arange(2 * k + 1, dtype=np.float32)
        for ex in EXECUTORS:
            (out,) = execute(text, [x], executor=ex)
            np.testing.assert_array_equal(out, 2 * x[1::2], err_msg=f"{ex} k={k}")


class Signs(torch.nn.Module):
    def forward(self, x, y):
        d = y.shape[0] - x.shape[0]  # negative when x is longer
        return d // 3, d % 3, d // -4, d % -4


@pytest.mark.parametrize("ex", EXECUTORS)
def test_floordiv_and_mod_of_sizes_have_python_semantics(ex):
    ep = torch.export.export(
        Signs(), (torch.randn(4), torch.randn(9)), dynamic_shapes={"x": {0: Dim("a", min=2)}, "y": {0: Dim("b", min=2)}}
    )
    text = lower(ep)
    assert len(_scalar_ops(text, "select")) == 4
    for a, b in [(4, 9), (9, 4), (5, 5), (7, 2), (2, 14)]:
        got = execute(text, [np.zeros(a, np.float32), np.zeros(b, np.float32)], executor=ex)
        d = b - a
        assert [int(v) for v in got] == [d // 3, d % 3, d // -4, d % -4], (a, b)


def test_sizes_are_emitted_once_per_normal_form():
    class M(torch.nn.Module):
        def forward(self, x, y):
            return x + 1, y + 1

    ep = torch.export.export(
        M(), (torch.randn(3, 4), torch.randn(5)), dynamic_shapes={"x": {0: Dim("a"), 1: Dim("b")}, "y": {0: Dim("c")}}
    )
    ctx = LoweringContext(ep)
    shapes = [tuple(as_dim(d) for d in p.meta["val"].shape) for p in ep.graph.nodes if p.op == "placeholder"]
    for i, shape in enumerate(shapes):
        ctx.sym.register_input(Value(f"%arg{i}", shape, "f32"))
    (a, b), (c,) = shapes
    first = ctx.dim(2 * a * b)
    assert ctx.dim(b * a * 2) is first  # same normal form, same value
    ctx.dim(2 * a * b + c)  # reuses 2*a*b
    ctx.dim(a * b)  # a partial product of 2*a*b: cached too
    body = "\n".join(ctx._buffers[0])
    assert body.count('"stablehlo.get_dimension_size"') == 3
    assert body.count('"stablehlo.multiply"') == 2 and body.count('"stablehlo.add"') == 1
    assert ctx.sym.get(a * b * 2) is first and ctx.sym.get(a + c) is None


def test_a_size_of_no_input_dim_is_a_clear_error():
    ep = torch.export.export(torch.nn.Identity(), (torch.randn(3),), dynamic_shapes=({0: Dim("a")},))
    ctx = LoweringContext(ep)
    with pytest.raises(sizes.SizeError, match=r"u0 is not the size of any input dim .*unbacked"):
        ctx.dim(sizes.var("u0") + 1)
