"""The one evaluator through each ops: ints, Python source, graph nodes, FX,
StableHLO scalar ops (on a fake context with truncating i32 semantics)."""

import operator

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sizes_trees import VARS, build, envs, outcome, trees

from engines import sizes as S


def _normal(t):
    try:
        return build(t)
    except S.SizeZeroDivisionError:
        return None


# -- Python source ---------------------------------------------------------------
class _T:
    shape = (0, 0)


SNIPPETS = {"a": "P['a']", "b": "t1.shape[1]", "c": "c"}


def _run_source(src, env):
    t1 = _T()
    t1.shape = (99, env["b"])
    scope = {"__builtins__": {}, "max": max, "min": min, "P": {"a": env["a"]}, "t1": t1, "c": env["c"]}
    return eval(src, scope)


@settings()
@given(trees, st.lists(envs, min_size=1, max_size=4))
def test_python_source_agrees_with_the_int_evaluator(t, environments):
    e = _normal(t)
    assume(e is not None)
    src = S.source(e, SNIPPETS)
    for env in environments:
        assert outcome(lambda: _run_source(src, env)) == outcome(lambda: S.evaluate(e, env)), (str(e), src)


def test_source_text_is_readable():
    src = S.source("a*b + 2*max(a, b) - c // 3 - 1", {"a": "t1.shape[0]", "b": "P['b']", "c": "x.size(0)"})
    assert src == "t1.shape[0] * P['b'] + max(t1.shape[0], P['b']) * 2 - x.size(0) // 3 - 1"
    assert S.source("-a + (b + c) % 4", {"a": "a", "b": "b", "c": "n + 1"}) == "(b + (n + 1)) % 4 - a"
    assert S.source("7", {}) == "7"
    assert S.source("(d0_0 * d0_1) // p_b", None) == "d0_0 * d0_1 // p_b"  # names as they are
    assert S.source("p_a * p_b", atomic=True) == "(p_a * p_b)" and S.source("p_a", atomic=True) == "p_a"
    assert S.source("max(a, b)", atomic=True) == "max(a, b)" and S.source("-3", atomic=True) == "(-3)"


def test_source_ops_bracket_by_precedence():
    ops, env = S.SourceOps(), {"a": "a", "b": "b", "c": "c"}
    a, b, c = (ops.var(v, env) for v in "abc")
    cases = [
        (ops.sub(a, ops.add(b, c)), "a - (b + c)"),
        (ops.sub(ops.add(a, b), c), "a + b - c"),
        (ops.mul(a, ops.mul(b, c)), "a * (b * c)"),
        (ops.floordiv(ops.mul(a, b), c), "a * b // c"),
        (ops.mod(a, ops.floordiv(b, c)), "a % (b // c)"),
        (ops.mul(ops.neg(a), ops.const(-2)), "-a * (-2)"),
        (ops.max(ops.add(a, b), c), "max(a + b, c)"),
        (ops.neg(ops.sub(a, b)), "-(a - b)"),
    ]
    for src, want in cases:
        assert src == want
    assert ops.var("x", {"x": "n + 1"}) == "(n + 1)"


# -- graph nodes (the shape materialise_sizes and FX need) -------------------------
class _Recorder:
    def __init__(self):
        self.nodes = []

    def make(self, op, args):
        self.nodes.append((op, args))
        return ("node", len(self.nodes) - 1)

    def run(self, value, env):
        if isinstance(value, int):
            return value
        if value[0] == "var":
            return env[value[1]]
        op, args = self.nodes[value[1]]
        fn = {
            "add": operator.add,
            "sub": operator.sub,
            "mul": operator.mul,
            "floordiv": operator.floordiv,
            "mod": operator.mod,
            "max": max,
            "min": min,
            "neg": operator.neg,
        }[op]
        return fn(*(self.run(a, env) for a in args))


class _RecOps(S.Ops):
    """Every operation a node (no folding, no hash-consing): shows the evaluator's own CSE."""

    def __init__(self, rec):
        self.rec = rec

    def const(self, c):
        return c


for _op in ("add", "sub", "mul", "floordiv", "mod", "max", "min", "neg"):
    setattr(_RecOps, _op, lambda self, *args, _op=_op: self.rec.make(_op, args))


