"""The steady-state fast paths of a cached step (``benchmarks.scripts.lazy`` measures
them): each must serve exactly the steps the full path would, and fall off
when the step differs."""

import pytest
import torch
import torch.nn.functional as F
import torch.overrides

import engines.lazy as L


def test_the_last_hit_serves_only_an_equal_step():
    """A step is first compared with the last hit's key; a step that differs in
    structure, dtype or a guard's result must miss it (and compile or hit the cache)."""

    def prog(x, flag):
        y = x * 2 if flag else x + 1
        return y[: y.shape[0] // 2] if y.shape[0] > 4 else y

    f = L.jit(prog)
    calls = [
        (6, torch.float32, True),
        (7, torch.float32, True),
        (8, torch.float32, True),  # hits of one key
        (8, torch.float32, False),  # another structure: compiles
        (9, torch.float32, True),  # back: a hit, not from the last hit
        (3, torch.float32, True),  # the guard flips: compiles
        (4, torch.float64, True),  # another dtype: compiles
        (5, torch.float32, True),
        (10, torch.float32, True),
    ]
    for n, dt, flag in calls:
        x = torch.randn(n, dtype=dt)
        out = f(x, flag)
        torch.testing.assert_close(out, prog(x, flag))
        assert out.dtype == dt
    assert f.ctx.compiles() == 4 and f.ctx.stats["hit"] == 5


def test_mm_and_bmm_record_themselves():
    f = L.jit(lambda a, b: torch.bmm(a, b), dims=[{0: "b"}, {0: "b"}])
    for n in (2, 5, 9):
        a, b = torch.randn(n, 3, 4), torch.randn(n, 4, 6)
        torch.testing.assert_close(f(a, b), torch.bmm(a, b))
    assert f.ctx.compiles() == 1
    assert "bmm(%0, %1)" in f.dump(a, b) and "torch.bmm(" in f.ctx.last.code
    g = L.jit(lambda a, b: a.mm(b))
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    torch.testing.assert_close(g(a, b), a @ b)
    assert "mm(%0, %1)" in g.dump(a, b)
    with pytest.raises(L.ShapeError, match="bmm: expected 3-d operands, got 2-d and 2-d"):
        L.jit(torch.bmm)(a, b)
    with pytest.raises(L.ShapeError, match="mm: operands of dtypes"):
        g(a, b.double())
    with pytest.raises(L.ShapeError, match="bmm"):  # batch sizes differ: torch refuses, so does the rule
        L.jit(torch.bmm)(torch.randn(2, 3, 4), torch.randn(3, 4, 5))


def _python_wrappers(x, w):
    t = x.shape[0]
    a, b = torch.split(x, [t // 2, t - t // 2])  # torch.functional.split
    y = F.layer_norm(b, (x.shape[1],), w)  # torch.nn.functional Python wrappers
    return torch.cat([F.pad(a, (0, 0, 0, 1)), y]).sum(1)


def _eager_wrappers(x, w):
    t = x.shape[0]
    a, b = x[: t // 2], x[t // 2 :]
    return torch.cat([F.pad(a, (0, 0, 0, 1)), F.layer_norm(b, (x.shape[1],), w)]).sum(1)


def test_torch_python_wrappers_record_one_graph_and_are_restored():
    """``torch.split``/``F.layer_norm``/``F.pad`` reach the lazy path without torch's
    Python search while tracing: the same graph as through it (one compile over
    sizes, the first step included), and torch's own function back after each step."""
    htf = torch.overrides.handle_torch_function
    f = L.jit(_python_wrappers)
    w = torch.randn(4)
    for n in (4, 5, 9, 2):
        x = torch.randn(n, 4)
        torch.testing.assert_close(f(x, w), _eager_wrappers(x, w))
        assert F.handle_torch_function is htf and torch.functional.handle_torch_function is htf
    assert f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 3
    with L.tracing():  # re-entrant: the inner exit keeps the outer's patch
        with L.tracing():
            pass
        assert F.handle_torch_function is not htf
        concrete = F.layer_norm(torch.ones(2, 3), (3,))  # not lazy: torch's own path
        assert type(concrete) is torch.Tensor
    assert F.handle_torch_function is htf


def test_a_torch_function_mode_still_sees_the_wrappers():
    seen = []

    class Spy(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    f = L.jit(_python_wrappers)
    x, w = torch.randn(6, 4), torch.randn(4)
    with Spy():
        torch.testing.assert_close(f(x, w), _eager_wrappers(x, w))
    assert "split" in seen and "layer_norm" in seen  # the mode came first, as torch's search would do


def test_the_inline_forms_match_the_general_ones():
    """``x.sum(d)``, ``stack`` and ``cat`` take inline forms; each records what the general form does."""

    def prog(x, i):
        return torch.stack([x.sum(1), x.sum(-1), x.sum(dim=1)]), i.sum(0), torch.cat([x, x], 1).sum(-2)

    f = L.jit(prog)
    for n in (3, 4):
        x, i = torch.randn(n, n), torch.arange(n, dtype=torch.int32)
        for got, want in zip(f(x, i), prog(x, i), strict=False):
            torch.testing.assert_close(got, want)
            assert got.dtype == want.dtype
    assert f.ctx.compiles() == 1
    ones = torch.ones(3)
    h = L.jit(lambda x: torch.stack([x, ones]) + torch.cat([ones, x]).sum())  # a concrete tensor in the list
    for _ in range(2):
        x = torch.randn(3)
        torch.testing.assert_close(h(x), torch.stack([x, ones]) + torch.cat([ones, x]).sum())
    assert h.ctx.compiles() == 1
    with pytest.raises(L.ShapeError, match="stack: tensors of rank 2 and 1"):
        L.jit(lambda x: torch.stack([x, x.sum(0)]))(torch.randn(3, 3))


def test_compiled_sizes_and_guards_follow_every_step():
    """A size beyond a constant or one variable (``t + (-t) % 8``) is evaluated by a
    function compiled once from it: each step's output shape check and guards read
    that step's sizes; a failing evaluation still names the size."""

    def prog(x):
        t = x.shape[0]
        y = F.pad(x, (0, 0, 0, (-t) % 8))
        return y * 2 if (t * 3) % 4 == 1 else y - 1  # a guard over a compound size

    f = L.jit(prog)
    for n in (3, 7, 11, 4, 9, 1):
        x = torch.randn(n, 2)
        out = f(x)
        torch.testing.assert_close(out, prog(x))
        assert out.shape == ((n + 7) // 8 * 8, 2)
    assert f.ctx.compiles() == 2  # (t*3) % 4 == 1 for 3, 7, 11; not for 4, 9, 1
    with pytest.raises(ZeroDivisionError, match="divisor"):
        L.jit(lambda x: x.expand(x.shape[0] // (x.shape[0] - 3), -1))(torch.randn(3, 2))


def test_operands_signed_while_recording_key_the_step():
    """Ops recorded in one pass (lazy operands, ints, sizes) sign each operand: a step
    whose int or size operand differs is another step; an operand kept from an
    earlier step still takes the general path and is refused."""

    def prog(x, d, k):
        return x.narrow(0, 0, x.shape[0] - k).sum(d).unsqueeze(-1)

    f = L.jit(prog)
    for n, d, k in [(5, 0, 1), (6, 0, 1), (6, 1, 1), (7, 0, 2), (8, 1, 1), (9, 0, 1)]:
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x, d, k), prog(x, d, k))
    assert f.ctx.compiles() == 3 and f.ctx.stats["hit"] == 3
    kept = []

    def keep(x):
        kept.append(x.unsqueeze(0))
        return x.unsqueeze(-1) if len(kept) == 1 else kept[0].unsqueeze(-1)

    g = L.jit(keep)
    g(torch.randn(3))
    with pytest.raises(L.FinishedStep, match="finished step"):
        g(torch.randn(3))


def test_trailing_full_slices_are_dropped_from_a_recorded_index():
    """``x[i, :]`` (and the full slices an index is padded with) runs as ``x[i]``,
    torch's fast path for one index; other slices stay. (An index with an ellipsis
    is padded once.)"""

    def prog(x, i):
        return x[i] + x[i, :] + x[:, i][i] + x[1:][i, ...]

    f = L.jit(prog)
    for n in (5, 8):
        x, i = torch.randn(n, n), torch.randint(0, n - 1, (n,))
        torch.testing.assert_close(f(x, i), prog(x, i))
    assert f.ctx.compiles() == 1
    text = f.dump(x, i)
    assert text.count("getitem(%0, %1)") == 2 and "::]" not in text  # x[i] and x[i, :] alike
    assert "getitem(%0, [::, %1])" in text and "getitem(%8, %1)" in text  # (x[1:][i, ...]: the ellipsis too)


def test_named_and_listed_dims_make_the_same_leaf():
    """Every leaf takes a per-(position, rank, dims) plan (``LazyContext.leaf``): dims
    named or given as a list make the same shape and step-log entry, variables shared
    by name, and the same refusals."""

    def leaves(dims_a, dims_b):
        ctx = L.LazyContext("unbounded")
        ctx.new_step()
        a = ctx.input(torch.randn(5, 3, 2), dims_a)
        b = ctx.input(torch.randn(5, 4), dims_b)
        return ctx, a, b

    planned = leaves({0: "n", 2: "k"}, {0: "n", 1: "m"})
    general = L.LazyContext("unbounded")  # dims as lists (unnamed variables)
    general.new_step()
    ga = general.input(torch.randn(5, 3, 2), [0, 2])
    gb = general.input(torch.randn(5, 4), [0, 1])
    ctx, a, b = planned
    assert [str(e) for e in a.node.shape] == ["p0_0", "3", "p0_2"]
    assert [str(e) for e in b.node.shape] == ["p0_0", "p1_1"]  # "n" shared: the first leaf's variable
    assert ctx.log.entries[0] == general.log.entries[0]
    assert ctx.log.entries[1] == ("in", torch.float32, ("p0_0", "p1_1"))
    assert [str(e) for e in gb.node.shape] == ["p1_0", "p1_1"]  # unnamed: a variable of its own
    assert ctx.vars["p0_0"].name == "n" and ctx.vars["p1_1"].name == "m" and ctx.vars.hints == {"p0_0": 5, "p0_2": 2, "p1_1": 4}
    assert ga.node.shape == a.node.shape
    ctx.new_step()
    ctx.input(torch.randn(5, 3, 2), {0: "n", 2: "k"})
    with pytest.raises(ValueError, match="dim n is 5 in one input and 6 in another"):
        ctx.input(torch.randn(6, 4), {0: "n", 1: "m"})
    ctx.new_step()
    with pytest.raises(ValueError, match="dim name 'a b' is not an identifier"):
        ctx.input(torch.randn(2), {0: "a b"})


def test_a_cached_step_still_checks_its_outputs_shapes():
    """A cached step predicts its outputs' shapes by one compiled function per key
    (``shapes_fn``): a kernel that runs to another shape than the shape rule's
    (here, a stand-in) is still refused on a hit, naming the op."""
    import engines.lazy.passes as P

    f = L.jit(lambda x: x.unsqueeze(0), dims=[{0: "n"}])
    f(torch.randn(3, 2))
    f(torch.randn(4, 2))
    assert f.ctx.stats["hit"] == 1
    entry = f.ctx.last
    good = entry.run
    f.ctx.cache = {k: P.Compiled(e.kernel, e.ir, e.code, run=lambda t: (good(t)[0][..., :1],)) for k, e in f.ctx.cache.items()}
    f.ctx.fast = {k: (f.ctx.cache[next(iter(f.ctx.cache))],) + v[1:] for k, v in f.ctx.fast.items()}
    f.ctx.tape = None  # (the last step's log carries its compile: a step following it would not look it up)
    with pytest.raises(
        L.IRError,
        match=r"shape rule for unsqueeze predicted torch.float32\[1, 5, 2\], ran to "
        r"torch.float32\[1, 5, 1\]",
    ):
        f(torch.randn(5, 2))
    assert f.ctx.stats["hit"] == 2  # refused on the cached path


def test_a_cached_step_still_checks_its_outputs_dtype():
    """The served sync (``served.served_fn``) compares each output's dtype as well as its shape:
    a kernel that runs to another dtype than the rule predicted is refused on a hit."""
    import engines.lazy.passes as P

    f = L.jit(lambda x: x.unsqueeze(0), dims=[{0: "n"}])
    f(torch.randn(3, 2))
    f(torch.randn(4, 2))
    good = f.ctx.last.run
    f.ctx.cache = {k: P.Compiled(e.kernel, e.ir, e.code, run=lambda t: (good(t)[0].double(),)) for k, e in f.ctx.cache.items()}
    f.ctx.fast = {k: (f.ctx.cache[next(iter(f.ctx.cache))],) + v[1:] for k, v in f.ctx.fast.items()}
    f.ctx.tape = None
    with pytest.raises(L.IRError, match=r"predicted torch.float32\[1, 5, 2\], ran to torch.float64\[1, 5, 2\]"):
        f(torch.randn(5, 2))
    assert f.ctx.stats["hit"] == 2


def test_stack_cat_and_split_reach_the_lazy_path_without_torch_dispatch(torch_function_calls):
    """While tracing, ``torch.stack``/``cat``/``split`` on lazy tensors call their lazy
    implementations directly (no ``__torch_function__``); on plain tensors, or under a
    torch function mode, they are torch's; and torch's own functions are back after a step."""
    originals = (torch.stack, torch.cat, torch.split)
    seen = torch_function_calls

    def prog(x):
        t = x.shape[1]
        a, b = torch.split(x, split_size_or_sections=[t // 2, t - t // 2], dim=1)
        c = torch.cat((a, b), 1)
        plain = torch.stack([torch.ones(2), torch.zeros(2)])  # plain tensors: torch's stack
        return torch.stack([a.sum(1), b.sum(1), c.sum(1) * plain.sum()])

    f = L.jit(prog, dims=[{1: "t"}])
    for n in (4, 7, 5):
        x = torch.randn(2, n, 3)
        a, b = x[:, : n // 2], x[:, n // 2 :]
        torch.testing.assert_close(f(x), torch.stack([a.sum(1), b.sum(1), x.sum(1) * 2]))
        assert (torch.stack, torch.cat, torch.split) == originals
    assert seen == [] and f.ctx.compiles() == 1 and f.ctx.stats["hit"] == 2

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    with Mode():
        torch.testing.assert_close(f(x), torch.stack([a.sum(1), b.sum(1), x.sum(1) * 2]))
    assert {"split", "cat", "stack"} <= set(seen)  # a mode sees them, as it does without tracing


def test_one_tensor_one_int_ops_log_what_record_logs():
    """``x.sum(1)``/``x.unsqueeze(-1)`` make the same nodes and step-log entries as
    :func:`record` called directly; a tensor of a finished step is still refused."""
    from engines.lazy.ir import NO_KWARGS
    from engines.lazy.ops.registry import record
    from engines.lazy.symbolic import const

    def step(fast):
        ctx = L.LazyContext("unbounded")
        ctx.new_step()
        x = ctx.input(torch.randn(3, 4), {0: "n"})
        s = x.node.shape
        if fast:
            ys = [x.sum(1), x.unsqueeze(-1), x.sum(-2), x.unsqueeze(0)]
        else:
            ys = [
                record(ctx, op, (x, i), NO_KWARGS, shape, torch.float32)
                for op, i, shape in (
                    ("sum", 1, s[:1]),
                    ("unsqueeze", -1, s + (const(1),)),
                    ("sum", -2, s[1:]),
                    ("unsqueeze", 0, (const(1),) + s),
                )
            ]
        return ctx, x, ctx.log.entries, [(y.node.op, y.node.args[0].pos, y.node.args[1:], y.node.shape, y.node.pos) for y in ys]

    ctx, x, *fast = step(True)
    assert fast == list(step(False)[2:])
    ctx.new_step()
    with pytest.raises(L.FinishedStep, match="belongs to a finished step"):
        x.sum(1)


def test_a_size_operand_signs_as_one_shared_tuple():
    """A one-variable size operand (``narrow``'s start and length) signs the step log as
    ``("e", log.expr(size))``, one shared tuple per size, the same object in the next step's
    entry (a cached step's key then compares by identity), and a size over another
    canonical name is signed by that name."""

    def entries(f, n):
        f(torch.randn(2, n, 3))
        (key,) = f.ctx.fast
        return key[0]

    f = L.jit(lambda x: torch.split(x, [x.shape[1] // 2, x.shape[1] - x.shape[1] // 2], dim=1)[1].sum(1), dims=[{1: "t"}])
    a, b = entries(f, 5), entries(f, 6)
    narrow_a, narrow_b = [e for e in a if e[0] == "narrow"], [e for e in b if e[0] == "narrow"]
    assert narrow_a == narrow_b and narrow_a[1][1][3] is narrow_b[1][1][3]
    from engines.lazy.steplog import StepLog
    from engines.sizes import var

    log = StepLog()
    e = var("p0_1") // 2
    log.canon["p0_1"] = "p0_1"
    first = log.esig(e)
    assert first == ("e", log.expr(e)) and log.esig(e) is first
    other = StepLog()
    other.canon["p0_1"] = "p3_0"  # the same size, another canonical name: signed by it
    assert other.esig(e) == ("e", other.expr(e)) != first


def test_the_key_of_a_one_output_step_is_the_step_logs_key():
    """A step with one output and no guard: ``sync`` keys it by ``StepLog.key`` (the
    key the cache holds)."""
    f = L.jit(lambda x: (x * 2).sum(0), dims=[{0: "n"}])
    x = torch.randn(5, 3)
    f(x)
    f(x)
    inline = f.ctx.last_key
    _, flat = f._record((x,))
    assert not f.ctx.guards and inline == f.ctx.log.key([flat[0].node], f.ctx.guards)
    assert inline in f.ctx.fast and f.ctx.stats["hit"] == 1


def test_a_leaf_plan_follows_its_dims_changed_in_place():
    """Leaf plans are keyed by the dims' items, read every step: a dims dict changed
    in place between steps makes a new plan (axis 1 becomes symbolic)."""
    dims = {0: "n"}
    f = L.jit(lambda x: x.sum(0), dims=[dims])
    f(torch.randn(3, 4))
    f(torch.randn(3, 5))
    assert f.ctx.compiles() == 2  # axis 1 constant: one compile per width
    dims[1] = "k"
    for k in (6, 7):
        torch.testing.assert_close(f(x := torch.randn(3, k)), x.sum(0))
    assert f.ctx.compiles() == 3 and [str(e) for e in f.ctx._named["k"].expr.vars] == ["p0_1"]


def test_a_leaf_plan_follows_its_dims_list_changed_in_place():
    """The axes keys a step reads are made again when ``dims`` no longer equals the copy they
    were made of: here the list of one input's symbolic axes, appended to between steps."""
    axes = [0]
    f = L.jit(lambda x: x.sum(0), dims=[axes])
    f(torch.randn(3, 4))
    f(torch.randn(3, 5))
    assert f.ctx.compiles() == 2
    axes.append(1)
    for k in (6, 7):
        torch.testing.assert_close(f(x := torch.randn(3, k)), x.sum(0))
    assert f.ctx.compiles() == 3


def test_steps_that_never_index_a_plain_tensor_by_a_size_leave_torch_tensor_alone():
    """The first step learns whether ``fn`` indexes a plain tensor by a symbolic size (the
    patched ``torch.Tensor.__getitem__``/``expand``); one that never does is traced without
    the patch (~20 us a step); a later step that does after all is traced again with it, and
    its size stays symbolic (no ``index`` specialisation)."""
    buf = torch.arange(64.0).unsqueeze(0)

    def f(x):
        if x.shape[0] > 5:  # (a guard: its own graph)
            return buf[:, : x.shape[0]] + x.sum()
        return x * 2

    g = L.jit(f)
    patched = []
    real = L.LazyFunction._trace_step

    def spy(self, args):
        patched.append(self.sized_methods is not False)
        return real(self, args)

    L.LazyFunction._trace_step = spy
    try:
        for n in (3, 4, 7, 9, 2):
            x = torch.randn(n)
            torch.testing.assert_close(g(x), f(x))
            assert "__getitem__" not in torch.Tensor.__dict__
    finally:
        L.LazyFunction._trace_step = real
    # n=3: patched, learns it is not needed; n=4: unpatched; n=7: unpatched, a size's __index__,
    # traced again patched; from then on patched for good
    assert patched == [True, False, False, True, True, True]
    assert g.sized_methods is True
    assert g.ctx.compiles() == 2 and not any("index" in str(x) for x in g.guard_log), list(g.guard_log)
