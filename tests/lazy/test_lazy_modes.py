"""Exact compile counts per mode, bounds, guards and recompilation, and the
harness backend on the catalogue."""

import gc

import numpy as np
import pytest
import torch

import engines.lazy as L


def edge_divide(d, c):
    return d / c.unsqueeze(-1)


def expand_over_batch(x, emb):
    return emb.expand(x.shape[0] * 2, -1, -1)


E_DIMS = [{0: "e"}, {0: "e"}]


def _run_edge(f, sizes):
    for e in sizes:
        d, c = torch.randn(e, 8), torch.rand(e) + 0.5
        np.testing.assert_allclose(f(d, c).numpy(), d.double().numpy() / c.double().numpy()[:, None], rtol=1e-6)


def test_static_compiles_once_per_shape_unbounded_once():
    sizes = range(1000, 1050)
    static, unbounded = L.jit(edge_divide, mode="static"), L.jit(edge_divide, mode="unbounded", dims=E_DIMS)
    _run_edge(static, sizes)
    _run_edge(unbounded, sizes)
    assert static.ctx.compiles() == 50 and unbounded.ctx.compiles() == 1
    assert unbounded.ctx.stats["hit"] == 49 and unbounded.ctx.stats["trace"] == 50
    _run_edge(static, [1000, 1001])  # seen shapes hit the static cache
    assert static.ctx.compiles() == 50


def test_static_graph_holds_constants():
    f = L.jit(expand_over_batch, mode="static")
    x, emb = torch.zeros(3, 3, 2, 2), torch.randn(1, 1, 4)
    text = f.dump(x, emb)
    # x is no input at all: only its (constant) size was used
    assert "sym_size" not in text and "%1 = expand(%0, [6, -1, -1]) : f32[6, 1, 4]" in text
    assert torch.equal(f(x, emb), expand_over_batch(x, emb))  # the dumped program, against eager torch


def test_bounded_one_compile_and_bound_error():
    f = L.jit(expand_over_batch, mode="bounded", dims=[{0: "b"}, {}], bounds=[{0: 64}, {}])
    emb = torch.randn(1, 1, 4)
    for b in (2, 3, 17, 64):
        out = f(torch.zeros(b, 3, 2, 2), emb)
        assert out.shape == (2 * b, 1, 4) and torch.equal(out, emb.expand(2 * b, 1, 4))
    assert f.ctx.compiles() == 1
    with pytest.raises(L.BoundError, match=r"dim b .* 65, past the bound 64"):
        f(torch.zeros(65, 3, 2, 2), emb)
    assert f.ctx.compiles() == 1


def test_guard_recorded_and_violation_recompiles():
    def prog(x):
        if x.shape[0] > 4:  # Python control flow on a size: specialises
            return x * 2
        return x - 1

    f = L.jit(prog, dims=[{0: "n"}])
    f(torch.ones(5, 2))
    assert [str(g) for g in f.guards] == ["n > 4 is True (bool)"]
    f(torch.ones(9, 2))  # guard still holds: cache hit
    assert f.ctx.compiles() == 1
    out = f(torch.ones(3, 2))  # violates it: recompile
    assert f.ctx.compiles() == 2 and torch.equal(out, torch.zeros(3, 2))
    assert [str(g) for g in f.guards] == ["n > 4 is False (bool)"]
    f(torch.ones(2, 2))
    assert f.ctx.compiles() == 2


def test_a_step_leaves_no_cyclic_garbage():
    """Each step's graph, nodes and tensors are freed by refcounting when the
    step ends (no collector pauses in a loop of steps)."""
    f = L.jit(expand_over_batch, dims=[{0: "b"}, {}])
    emb = torch.randn(1, 1, 4)
    for b in (2, 3):
        f(torch.zeros(b, 3, 2, 2), emb)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for b in (4, 5, 6):
            assert torch.equal(f(torch.zeros(b, 3, 2, 2), emb), emb.expand(2 * b, 1, 4))
        gc.collect()
        garbage = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert garbage == [] and f.ctx.compiles() == 1


def _reasons(mode="unbounded"):
    got = []
    return got, L.LazyContext(mode, on_compile=lambda seconds, reason: got.append(reason))


