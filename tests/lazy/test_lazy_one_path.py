"""engines/lazy keeps one path for each job: one leaf constructor, one record path,
one step key, one bounded-cache type (``functools.lru_cache`` for pure functions), one
constants cache; and a cached step reuses what the last one made (exact counts only)."""

import ast
import pathlib
import weakref

import pytest
import torch

import engines.lazy as L
from engines import sizes
from engines.lazy import runtime, symbolic

ROOT = pathlib.Path(L.__file__).parent


def _modules():
    for p in sorted(ROOT.rglob("*.py")):
        yield p.relative_to(ROOT).as_posix(), ast.parse(p.read_text())


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _calls(fn, name: str):
    return [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def test_op_nodes_are_made_by_record_and_leaves_by_one_constructor():
    """``Node(...)`` outside the compile passes: op nodes only in ``ops.registry.record``,
    leaves only in ``LazyContext.leaf`` (user inputs) and ``LazyContext.constant``."""
    makers = set()
    for mod, tree in _modules():
        if mod == "passes.py":  # the compiler's private copies and size nodes
            continue
        for fn in _functions(tree):
            for call in _calls(fn, "Node"):
                first = call.args[0] if call.args else None
                kind = "input" if isinstance(first, ast.Constant) and first.value == "input" else "op"
                makers.add((mod, fn.name, kind))
    assert makers == {
        ("ops/registry.py", "record", "op"),
        ("runtime.py", "leaf", "input"),
        ("runtime.py", "constant", "input"),
    }


def test_the_step_log_is_appended_to_in_one_place():
    """Every log entry goes through ``StepLog.add``, or ``StepLog.follow`` for a call the step
    follows (no inline copies in ops or the runtime; a node the step takes again from the last
    step has the last step's entry: ``StepLog.share``)."""
    appends = set()
    for mod, tree in _modules():
        for fn in _functions(tree):
            for n in ast.walk(fn):
                if (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "append"
                    and isinstance(n.func.value, ast.Attribute)
                    and n.func.value.attr == "entries"
                ):
                    appends.add((mod, fn.name))
    assert appends == {("steplog.py", "add"), ("steplog.py", "follow")}


def test_no_hand_rolled_bounded_caches_and_one_constants_cache():
    """A ``len(x) >= N`` followed by ``x.clear()`` is :class:`memo.Memo`'s job (or
    ``functools.lru_cache``'s); the lazy path's constants are the size algebra's."""
    for mod, tree in _modules():
        if mod == "memo.py":
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Call):
                f = n.test.left.func
                clears = [c for b in n.body for c in ast.walk(b) if isinstance(c, ast.Attribute) and c.attr == "clear"]
                assert not (isinstance(f, ast.Name) and f.id == "len" and clears), (
                    f"{mod}:{n.lineno}: a hand-rolled bounded cache"
                )
        names = {
            t.id
            for a in ast.walk(tree)
            if isinstance(a, (ast.Assign, ast.AnnAssign))
            for t in ast.walk(a)
            if isinstance(t, ast.Name)
        }
        assert "_CONSTS" not in names, mod
    assert symbolic.const is sizes.as_expr and symbolic.const(7) is sizes.const(7)


def test_a_step_recorded_twice_compiles_once_and_the_second_is_a_fast_hit():
    f = L.jit(lambda x, w: (x / w.unsqueeze(-1)).sum(0), dims=[{0: "e"}, {0: "e"}])
    for e in (5, 9, 9):
        f(torch.randn(e, 3), torch.randn(e))
    ctx = f.ctx
    assert ctx.compiles() == 1 and ctx.stats["hit"] == 2 and ctx.stats["trace"] == 3
    assert len(ctx.cache) == 1 and len(ctx.fast) == 1
    ((lk, (entry, positions, _, _)),) = ctx.fast.items()
    assert entry is next(iter(ctx.cache.values())) and positions == (0, 1)
    assert ctx.last_key == lk  # sync keyed the step by StepLog.key: the one key of a logged step


def test_the_step_key_is_the_step_logs_key():
    """``sync`` takes its key from ``StepLog.key`` (no inline copy of it): a step whose key
    the log refuses to build takes the full path (traced, keyed by the graph)."""
    calls = []
    real = runtime.StepLog.key

    def spy(self, roots, guards):
        calls.append(len(roots))
        return real(self, roots, guards)

    f = L.jit(lambda x: (x * 2).sum(0), dims=[{0: "n"}])
    runtime.StepLog.key = spy
    try:
        f(torch.randn(4, 2))
        f(torch.randn(6, 2))
    finally:
        runtime.StepLog.key = real
    assert calls == [1, 1] and f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 1


def test_a_context_without_a_step_log_hits_the_graph_cache():
    ctx = L.LazyContext("unbounded")
    for n in (3, 4):
        y = ctx.input(torch.randn(n, 2), [0]) + 1
        y.sync()
        assert ctx.log is None and y.node.data.shape == (n, 2)
    assert ctx.compiles() == 1 and ctx.stats["hit"] == 1 and not ctx.fast


