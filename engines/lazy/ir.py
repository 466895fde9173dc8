"""The lazy IR: nodes, a graph view for compilation, the text dump and ``verify``.

A :class:`Node` is one recorded op: ``op`` (its name), ``args``/``kwargs`` as
given to the op's runtime callable (tensor operands are Nodes; sizes are
:class:`engines.sizes.Expr` until the ``materialise_sizes`` pass turns them
into scalar ``SIZE`` nodes), a symbolic ``shape`` (tuple of Expr) and a
``dtype``. Leaves have ``op == "input"`` and hold their tensor in ``data``;
a scalar ``SIZE`` node holds the size it computes in ``data``, in the graph's
canonical variable names (``2*s0_0``).
"""

from __future__ import annotations

import itertools

from engines import sizes
from engines.sizes import Expr

from .memo import Memo
from .symbolic import hint, names_of, var_of

SIZE = "int"  # dtype of scalar size nodes
SIZE_OPS = ("sym_size", "add", "sub", "mul", "floordiv", "mod", "max", "min")
_uids = itertools.count()
_next_uid = _uids.__next__
NO_KWARGS: dict = {}  # the kwargs of a node without any (shared: passes replace a node's kwargs, never write them)


class IRError(AssertionError):
    """``verify`` found a malformed graph (a bug in a pass or a shape rule)."""


class Node:
    # (no ``__weakref__``: a node no one holds is taken again by the next step, see .reuse; a weak
    # reference would watch it change unseen by the reference count that decides it)
    __slots__ = ("args", "data", "dtype", "kwargs", "op", "pos", "shape", "uid")

    def __init__(self, op, args=(), kwargs=None, shape=(), dtype=None, data=None):
        # (one statement per field: a tuple assignment builds the tuple first, and every op makes a node)
        self.uid = _next_uid()
        self.pos = None  # its index in the context's step log (``LazyContext.log``), if logged
        self.op = op
        self.kwargs = kwargs or NO_KWARGS
        self.dtype = dtype
        self.data = data
        self.args = args if type(args) is tuple else tuple(args)
        self.shape = shape if type(shape) is tuple else tuple(shape)

    @property
    def is_leaf(self) -> bool:
        return self.op == "input"

    def hints(self, env) -> tuple[int, ...]:
        """The shape under the current sizes (``env``: name -> size)."""
        return tuple([hint(e, env) for e in self.shape])

    def __repr__(self) -> str:
        return f"Node({self.op}#{self.uid})"


