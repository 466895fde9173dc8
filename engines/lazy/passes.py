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

from engines import sizes
from engines.sizes import Expr

from .ir import SIZE, Graph, IRError, Node, dump, remap, verify, walk
from .ops import LOWER
from .symbolic import names_of, var_of

SIZE_LOWER = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "max": torch.sym_max,
    "min": torch.sym_min,
}
_REPR = (torch.dtype, float)  # keyed by repr (a module attribute lookup on torch is slow)


# ---------------------------------------------------------------------------
# trace: the pending graph of some tensors
# ---------------------------------------------------------------------------
def _deps(n: Node, table) -> list:
    out = []
    exprs = list(n.shape)
    for a in walk((n.args, n.kwargs)):
        (out if isinstance(a, Node) else exprs).append(a)
    for e in exprs:
        for name in names_of(e):
            v = table.get(name)
            if v is None or v.src is None:
                raise IRError(f"size {name if v is None else v.name} belongs to a finished step (its input is released)")
            out.append(v.src[0])
    return out


def trace(roots, table) -> Graph:
    """Topologically sorted graph reaching ``roots`` (leaves first), with the
    leaves that any symbolic size reads from (``table``: the context's
    :class:`~.symbolic.SizeVars`)."""
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
            stack.extend((d, False) for d in reversed(_deps(n, table)) if d.uid not in state)
    leaves = sorted((n for n in order if n.is_leaf), key=lambda n: n.uid)  # creation (argument) order
    return Graph(leaves, leaves + [n for n in order if not n.is_leaf], roots, vars=table)


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
    if isinstance(a, _REPR):
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
            dims = tuple(g.fmt_expr(e) + _bound(g, e) if mode == "bounded" else g.fmt_expr(e) for e in n.shape)
            if mode == "static":
                dims += tuple(n.data.shape)
            out.append(("in", str(n.dtype), dims))
        else:
            out.append((n.op, sig(n.args), sig(n.kwargs), str(n.dtype)))
    out.append(("out",) + tuple(ids[o.uid] for o in g.outputs))
    out.extend(("guard", gd.fmt(g.fmt_expr)) for gd in g.guards)
    return tuple(out)


def _bound(g: Graph, e: Expr) -> str:
    """``<=max`` for a dim over one bounded variable (bounded mode's key)."""
    if e.is_const:
        return ""
    name = var_of(e)
    if name is None:
        names = e.vars
        name = next(iter(names)) if len(names) == 1 else None
    v = None if name is None else g.vars.get(name)
    return "" if v is None or v.bound is None else f"<={v.bound}"


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
    out = Graph(g.inputs, nodes, [copies.get(o.uid, o) for o in g.outputs], g.guards, g.vars)
    out.stage = "canonical"
    return out


class _SizeOps(sizes.NodeOps):
    """:class:`engines.sizes.NodeOps` making IR size nodes; a variable is
    ``sym_size(leaf, axis)`` with ``env`` mapping its name to ``(leaf, axis)``."""

    def var(self, name, env):
        leaf, axis = super().var(name, env)
        return self.make("sym_size", (leaf, axis))


def materialise_sizes(g: Graph) -> Graph:
    """Turn every size expression in an operand into scalar ``int`` nodes
    (``sym_size``, ``mul``, ``add``, ...), shared between uses (CSE).

    Each size is renamed to canonical variables and evaluated by
    ``sizes.evaluate`` with ops that make nodes: constants stay ints, a node is
    made once per ``(op, operands)``, terms come positive first, then
    negative, the constant last; ``memo`` (one per graph) shares every
    sub-expression by normal form. A size node's ``data`` is the size it computes.
    """
    nodes: list = []

    def make(op, args):
        n = Node(op, args, shape=(), dtype=SIZE)
        nodes.append(n)
        return n

    def note(e, value):
        if isinstance(value, Node) and value.data is None:
            value.data = e

    env = {}
    for name, canon in g.canon.items():
        leaf, axis = g.vars[name].src
        env[canon] = (leaf, axis)
    ops, memo = _SizeOps(make, note), {}

    def m(a):
        return sizes.evaluate(g.canonical(a), env, ops, memo) if isinstance(a, Expr) else a

    out_nodes = []
    for n in g.nodes:
        if not n.is_leaf:
            nodes.clear()
            n.args, n.kwargs = remap(n.args, m), remap(n.kwargs, m)
            out_nodes.extend(nodes)
        out_nodes.append(n)
    out = Graph(g.inputs, out_nodes, g.outputs, g.guards, g.vars)
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
    run: object = None  # what a step calls: the generated ``forward`` (no nn.Module call machinery)

    def __post_init__(self):
        if self.run is None:
            self.run = self.kernel.forward


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
