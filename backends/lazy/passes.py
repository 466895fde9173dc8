"""The compile pipeline, one named pass per stage, ``verify`` between stages.

    trace -> key -> (cache miss:) verify -> canonicalise -> verify
          -> materialise_sizes -> verify -> lower_fx -> lint -> codegen

``trace`` (every sync) collects the pending graph of the tensors being synced;
``key`` hashes its structure with sizes kept symbolic (plus concrete sizes in
static mode, bounds in bounded mode, and the guards). Only a miss runs the rest.
The FX module reads every size it needs from its inputs at run time
(``t0.size(0) * 2``), so one compile serves every shape with the same key.
"""

from __future__ import annotations

import dataclasses
import operator

import torch
import torch.fx as fx

from .ir import SIZE, Graph, IRError, Node, dump, remap, verify, walk
from .ops import LOWER
from .symbolic import Expr

SIZE_LOWER = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
              "floordiv": operator.floordiv, "mod": operator.mod}
PIPELINE = ("canonicalise", "materialise_sizes", "lower_fx", "codegen")


# ---------------------------------------------------------------------------
# trace: the pending graph of some tensors
# ---------------------------------------------------------------------------
def _deps(n: Node) -> list:
    out = []
    exprs = list(n.shape)
    for a in walk((n.args, n.kwargs)):
        (out if isinstance(a, Node) else exprs).append(a)
    for e in exprs:
        for v in e.vars():
            if v.src is None:
                raise IRError(f"size {v.name} belongs to a finished step (its input is released)")
            out.append(v.src[0])
    return out


def trace(roots) -> Graph:
    """Topologically sorted graph reaching ``roots`` (leaves first), with the
    leaves that any symbolic size reads from."""
    order, state = [], {}
    for r in roots:
        stack = [(r, False)]
        while stack:
            n, done = stack.pop()
            if done:
                if state[n.uid] != 2:
                    state[n.uid] = 2
                    order.append(n)
                continue
            if n.uid in state:
                continue
            state[n.uid] = 1
            stack.append((n, True))
            stack.extend((d, False) for d in reversed(_deps(n)) if d.uid not in state)
    leaves = sorted((n for n in order if n.is_leaf), key=lambda n: n.uid)  # creation (argument) order
    return Graph(leaves, leaves + [n for n in order if not n.is_leaf], roots)


def _sig(a, ids, fmt):
    if isinstance(a, Node):
        return ("%", ids[a.uid])
    if isinstance(a, Expr):
        return ("e", fmt(a))
    if isinstance(a, (list, tuple)):
        return (type(a).__name__,) + tuple(_sig(x, ids, fmt) for x in a)
    if isinstance(a, dict):
        return ("d",) + tuple((k, _sig(v, ids, fmt)) for k, v in sorted(a.items()))
    if isinstance(a, slice):
        return ("sl", _sig(a.start, ids, fmt), _sig(a.stop, ids, fmt), _sig(a.step, ids, fmt))
    if isinstance(a, (torch.dtype, float)):
        return (type(a).__name__, repr(a))
    return (type(a).__name__, a)


def key(g: Graph, mode: str) -> tuple:
    """The cache key: the graph's structure with symbolic sizes by canonical name."""
    ids = {n.uid: i for i, n in enumerate(g.nodes)}
    fmt = g.fmt_expr

    def sig(a):
        return _sig(a, ids, fmt)

    out = [mode]
    for n in g.nodes:
        if n.is_leaf:
            dims = tuple(g.fmt_expr(e) + (f"<={v.bound}" if mode == "bounded" and len(e.vars()) == 1 and
                                           (v := e.vars()[0]).bound is not None else "") for e in n.shape)
            if mode == "static":
                dims += tuple(n.data.shape)
            out.append(("in", str(n.dtype), dims))
        else:
            out.append((n.op, sig(n.args), sig(n.kwargs), str(n.dtype)))
    out.append(("out",) + tuple(ids[o.uid] for o in g.outputs))
    out.extend(("guard", gd.fmt(g.namer)) for gd in g.guards)
    return tuple(out)


# ---------------------------------------------------------------------------
# compile passes
# ---------------------------------------------------------------------------
def canonicalise(g: Graph) -> Graph:
    """A private copy of the graph in positional order (leaves shared: they
    are read only), so later passes may rewrite it freely."""
    copies: dict = {}

    def m(a):
        return copies.get(a.uid, a) if isinstance(a, Node) else a

    nodes = []
    for n in g.nodes:
        if not n.is_leaf:
            c = Node(n.op, remap(n.args, m), remap(n.kwargs, m), n.shape, n.dtype)
            copies[n.uid] = c
            n = c
        nodes.append(n)
    out = Graph(g.inputs, nodes, [copies.get(o.uid, o) for o in g.outputs], g.guards)
    out.stage = "canonical"
    return out