def walk(obj):
    """Yield every Node and Expr inside a (nested) argument."""
    if isinstance(obj, (Node, Expr)):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from walk(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from walk(o)
    elif isinstance(obj, slice):
        yield from walk((obj.start, obj.stop, obj.step))


def remap(obj, fn):
    """Rebuild a nested argument with ``fn`` applied to every Node and Expr."""
    if isinstance(obj, (Node, Expr)):
        return fn(obj)
    if isinstance(obj, list):
        return [remap(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(remap(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: remap(v, fn) for k, v in obj.items()}
    if isinstance(obj, slice):
        return slice(remap(obj.start, fn), remap(obj.stop, fn), remap(obj.step, fn))
    return obj


class Graph:
    """The graph a sync compiles: ``nodes`` in topological order (leaves first),
    ``inputs`` (the leaves, in calling order), ``outputs``, ``guards``, and the
    context's size variables ``vars`` (:class:`~.symbolic.SizeVars`).

    ``canon`` gives each size variable its canonical name ``s<input>_<axis>``
    (the input it is read from): dumps, cache keys and the materialised size
    arithmetic use those names, so they do not depend on which step traced.
    """

    def __init__(self, inputs, nodes, outputs, guards=(), vars=None):
        self.inputs, self.nodes, self.outputs = list(inputs), list(nodes), list(outputs)
        self.guards = list(guards)
        self.vars = vars
        self.stage = "trace"
        self._index_vars()

    def _index_vars(self):
        pos = {n.uid: i for i, n in enumerate(self.inputs)}
        self.canon: dict = {}
        for n in self.inputs:
            for e in n.shape:
                for name in names_of(e):
                    if name not in self.canon:
                        leaf, axis = self.vars[name].src
                        self.canon[name] = f"s{pos[leaf.uid]}_{axis}"

    def namer(self, name: str) -> str:
        """The canonical name of the variable ``name``."""
        try:
            return self.canon[name]
        except KeyError:
            v = self.vars.get(name) if self.vars is not None else None
            shown = name if v is None or v.name == name else f"{v.name} ({name})"
            raise IRError(f"size variable {shown} is not read from any input of the graph") from None

    def _signature(self, e: Expr) -> tuple:
        """``e``'s structure with each variable by canonical name (cheap; the
        key of the shared cache of canonical forms)."""
        for name in names_of(e):
            self.namer(name)  # an IRError for a variable not read from the inputs
        return _structure(e, self.canon)

    def _canonical_entry(self, e: Expr) -> tuple:
        sig = self._signature(e)
        entry = _CANONICAL.get(sig)
        if entry is None:
            c = sizes.substitute(e, {n: sizes.var(self.namer(n)) for n in names_of(e)})
            entry = _CANONICAL.put(sig, (c, str(c)))
        return entry

    def canonical(self, e: Expr) -> Expr:
        """``e`` over the canonical variable names."""
        return e if e.is_const else self._canonical_entry(e)[0]

    def fmt_expr(self, e: Expr) -> str:
        """``e`` as text in canonical names (``2*s0_0``)."""
        if e.is_const:
            return str(e.value)
        n = var_of(e)
        return self.namer(n) if n is not None else self._canonical_entry(e)[1]


def _structure(e: Expr, canon: dict) -> tuple:
    """``e``'s terms with every variable renamed by ``canon`` (no renormalising).
    Plain functions, not closures: a closure cycle would hold each step's graph."""
    return tuple((tuple((_atom_structure(a, canon), p) for a, p in m), c) for m, c in e.terms)


def _atom_structure(a, canon: dict):
    if a.kind == "var":
        return canon[a.name]
    return (a.kind,) + tuple(_structure(x, canon) for x in a.args)


# structure with canonical names -> (canonical Expr, its text), shared by every
# graph: variable names differ from step to step, canonical structures repeat
_CANONICAL = Memo()


def fmt_type(g: Graph, n: Node) -> str:
    if n.dtype == SIZE:
        return "int"
    dt = str(n.dtype).replace("torch.", "")
    short = {"float32": "f32", "float64": "f64", "float16": "f16", "int64": "i64", "int32": "i32", "bool": "bool"}
    return f"{short.get(dt, dt)}[{', '.join(g.fmt_expr(e) for e in n.shape)}]"


def dump(g: Graph) -> str:
    """Readable text: ``%3 = mul(%2, 2) : int`` / ``%4 = expand(%1, [%3, -1, -1]) : f32[...]``."""
    ids = {n.uid: i for i, n in enumerate(g.nodes)}

    def fa(a):
        if isinstance(a, Node):
            return f"%{ids[a.uid]}"
        if isinstance(a, Expr):
            return g.fmt_expr(a)
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(fa(x) for x in a) + "]"
        if isinstance(a, dict):
            return ", ".join(f"{k}={fa(v)}" for k, v in a.items())
        if isinstance(a, slice):
            return ":".join("" if x is None else fa(x) for x in (a.start, a.stop, a.step))
        return str(a).replace("torch.", "")

    lines = [f"# graph ({g.stage}), {len(g.inputs)} inputs"]
    for n in g.nodes:
        if n.is_leaf:
            body = f"input({g.inputs.index(n)})"
        else:
            parts = [fa(a) for a in n.args]
            if n.kwargs:
                parts.append(fa(n.kwargs))
            body = f"{n.op}({', '.join(parts)})"
        note = f"  # {n.data}" if n.dtype == SIZE and n.data is not None and n.op != "sym_size" else ""
        lines.append(f"%{ids[n.uid]} = {body} : {fmt_type(g, n)}{note}")
    lines.append("return (" + ", ".join(f"%{ids[o.uid]}" for o in g.outputs) + ")")
    for gd in g.guards:
        lines.append(f"# guard: {gd.fmt(g.fmt_expr)}")
    return "\n".join(lines)


def verify(g: Graph, known_ops) -> Graph:
    """Check the graph's invariants; raise :class:`IRError` naming the node.

    - nodes are in topological order; every operand is an earlier node;
    - leaves are exactly the inputs; outputs are nodes of the graph;
    - every op is known to the lowering; size nodes are int and shape ``()``;
    - every symbolic size is over variables read from the graph's inputs;
    - after ``materialise_sizes``: no Expr remains in any operand.
    """
    seen: set = set()
    leaves = [n for n in g.nodes if n.is_leaf]
    if [n.uid for n in leaves] != [n.uid for n in g.inputs]:
        raise IRError("graph leaves and inputs differ")
    for n in g.nodes:
        where = f"node {n.op}#{n.uid}"
        if not n.is_leaf and n.op not in known_ops and not (n.dtype == SIZE and n.op in SIZE_OPS):
            raise IRError(f"{where}: op not known to the lowering")
        if n.dtype == SIZE and n.shape != ():
            raise IRError(f"{where}: size node with a tensor shape")
        for a in walk((n.args, n.kwargs)):
            if isinstance(a, Node):
                if a.uid not in seen:
                    raise IRError(f"{where}: operand {a!r} is not defined before use")
            elif g.stage in ("materialised", "fx"):
                raise IRError(f"{where}: size expression {a} left after materialise_sizes")
            else:
                for v in names_of(a):
                    g.namer(v)
        for e in n.shape:
            if not isinstance(e, Expr):
                raise IRError(f"{where}: shape entry {e!r} is not a size expression")
            for v in names_of(e):
                g.namer(v)
        seen.add(n.uid)
    for o in g.outputs:
        if o.uid not in seen:
            raise IRError(f"output {o!r} is not in the graph")
    return g
