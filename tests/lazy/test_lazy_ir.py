"""Recording, symbolic shape propagation, the IR dump, and verify."""

import numpy as np
import pytest
import torch

import engines.lazy as L
from engines.lazy import passes
from engines.lazy.ir import IRError, Node


def test_ops_record_instead_of_running():
    ctx = L.LazyContext()
    x = ctx.input(torch.ones(4, 3))
    y = (x * 2).sum(1).exp()
    assert isinstance(y, L.LazyTensor)
    assert [y.node.op, y.node.args[0].op, y.node.args[0].args[0].op] == ["exp", "sum", "mul"]
    assert y.node.data is None and ctx.stats["compile"] == 0
    np.testing.assert_allclose(y.numpy(), np.exp(np.full(4, 6.0)), rtol=1e-6)


def test_symbolic_shape_propagation():
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(6, 4))
    n, k = x.shape
    y = x.reshape(-1, 2).unsqueeze(0).transpose(0, 2)
    assert y.shape[0] == 2 and y.shape[2] == 1  # constants come back as ints
    assert y.shape[1].expr == ((n * k) // 2).expr
    z = torch.cat([x, x[: n // 2]], 0)
    assert z.shape[0].expr == (n + n // 2).expr
    w = x.new_zeros(n * 2, k).sum(0, keepdim=True)
    assert w.shape[1].expr == k.expr and w.shape[0] == 1
    assert tuple(z.value().shape) == (9, 4) and tuple(y.value().shape) == (2, 12, 1)


def test_expand_dump_shows_multiply_on_traced_size():
    def prog(x, emb):
        return emb.expand(x.shape[0] * 2, -1, -1)

    f = L.jit(prog, dims=[{0: "b"}, {}])
    emb = torch.randn(1, 1, 16)
    text = f.dump(torch.zeros(3, 3, 8, 8), emb)
    lines = text.splitlines()
    assert "%2 = sym_size(%0, 0) : int" in lines
    assert "%3 = mul(%2, 2) : int  # 2*s0_0" in lines
    assert "%4 = expand(%1, [%3, -1, -1]) : f32[2*s0_0, 1, 16]" in lines
    for b in (3, 5):  # the program the dump describes, run and compared with eager torch
        x = torch.zeros(b, 3, 8, 8)
        out = f(x, emb)
        assert out.shape == (2 * b, 1, 16) and torch.equal(out, prog(x, emb))
    assert "mul = size * 2" in f.ctx.last.code  # the generated code reads the size at run time
    assert f.ctx.compiles() == 1


def test_size_arithmetic_is_shared_and_ordered():
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(5, 3))
    n, k = x.shape
    with L.tracing():
        y = torch.zeros(n * k - n, n * k - n)
    text = ctx.dump(y)
    assert text.count("sym_size") == 2 and text.count("= sub(") == 1  # CSE
    assert torch.equal(y.value(), torch.zeros(10, 10))  # the dumped program, against eager torch


def test_registry_is_the_coverage_list():
    from engines.lazy import ops
    from engines.lazy.tensor import OPERATORS, LazyTensor

    cov = ops.covered_ops()
    for name in ("add", "sum", "reshape", "__getitem__", "matmul", "lazy_zeros", "index_add_"):
        assert name in cov["torch"], name
    assert {"relu", "softmax", "pad", "linear"} <= set(cov["functional"])
    assert {"add", "py_sub", "F.relu", "getitem", "zeros"} <= set(cov["ir"])
    for dunder, (name, _) in OPERATORS.items():  # every Python operator runs a registered op
        assert name in ops.OPS and getattr(LazyTensor, dunder) is not None, dunder
    for name in ops.METHODS:
        assert hasattr(LazyTensor, name), name
    with pytest.raises(ValueError, match="duplicate"):
        ops.lazy_op("add")(lambda a, b: None)


def test_verify_rejects_malformed_graphs():
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(3))
    y = x + 1
    g = passes.trace([y.node], ctx.vars)
    passes.verify(g, passes.LOWER)
    bad = Node("nonsense", (y.node.args[0],), shape=y.node.shape, dtype=torch.float32)
    g2 = passes.trace([bad], ctx.vars)
    with pytest.raises(IRError, match="not known"):
        passes.verify(g2, passes.LOWER)
    g3 = passes.trace([y.node], ctx.vars)
    g3.nodes.reverse()
    with pytest.raises(IRError):
        passes.verify(g3, passes.LOWER)
    m = passes.materialise_sizes(passes.canonicalise(g))
    m.nodes[-1].args = (m.nodes[-1].args[0], y.node.shape[0])  # an Expr after materialisation
    with pytest.raises(IRError, match="left after"):
        passes.verify(m, passes.LOWER)


def test_shape_rule_checked_against_result():
    ctx = L.LazyContext()
    x = ctx.input(torch.zeros(3, 2))
    y = x + 1
    y.node.shape = y.node.shape[::-1]  # a wrong prediction
    with pytest.raises(IRError, match="predicted"):
        y.sync()