def test_miss_reasons_name_the_new_part_of_the_key():
    got, ctx = _reasons("static")
    f = L.jit(edge_divide, ctx=ctx)
    _run_edge(f, [3, 4, 3])
    assert got == [
        "first call: empty graph cache",
        "new input shapes 0: float32[4, 8], 1: float32[4] (cached: float32[3, 8], float32[3])",
    ]
    got, ctx = _reasons("static")  # x's size enters only as a constant operand of expand
    f = L.jit(expand_over_batch, ctx=ctx)
    for b in (3, 4):
        f(torch.zeros(b, 3, 2, 2), torch.ones(1, 1, 4))
    assert got == ["first call: empty graph cache", "new arguments of op 0 expand(%0, (8, -1, -1)) (cached: (%0, (6, -1, -1)))"]
    got, ctx = _reasons("bounded")
    f = L.jit(expand_over_batch, dims=[{0: "b"}, {}], bounds=[{0: 64}, {}], ctx=ctx)
    for b in (2, 3):
        f(torch.zeros(b, 3, 2, 2), torch.randn(1, 1, 4))
    assert got == ["first call: empty graph cache"]


def test_miss_reason_names_the_guard_that_flipped():
    def prog(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1

    got, ctx = _reasons()
    f = L.jit(prog, dims=[{0: "n"}], ctx=ctx)
    for n in (5, 9, 3, 2):
        f(torch.ones(n, 2))
    assert got == [
        "first call: empty graph cache",
        "new graph structure (op 0 is sub; cached: mul) and "
        "new guards s0_0 > 4 is False (bool) (cached: s0_0 > 4 is True (bool))",
    ]
    assert ctx.compiles() == 2


def test_miss_reason_names_a_new_graph_structure():
    got, ctx = _reasons()
    a = ctx.input(torch.ones(3))
    L.sync(a * 2)
    b = ctx.input(torch.ones(3))
    L.sync(b + 2)
    assert got[0] == "first call: empty graph cache"
    assert got[1].startswith("new graph structure (op 0 is add; cached: mul)")


def test_int_specialises_to_a_constant_graph():
    f = L.jit(lambda x: x.reshape(int(x.shape[0]) * 2, -1), dims=[{0: "n"}])
    f(torch.ones(4, 2))
    f(torch.ones(4, 2) * 3)  # same shape: hit
    assert [str(g) for g in f.guards] == ["n == 4 is True (int)"]
    f(torch.ones(5, 2))
    assert f.ctx.compiles() == 2  # the constant 8 vs 10 changes the graph, and the guard flips


def test_broadcast_of_unrelated_sizes_guards_equality():
    f = L.jit(edge_divide)  # every axis its own variable: e of d and e of c may differ
    _run_edge(f, [3, 4, 5])
    assert f.ctx.compiles() == 1
    assert any("==" in str(g) and "broadcast" in str(g) for g in f.guards)
    with pytest.raises(L.ShapeError):
        f(torch.randn(3, 8), torch.rand(4))


def test_materialisation_triggers():
    ctx = L.LazyContext()
    x = ctx.input(torch.arange(6.0).reshape(2, 3))
    y = x * 2
    assert y.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]] and y.node.is_leaf
    s = (x + 1).sum()
    assert s.item() == 21.0
    assert float(x.sum()) == 15.0 and int(x.amax()) == 5
    assert bool(x.sum() == 15.0) is True  # comparison with a Python value, then bool()
    assert "10." in str(x * 2) and "LazyTensor(" in repr(x + 0)
    np.testing.assert_array_equal(np.asarray(x + 1), np.arange(1.0, 7.0).reshape(2, 3))
    a, b = x - 1, x + 1
    L.sync(a, b)  # one graph for both
    assert a.node.is_leaf and b.node.is_leaf
    assert ctx.stats["trace"] == ctx.stats["compile"] + ctx.stats["hit"]
    assert torch.equal((a + b).cpu(), 2 * torch.arange(6.0).reshape(2, 3))
    if (x > 4).any():  # data-dependent control flow materialises
        pass