def materialise_sizes(g: Graph) -> Graph:
    """Turn every size expression in an operand into scalar ``int`` nodes
    (``sym_size``, ``mul``, ``add``, ...), shared between uses (CSE)."""
    memo: dict = {}
    nodes: list = []
    inputs = {n.uid: n for n in g.inputs}

    def emit(op, args, e):
        k = g.fmt_expr(e)
        if k not in memo:
            memo[k] = Node(op, args, shape=(), dtype=SIZE, data=e)
            nodes.append(memo[k])
        return memo[k]

    def atom(a):
        if hasattr(a, "src"):  # Var
            leaf, axis = a.src
            return emit("sym_size", (inputs[leaf.uid], axis), Expr.var(a))
        return emit(a.kind, (size(a.num), size(a.den)), Expr.atom(a))

    def size(e: Expr):
        if e.is_const:
            return e.value
        if g.fmt_expr(e) in memo:
            return memo[g.fmt_expr(e)]
        acc = acc_e = None
        for mono, c in sorted(e.terms, key=lambda mc: (not mc[0], mc[1] < 0, Expr({mc[0]: 1}).fmt(g.namer))):
            term, term_e = abs(c), Expr.const(abs(c))
            if mono:
                term, term_e = None, Expr.const(1)
                for a, p in mono:
                    for _ in range(p):
                        term_e = term_e.mul(Expr.atom(a))
                        term = atom(a) if term is None else emit("mul", (term, atom(a)), term_e)
                if abs(c) != 1:
                    term_e = term_e.mul(Expr.const(abs(c)))
                    term = emit("mul", (term, abs(c)), term_e)
            if acc is None:  # the first term is never the constant (constants sort last)
                acc, acc_e = term, term_e
                if c < 0:
                    acc_e = term_e.mul(Expr.const(-1))
                    acc = emit("mul", (term, -1), acc_e)
            else:
                acc_e = acc_e.add(term_e, 1 if c > 0 else -1)
                acc = emit("add" if c > 0 else "sub", (acc, term), acc_e)
        return acc

    def m(a):
        return size(a) if isinstance(a, Expr) else a

    out_nodes = []
    for n in g.nodes:
        if not n.is_leaf:
            nodes.clear()
            n.args, n.kwargs = remap(n.args, m), remap(n.kwargs, m)
            out_nodes.extend(nodes)
        out_nodes.append(n)
    out = Graph(g.inputs, out_nodes, g.outputs, g.guards)
    out.stage = "materialised"
    return out


def lower_fx(g: Graph) -> fx.Graph:
    """One FX node per IR node: placeholders, ``size``/int arithmetic, torch calls."""
    fg = fx.Graph()
    env: dict = {}

    def m(a):
        return env[a.uid] if isinstance(a, Node) else a

    for i, n in enumerate(g.inputs):
        env[n.uid] = fg.placeholder(f"t{i}")
    for n in g.nodes:
        if n.is_leaf:
            continue
        args, kwargs = remap(n.args, m), remap(n.kwargs, m)
        if n.dtype == SIZE:
            if n.op == "sym_size":
                env[n.uid] = fg.call_method("size", args)
            else:
                env[n.uid] = fg.call_function(SIZE_LOWER[n.op], args)
        else:
            env[n.uid] = fg.call_function(LOWER[n.op], args, kwargs)
    fg.output(tuple(env[o.uid] for o in g.outputs))
    fg.lint()
    return fg


def codegen(fg: fx.Graph) -> fx.GraphModule:
    """Python source for the FX graph, compiled into a callable module."""
    return fx.GraphModule(torch.nn.Module(), fg)


@dataclasses.dataclass
class Compiled:
    kernel: fx.GraphModule
    ir: str  # the IR dump after materialise_sizes
    code: str  # the generated Python


def compile_graph(g: Graph, stats) -> Compiled:
    """Run the pipeline on a traced graph; count each stage in ``stats``."""
    g = verify(canonicalise(g), LOWER)
    stats["canonicalise"] += 1
    g = verify(materialise_sizes(g), LOWER)
    stats["materialise_sizes"] += 1
    text = dump(g)
    fg = lower_fx(g)
    stats["lower_fx"] += 1
    gm = codegen(fg)
    stats["codegen"] += 1
    return Compiled(gm, text, gm.code)


def describe(g: Graph) -> str:
    """The IR dump a compile of ``g`` would produce (no compile, no counting)."""
    try:
        return dump(materialise_sizes(verify(canonicalise(g), LOWER)))
    except IRError as e:
        return f"# invalid graph: {e}\n" + dump(g)
