"""lazy_stablehlo: the lazy trace lowered to StableHLO with its sizes symbolic,
run by our XLA executor, every stage counted; the ops it refuses."""

import re

import numpy as np
import pytest
import torch

import cases
import engines.lazy as L
from backends.base import Unsupported
from backends.lazy_stablehlo import LazyStablehlo
from backends.stablehlo_xla import StablehloXla
from engines.lazy.to_stablehlo import StablehloCompiler


def _defs(text: str) -> dict:
    """SSA name -> (op, operand names) of a pretty-printed StableHLO function."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(%\w+) = (?:stablehlo\.)?([\w.]+)(.*)", line)
        if m:
            out[m.group(1)] = (m.group(2), re.findall(r"%\w+", m.group(3).split(":")[0]))
    return out


def _reaches(defs, name, op, seen=None) -> bool:
    """Whether ``name`` is computed from a value made by ``op``."""
    seen = set() if seen is None else seen
    if name in seen or name not in defs:
        return False
    seen.add(name)
    this, operands = defs[name]
    return this == op or any(_reaches(defs, o, op, seen) for o in operands)


def test_size_arithmetic_is_the_same_expression_at_both_ends():
    """expand_over_batch: the lazy IR's mul(%size, 2) is get_dimension_size -> multiply -> broadcast."""
    compiler = StablehloCompiler("unbounded", "expand_over_batch")
    f = L.jit(cases.get("expand_over_batch").torch_fn(), dims=[{0: "b"}, {}], ctx=L.LazyContext(compiler=compiler))
    emb = torch.randn(1, 1, 4)
    for b in (2, 3, 5):
        out = f(torch.zeros(b, 3, 2, 2), emb)
        assert torch.equal(out, emb.expand(2 * b, -1, -1))
    ir = f.ctx.last.ir
    assert "%2 = sym_size(%0, 0) : int" in ir and "%3 = mul(%2, 2) : int  # 2*s0_0" in ir
    assert "expand(%1, [%3, -1, -1]) : f32[2*s0_0, 1, 4]" in ir
    (text,) = compiler.modules  # one module for every b
    # (argument attributes, such as the size symbol of each dim, left out)
    signature = re.sub(r" \{[^{}]*\}", "", text.split("@main", 1)[1].split("{\n", 1)[0])
    assert signature.startswith("(%arg0: tensor<?x3x2x2xf32>, %arg1: tensor<1x1x4xf32>) -> tensor<?x1x4xf32>")
    defs = _defs(text)
    (mul,) = [n for n, (op, _) in defs.items() if op == "multiply"]
    assert defs[defs[mul][1][0]][0] == "get_dimension_size" and "%arg0" in defs[defs[mul][1][0]][1]
    (bcast,) = [n for n, (op, _) in defs.items() if op == "dynamic_broadcast_in_dim"]
    shape_operand = defs[bcast][1][1]
    assert _reaches(defs, shape_operand, "multiply") and _reaches(defs, shape_operand, "get_dimension_size")
    assert f.ctx.compiles() == 1


def _job(backend, case, mode, sizes):
    backend.startup()
    program = backend.prepare(case, mode)
    steps = []
    for i, s in enumerate(sizes):
        arrays = case.make_inputs(s, seed=i)
        out = program(*program.convert(arrays))
        np.testing.assert_allclose(program.to_numpy(out), case.expected(arrays), rtol=1e-5, atol=1e-6)
        steps.append((dict(program.compile_stats()), program.compile_reasons()))
    return steps, program


def test_bounded_traces_lowers_and_compiles_once():
    backend = LazyStablehlo()
    steps, program = _job(backend, cases.get("gnn_edge_divide"), "bounded", [{"e": e} for e in (20, 21, 20, 0)])
    assert [s for s, _ in steps] == [{"trace": 1, "lowering": 1, "xla": 1}] * 4  # the bounded executor: one XLA compile
    first = steps[0][1]
    assert first[0] == "lowering: torch.export + StableHLO lowering of lazy graph #0 at input shapes (20, 8), (20,)"
    assert first[1] == "trace: first call: empty graph cache" and first[2].startswith("xla: bounded entry of")
    assert all(reasons == [] for _, reasons in steps[1:])
    assert set(program.compile_times()) == {"trace", "lowering", "xla"}
    (text,) = program.fn.ctx.compiler.modules  # bounded: the case's maximum is in the module's types
    bound = cases.get("gnn_edge_divide").dims[0].max
    assert f"tensor<?x8xf32, #stablehlo.bounds<{bound}, ?>>" in text