def test_unsupported_ops_say_why():
    x = L.tensor(torch.randn(4))
    with pytest.raises(L.UntraceableOp, match="data-dependent") as e:
        torch.unique(x)  # (boolean masks and nonzero are supported: tests/lazy/test_lazy_models.py)
    assert e.value.kind == "data-dependent output"
    with pytest.raises(L.UntraceableOp, match="random") as e:
        torch.nn.functional.dropout(x, 0.5, training=True)
    assert e.value.kind == "random"


def test_harness_backend_on_catalogue():
    cases = pytest.importorskip("cases")
    from backends.lazy import Lazy

    case = cases.get("gnn_edge_divide")
    counts, reasons = {}, {}
    b = Lazy()  # one backend, two jobs: each program counts from 0
    for mode in ("static", "unbounded"):
        prog = b.prepare(case, mode)
        for i, sizes in enumerate(case.sizes_for("full")):
            inputs = case.make_inputs(sizes, seed=i)
            got = prog.to_numpy(prog(*prog.convert(inputs)))
            np.testing.assert_allclose(got, case.expected(inputs), rtol=1e-5, atol=1e-6)
        counts[mode] = prog.compile_stats()
        reasons[mode] = prog.compile_reasons()
    assert counts == {"static": {"lazy_fx": 50}, "unbounded": {"lazy_fx": 1}}
    assert len(case.sizes_for("full")) == 50
    assert len(reasons["static"]) == 50 and reasons["unbounded"] == ["lazy_fx: first call: empty graph cache"]
    assert all(r.startswith("lazy_fx: new input shapes 0: float32[") for r in reasons["static"][1:])
    assert set(prog.compile_times()) == {"lazy_fx"}


def test_catalogue_quick_profile_all_modes():
    """Every catalogue case with a torch form, every mode it has: oracle equality
    on the quick shapes, exact compile counts."""
    cases = pytest.importorskip("cases")
    from backends.lazy import Lazy

    for case in cases.catalogue():
        # the model cases split at data-dependent branches (named guards and splits):
        # their exact counts are tests/lazy/test_lazy_models.py's and the gate's
        if "torch" not in case.forms or "model" in case.tags:
            continue
        for mode in case.modes:
            b = Lazy()
            if b.unsupported_reason(case, mode):  # a bucketed mode padding cannot serve
                continue
            prog = b.prepare(case, mode)
            shapes = case.sizes_for("quick")
            for i, sizes in enumerate(shapes):
                inputs = case.make_inputs(sizes, seed=i)
                tol = case.tol()
                np.testing.assert_allclose(
                    prog.to_numpy(prog(*prog.convert(inputs))),
                    case.expected(inputs),
                    rtol=tol.rtol,
                    atol=tol.atol,
                    err_msg=f"{case.name} {mode} {sizes}",
                )
            if mode == "bucketed":  # one graph per bucket the host padder touched
                from engines.sizes import buckets

                want = sum(buckets.new_buckets(shapes, key=lambda s: tuple(buckets.case_buckets(case, s).items())))
            else:
                want = len(shapes) if mode == "static" else 1
            assert prog.compile_stats() == {"lazy_fx": want}, (case.name, mode)
            assert len(prog.compile_reasons()) == want, (case.name, mode)
            # guards (a slice's clamp on t // 2) may exist; the exact count above shows none flipped


def test_catalogue_expand_dump():
    cases = pytest.importorskip("cases")
    case = cases.get("expand_over_batch")
    axes = case.dynamic_axes("unbounded")
    f = L.jit(case.torch_fn(), dims=[{ax: d.name for ax, d in a.items()} for a in axes])
    x, emb = (torch.from_numpy(a) for a in case.make_inputs({"b": 3}, seed=0))
    text = f.dump(x, emb)
    assert "%2 = sym_size(%0, 0) : int" in text and "%3 = mul(%2, 2) : int  # 2*s0_0" in text
    assert "%4 = expand(%1, [%3, -1, -1]) : f32[2*s0_0, 1, 768]" in text
    assert torch.equal(f(x, emb), case.torch_fn()(x, emb))  # the dumped program, against eager torch