def test_a_cached_step_reuses_the_last_steps_unheld_tensors_only():
    """The tensors of a step nobody holds are the next step's (no new ``torch.Tensor``
    subclass objects); one the program kept, or watches by a weak reference, is never reused
    (nor, then, the nodes of its step: the others go to the pool without them)."""
    kept, watched = [], []

    def prog(x, keep):
        y = x * 2
        if keep == "ref":
            kept.append(y)
        elif keep == "weak":
            watched.append(weakref.ref(y))
        return y.sum(0)

    f = L.jit(prog, dims=[{0: "n"}, None])
    f(torch.randn(3, 2), None)
    # (pooled, or kept for the next step with their nodes: the compile's graph holds them until collected)
    pool = {id(t) for t in f.ctx._spare or f.ctx._pool}
    assert len(pool) == 3  # the leaf, x * 2 and the sum
    f(torch.randn(4, 2), None)
    # the same three objects again: kept, with their nodes, for the next step to take by position (.reuse)
    assert {id(t) for t in f.ctx._spare} == pool and not f.ctx._pool
    out = f(torch.randn(5, 2), "ref")
    assert kept[0].node is not None and kept[0].node.op == "mul" and len(f.ctx._pool) == 2
    torch.testing.assert_close(out, kept[0].node.args[0].data.sum(0) * 2)
    f(torch.randn(5, 2), "weak")
    assert watched[0]() is None and len(f.ctx._pool) == 2  # not kept for reuse: freed
    assert f.ctx.compiles() == 1


def test_message_passing_ops_reach_the_lazy_path_without_torch_dispatch(torch_function_calls):
    """``torch.zeros_like`` (and the other ``*_like``) while tracing call their lazy
    implementation directly, and ``x[index]`` records the node the general index walk
    records (``x[index, :]``): one compile over edge counts, no ``__torch_function__``."""
    seen = torch_function_calls

    def prog(x, src, dst, w):
        m = x[src] * w.unsqueeze(-1)
        torch.empty_like(x)  # (recorded, not an output: its values are garbage)
        return torch.zeros_like(x).index_add(0, dst, m) + torch.ones_like(x) + torch.full_like(x, 2.0)

    f = L.jit(prog, dims=[{0: "n"}, {0: "e"}, {0: "e"}, {0: "e"}])
    for e in (5, 8, 6):
        x, w = torch.randn(4, 3), torch.randn(e)
        src, dst = torch.randint(0, 4, (e,)), torch.randint(0, 4, (e,))
        ref = torch.zeros_like(x).index_add(0, dst, x[src] * w.unsqueeze(-1)) + 3
        torch.testing.assert_close(f(x, src, dst, w), ref)
    assert seen == [] and f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 2

    def entries(index):
        ctx = L.LazyContext("unbounded")
        ctx.new_step()
        x, i = ctx.input(torch.randn(4, 3), {0: "n"}), ctx.input(torch.randint(0, 4, (6,)), {0: "e"})
        y = index(x, i)
        return ctx.log.entries[-1], [str(d) for d in y.node.shape]

    assert entries(lambda x, i: x[i]) == entries(lambda x, i: x[i, :]) == entries(lambda x, i: x[(i, slice(None))])
    assert entries(lambda x, i: x[i])[1] == ["p1_0", "3"]


def test_a_program_that_never_needs_the_tracing_functions_runs_without_them():
    """After a first step that called none of ``tracing``'s functions and never reached
    ``__torch_function__``, steps run with torch's own functions; a later step that needs
    them after all (``torch.stack`` on lazy tensors, ``torch.zeros`` of a symbolic size) is
    traced again with them, for good, and compiles as it would have (no size specialised)."""
    swapped = []

    def prog(x, branch):
        swapped.append(getattr(torch.zeros, "lazy_tracing", False))
        y = x * 2
        if branch == "stack":
            return torch.stack([y, x]).sum(0)
        if branch == "zeros":
            return y + torch.zeros(x.shape[0], 3)
        return y.sum(0)

    f = L.jit(prog, dims=[{0: "n"}, None])
    for n in (3, 4, 5):
        torch.testing.assert_close(f(x := torch.randn(n, 3), None), (x * 2).sum(0))
    assert f.patches is False and swapped == [True, False, False]
    for n in (3, 6):
        torch.testing.assert_close(f(x := torch.randn(n, 3), "stack"), x * 3)
    assert f.patches is True and swapped[3:] == [False, True, True]  # traced again with them, then with them only
    g = L.jit(prog, dims=[{0: "n"}, None])
    g(torch.randn(3, 3), None)
    for n in (4, 7):
        torch.testing.assert_close(g(x := torch.randn(n, 3), "zeros"), x * 2)
    assert g.patches is True and g.ctx.compiles() == 2 and not g.guards  # one compile for every n: no guard on it


def test_an_error_in_a_step_without_the_tracing_functions_is_the_programs_own():
    def prog(x, fail):
        if fail:
            raise KeyError("the program's own")
        return x + 1

    f = L.jit(prog, dims=[{0: "n"}, None])
    f(torch.randn(3), False)
    f(torch.randn(4), False)
    assert f.patches is False
    with pytest.raises(KeyError, match="the program's own"):
        f(torch.randn(5), True)
    torch.testing.assert_close(f(x := torch.randn(6), False), x + 1)
    assert f.ctx.compiles() == 1