@settings()
@given(trees, st.lists(envs, min_size=1, max_size=4))
def test_node_ops_agree_and_share_nodes(t, environments):
    e = _normal(t)
    assume(e is not None)
    graph_env = {v: ("var", v) for v in VARS}
    rec, memo = _Recorder(), {}
    value = S.evaluate(e, graph_env, _RecOps(rec), memo)
    made = len(rec.nodes)
    assert S.evaluate(e, graph_env, _RecOps(rec), memo) is value and len(rec.nodes) == made  # CSE via the memo
    assert len(set(rec.nodes)) == len(rec.nodes), rec.nodes  # the evaluator never asks for a node twice
    rec2 = _Recorder()
    value2 = S.evaluate(e, graph_env, S.NodeOps(rec2.make))
    for env in environments:
        want = outcome(lambda: S.evaluate(e, env))
        assert outcome(lambda: rec.run(value, env)) == want, str(e)
        assert outcome(lambda: rec2.run(value2, env)) == want, str(e)


def test_node_ops_fold_constants_and_label_nodes():
    rec, labels = _Recorder(), {}
    ops = S.NodeOps(rec.make, note=lambda e, v: labels.setdefault(v, str(e)) if not isinstance(v, int) else None)
    v = S.evaluate("2*s + (s*2) // 3 + 4", {"s": ("var", "s")}, ops)
    assert [op for op, _ in rec.nodes] == ["mul", "floordiv", "add", "add"]
    assert rec.nodes[0] == ("mul", (("var", "s"), 2))  # like lazy's "%3 = mul(%2, 2)"
    assert labels[("node", 0)] == "2*s" and labels[v] == "2*s + 2*s // 3 + 4"
    assert S.evaluate("3 * 4", {}, ops) == 12 and len(rec.nodes) == 4


def test_fx_ops_build_a_runnable_graph():
    fx = pytest.importorskip("torch.fx")
    g = fx.Graph()
    env = {v: g.placeholder(v) for v in VARS}
    e = S.parse("max(a, b) * c - (a + 1) // c + min(b, 3) % c")
    g.output(S.evaluate(e, env, S.FxOps(g)))
    gm = fx.GraphModule({}, g)
    for a, b, c in [(3, 5, 2), (-7, 1, -3), (0, 0, 4)]:
        assert gm(a, b, c) == S.evaluate(e, {"a": a, "b": b, "c": c})


# -- StableHLO scalar ops ------------------------------------------------------------
class _FakeCtx:
    """The three LoweringContext methods StableHLOOps uses, evaluated eagerly
    with StableHLO's semantics: ``divide``/``remainder`` truncate toward 0."""

    def __init__(self, dims):
        self.dims, self.log = dims, []

    def constant(self, value, dtype):
        return int(value)

    def compare(self, a, b, direction):
        return {"LT": a < b, "NE": a != b, "EQ": a == b}[direction]

    def op(self, name, operands, result, attrs=None):
        self.log.append(name)
        assert result[0] == () and result[1] in ("i32", "i1"), result
        if name == "stablehlo.get_dimension_size":
            return self.dims[operands[0]][int(attrs["dimension"].split()[0])]
        a = operands
        tdiv = lambda x, y: abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # noqa: E731
        fns = {
            "add": lambda: a[0] + a[1],
            "subtract": lambda: a[0] - a[1],
            "multiply": lambda: a[0] * a[1],
            "maximum": lambda: max(a),
            "minimum": lambda: min(a),
            "and": lambda: a[0] and a[1],
            "divide": lambda: tdiv(a[0], a[1]),
            "remainder": lambda: a[0] - tdiv(a[0], a[1]) * a[1],
            "select": lambda: a[1] if a[0] else a[2],
            "negate": lambda: -a[0],
        }
        return fns[name.removeprefix("stablehlo.")]()


@settings()
@given(trees, st.lists(envs, min_size=1, max_size=4))
def test_stablehlo_ops_fix_up_floor_and_mod_signs(t, environments):
    e = _normal(t)
    assume(e is not None)
    for env in environments:
        want = outcome(lambda: S.evaluate(e, env))
        assume(want[0] == "ok")  # StableHLO does not trap a zero divisor
        ctx = _FakeCtx({"x": (env["a"], env["b"]), "y": (env["c"],)})
        got = S.evaluate(e, {"a": ("x", 0), "b": ("x", 1), "c": ("y", 0)}, S.StableHLOOps(ctx))
        assert got == want[1], str(e)


def test_stablehlo_ops_read_each_dim_once():
    ctx = _FakeCtx({"x": (7, -3)})
    v = S.evaluate("(a + b) // b + a % b + a*b", {"a": ("x", 0), "b": ("x", 1)}, S.StableHLOOps(ctx))
    assert v == (7 - 3) // -3 + 7 % -3 + 7 * -3
    assert ctx.log.count("stablehlo.get_dimension_size") == 2