@pytest.mark.parametrize(
    "program, op",
    [
        (lambda x: x + torch.rand_like(x), "rand_like"),
        (lambda x: x.requires_grad_() * 2, "requires_grad_"),
        (lambda x: (x * 2).backward(), "backward"),
    ],
)
def test_what_it_cannot_express_is_unsupported_naming_the_op(program, op):
    f = L.jit(program, ctx=L.LazyContext(compiler=StablehloCompiler("unbounded")))
    with pytest.raises(L.UntraceableOp, match=rf"\b{op}\b"):
        f(torch.ones(3))


def test_the_backend_reports_an_unsupported_op_as_unsupported():
    case = cases.get("gnn_edge_divide")
    backend = LazyStablehlo()
    backend.startup()
    program = backend.prepare(case, "unbounded")
    program.fn.fn = lambda d, c: d + torch.rand_like(d)
    with pytest.raises(Unsupported, match="rand_like"):
        program(*program.convert(case.make_inputs({"e": 4}, seed=0)))


@pytest.mark.parametrize("mode, xla", [("bounded", [2, 0, 0, 0]), ("unbounded", [2, 2, 2, 2])])
def test_a_boolean_mask_splits_in_two_modules_compiled_once(mode, xla):
    """``x[mask]``: the graph up to the mask is one module, the count is taken on the host, the
    rest is a second module over a size variable; bounded, that variable is bounded by the mask's
    length, so both modules compile once for every count (0 kept rows included)."""
    program = lambda x, w: (x[x[:, 0] > 0] @ w).relu().sum(0) * x.shape[0]  # noqa: E731
    xla_compiles = []
    compiler = StablehloCompiler(mode, "mask", on_xla=lambda s, why: xla_compiles.append(why))
    ctx = L.LazyContext(mode, compiler=compiler)
    f = L.jit(program, mode=mode, dims=[{0: "n"}, None], bounds=[{0: 64}, None], ctx=ctx)
    w = torch.randn(3, 2)
    xla_seen = []
    for i, (n, kept) in enumerate([(9, 4), (20, 11), (33, 0), (64, 64)]):
        x = torch.randn(n, 3, generator=torch.Generator().manual_seed(i)).abs()
        x[kept:, 0] = -1.0
        torch.testing.assert_close(f(x, w), program(x, w), rtol=1e-5, atol=1e-5)
        xla_seen.append(len(xla_compiles) - sum(xla_seen))
    assert len(compiler.modules) == 2 and f.ctx.compiles() == 2
    assert xla_seen == xla


def test_a_dims_minimum_reaches_the_export():
    """conv1d over T needs T >= its kernel: the Dim carries the case's minimum, else
    torch.export refuses its range ('Constraints violated'); traced, lowered and
    compiled once in bounded mode."""
    conv = lambda x, w: torch.nn.functional.conv1d(x, w)  # noqa: E731
    w = torch.ones(2, 3, 5)
    plain = L.jit(
        conv,
        mode="bounded",
        dims=[{2: "t"}, None],
        bounds=[{2: 64}, None],
        ctx=L.LazyContext("bounded", compiler=StablehloCompiler("bounded")),
    )
    with pytest.raises(L.UntraceableOp, match="Constraints violated"):
        plain(torch.ones(1, 3, 9), w)
    compiler = StablehloCompiler("bounded", minima={"t": 5})
    f = L.jit(
        conv, mode="bounded", dims=[{2: "t"}, None], bounds=[{2: 64}, None], ctx=L.LazyContext("bounded", compiler=compiler)
    )
    for t in (9, 5, 64):
        x = torch.randn(1, 3, t)
        torch.testing.assert_close(f(x, w), conv(x, w), rtol=1e-5, atol=1e-5)
    assert len(compiler.modules) == 1


@pytest.mark.parametrize("backend_cls", [LazyStablehlo, StablehloXla], ids=["lazy_stablehlo", "stablehlo_xla"])
def test_a_first_shape_with_sizes_0_and_1_does_not_fix_the_export(backend_cls):
    """Our exporters export from a sample with every dynamic dim >= 2 (torch.export
    would specialise E = 0, or refuse it): a sweep starting at E = 0, then 1, lowers
    once and (bounded) compiles once."""
    steps, _ = _job(
        backend_cls(), cases.get("gnn_zero_edges"), "bounded", [{"n": 64, "e": 0}, {"n": 70, "e": 1}, {"n": 80, "e": 300}]
    )
    assert [s["lowering"] for s, _ in steps] == [1, 1, 1] and steps[-1][0]["xla"] == 1, steps
    first = steps[0][1]
    assert any(r.startswith("lowering:") and "(64, 16), (0,)" in r for r in first), first
