"""The lazy context: leaves, guards, the compile cache, ``sync``, and ``jit``.

Modes (the cache key):
  ``unbounded``  dynamic dims are size variables; one compile for all shapes.
  ``bounded``    as unbounded, each variable carries a maximum (in the key);
                 a size past it raises :class:`BoundError`.
  ``static``     every size is a constant, and the key holds the concrete
                 shapes -- torch_xla's LazyTensor: one compile per shape.
"""

from __future__ import annotations

import collections
import dataclasses
import time

import torch

from engines.sizes import Expr
from engines.sizes.modes import MODES

from . import passes
from .hooks import paused, trace_step
from .ir import NO_KWARGS, IRError, Node
from .misses import explain_miss
from .steplog import StepLog, Unlogged
from .symbolic import _CONSTS, _NAMES, NeedsSizedMethods, SizeVars, Var, check_dim_name, compare, const, hint, rename, shapes_fn
from .tensor import LazyTensor

_TENSOR = torch.Tensor


_CANON_NAMES: dict = {}
_STATIC_LEAVES: dict = {}  # torch.Size -> (its sizes as constants, the step log's dims): leaves without variables


_ALL_AXES: dict = {}  # ndim -> {axis: None for every axis} (``dims=True``; read only)


def _canon_names(pos: int, ndim: int) -> tuple:
    """The step log's names of the variables first read at leaf ``pos``, by axis
    (``p<pos>_<axis>``; shared strings)."""
    n = _CANON_NAMES.get(pos)
    if n is None or len(n) < ndim:
        n = _CANON_NAMES[pos] = tuple([f"p{pos}_{axis}" for axis in range(max(ndim, 4))])
    return n


_LEAF_PLANS: dict = {}  # (leaf position, rank, True or id(dims)) -> (dims, per axis: None or (name, canonical name, axis))


def _leaf_plan(pos: int, ndim: int, dims, pk) -> tuple:
    """The plan of :meth:`LazyContext._logged_input` (user names checked here, once)."""
    canon = _canon_names(pos, ndim)
    plan = []
    for axis in range(ndim):
        if dims is not True and axis not in dims:
            plan.append(None)
            continue
        name = None if dims is True else dims[axis]
        if name is not None and name not in _NAMES:
            check_dim_name(name)
        plan.append((name or None, canon[axis], axis))
    if len(_LEAF_PLANS) >= 1024:
        _LEAF_PLANS.clear()
    plan = tuple(plan)
    _LEAF_PLANS[pk] = (True if dims is True else dict(dims), plan)
    return plan


class BoundError(ValueError):
    """An input size exceeds the bound the graph was compiled for."""


@dataclasses.dataclass(frozen=True)
class Guard:
    """``lhs op rhs`` held (``result``) when the program forced a size (``reason``).

    ``vars``: the variable names in it; ``names``: ``(name, display name)``
    pairs for those the user named (``str()`` shows those names)."""

    lhs: Expr
    op: str
    rhs: Expr
    result: bool
    reason: str
    vars: frozenset = frozenset()
    names: tuple = ()

    def fmt(self, fmt=None) -> str:
        """The guard as text, each side written by ``fmt`` (default: display names)."""
        if fmt is None:

            def fmt(e):
                return rename(e, self.names)

        return f"{fmt(self.lhs)} {self.op} {fmt(self.rhs)} is {self.result} ({self.reason})"

    def __str__(self) -> str:
        return self.fmt()


class LazyContext:
    """Owns the compile cache and the guards; makes leaves and syncs graphs.

    ``on_compile(seconds, reason)``, if set, is called after every compile
    (a cache miss) with its time and :func:`explain_miss`'s reason.
    ``compiler(graph, stats) -> passes.Compiled`` turns a verified graph into
    what a step runs (default :func:`passes.compile_graph`: an FX module on
    torch eager; :class:`.stablehlo.StablehloCompiler`: StableHLO on XLA)."""

    def __init__(self, mode: str = "unbounded", check: bool = True, on_compile=None, compiler=None):
        if mode not in MODES:
            raise ValueError(f"unknown lazy mode {mode!r}; valid: {', '.join(MODES)}")
        self.mode, self.check = mode, check
        self.sized_methods_off = False  # a step traced without torch.Tensor's sized methods (LazyFunction)
        self.on_compile = on_compile
        self.compiler = compiler or passes.compile_graph
        self.cache: dict = {}
        self.stats: collections.Counter = collections.Counter()
        self.compile_time_s = 0.0
        self.guards: list = []
        self._guard_keys: set = set()
        self.vars = SizeVars()  # the step's size variables, by algebra name
        self._named: dict = {}  # user dim name -> Var
        self.last: passes.Compiled | None = None
        self.log: StepLog | None = None  # the step log while a step records (see .steplog)
        self.fast: dict = {}  # step-log key -> (Compiled, input positions): the cached steps
        self.last_key = None  # the step-log key of the step's first sync (None: none, or unlogged)
        self._last_hit = None  # (step-log key, fast entry) of the last hit: most steps repeat it

    # -- leaves ------------------------------------------------------------
    def new_step(self) -> None:
        """Forget the size variables and guards of the previous step."""
        self._named.clear()
        v = self.vars  # (SizeVars.clear, inline)
        v.vars.clear()
        v.hints.clear()
        v.step += 1
        self.guards = []  # (a new list: the last step's is handed out)
        self._guard_keys.clear()
        self.log, self.last_key = StepLog(), None

    def release(self, tensors) -> None:
        """End of a step: its size variables stop holding their leaves
        (``tensors``, the step's inputs), so refcounting frees the step at
        once. They can no longer be read by a later graph."""
        self.log = None
        for v in self.vars.vars.values():  # every variable of a jit step is read from one of its leaves
            v.src = None

    def input(self, t: torch.Tensor, dims=True, bounds=None) -> LazyTensor:
        """A lazy leaf over ``t``.

        ``dims``: which axes are symbolic -- ``True`` (all), ``False``/``None``
        (none), a sequence of axes, or ``{axis: name}``; axes with the same
        name share one variable. ``bounds``: ``{axis: max}`` (bounded mode).
        Static mode makes every axis constant.
        """
        if type(t) is not _TENSOR and not isinstance(t, _TENSOR):  # (torch's isinstance check is slow)
            t = torch.as_tensor(t)
        if self.mode == "static" or not dims:  # every axis constant: shape and key entry shared per shape
            shape = t.shape
            hit = _STATIC_LEAVES.get(shape)
            if hit is None:
                if len(_STATIC_LEAVES) >= 1024:
                    _STATIC_LEAVES.clear()
                hit = _STATIC_LEAVES[shape] = (tuple([const(s) for s in shape]), tuple(shape))
            node = Node("input", shape=hit[0], data=t, dtype=t.dtype)
            if self.log is not None:
                self.log.input(node, hit[1])
            return LazyTensor(node, self)
        shape_ = t.shape
        log = self.log
        if log is not None and self.mode == "unbounded" and (dims is True or type(dims) is dict):
            return self._logged_input(t, shape_, dims, log)
        if dims is True:
            dims = _ALL_AXES.get(len(shape_))
            if dims is None:
                dims = _ALL_AXES[len(shape_)] = {i: None for i in range(len(shape_))}
        elif not isinstance(dims, dict):
            dims = {d: None for d in dims}
        bounded = self.mode == "bounded"
        if bounded and bounds is None:
            bounds = NO_KWARGS
        node = Node("input", data=t, dtype=t.dtype)
        canon = _canon_names(len(log.nodes), len(shape_)) if log is not None else None
        named, table = self._named, self.vars
        shape, sig = [], []  # sig: the dims as the step log keys them
        for axis, size in enumerate(shape_):
            if axis not in dims:
                e = _CONSTS.get(size)
                shape.append(e if e is not None else const(size))
                sig.append(size)
                continue
            name = dims[axis]
            bound = bounds.get(axis) if bounded else None
            if bound is not None and size > bound:
                raise BoundError(f"dim {name or axis} of input is {size}, past the bound {bound} this graph is compiled for")
            v = named.get(name) if name else None
            if v is None:
                v = table.new(node, axis, size, name, bound, canon[axis] if canon is not None else None)
                if name:
                    named[name] = v
                if canon is not None:  # a new variable: named by this leaf and axis
                    c = log.canon[v.sym] = canon[axis]
            elif v.hint != size:
                raise ValueError(f"dim {name} is {v.hint} in one input and {size} in another")
            elif canon is not None:
                c = log.canon.get(v.sym)
                if c is None:
                    c = log.canon[v.sym] = canon[axis]
            shape.append(v.expr)
            if canon is not None:
                sig.append(c if v.bound is None or not bounded else (c, v.bound))
        node.shape = tuple(shape)
        if log is not None:
            log.input(node, tuple(sig))
        return LazyTensor(node, self)

    def _logged_input(self, t, shape_, dims, log) -> LazyTensor:
        """:meth:`input` of a jit step's leaf, unbounded mode (most steps): the
        per-axis plan -- constant, or (user name, canonical variable name) -- is
        made once per (leaf position, rank, dims), and a variable's algebra name is
        its canonical one (``log.canon`` maps it to itself). The same leaf, shape,
        variables and log entry as the general loop below."""
        nodes = log.nodes
        pos, ndim = len(nodes), len(shape_)
        pk = (pos, ndim, True if dims is True else id(dims))
        hit = _LEAF_PLANS.get(pk)
        if hit is not None and (dims is True or hit[0] == dims):  # (by id, then equal: a dict changed in place
            plan = hit[1]  # or another at that id makes a new plan)
        else:
            plan = _leaf_plan(pos, ndim, dims, pk)
        dtype = t.dtype
        node = Node("input", data=t, dtype=dtype)
        named, vars_, hints, lcanon = self._named, self.vars.vars, self.vars.hints, log.canon
        shape, sig = [], []
        for spec, size in zip(plan, shape_, strict=False):
            if spec is None:  # a constant axis
                e = _CONSTS.get(size)
                shape.append(e if e is not None else const(size))
                sig.append(size)
                continue
            name, c, axis = spec
            v = named.get(name) if name is not None else None
            if v is None:
                v = vars_[c] = Var(c, name or c, size, (node, axis))
                hints[c] = size
                lcanon[c] = c
                if name is not None:
                    named[name] = v
            elif v.hint != size:
                raise ValueError(f"dim {name} is {v.hint} in one input and {size} in another")
            else:
                c = lcanon.get(v.sym)
                if c is None:
                    c = lcanon[v.sym] = spec[1]
            shape.append(v.expr)
            sig.append(c)
        node.shape = tuple(shape)
        node.pos = pos  # log.input, inline
        nodes.append(node)
        log.entries.append(("in", dtype, tuple(sig)))
        return LazyTensor(node, self)

    def constant(self, t: torch.Tensor) -> Node:
        """A leaf for a concrete tensor met during tracing (all axes constant)."""
        node = Node("input", shape=tuple(const(s) for s in t.shape), dtype=t.dtype, data=t)
        if self.log is not None:
            self.log.constant(node)
        return node

    # -- guards ------------------------------------------------------------
    def guard(self, lhs: Expr, op: str, rhs: Expr, reason: str) -> bool:
        """Decide ``lhs op rhs`` on the current sizes; record it unless constant."""
        if lhs is rhs or lhs == rhs:  # (normal forms: equal sizes for every input) decided, no guard
            return op in ("==", "<=", ">=")
        result = compare(lhs, op, rhs, self.vars.hints)
        if lhs.is_const and rhs.is_const:
            return result
        k = (lhs, op, rhs)
        if k not in self._guard_keys:
            self._guard_keys.add(k)
            names = lhs.vars | rhs.vars
            self.guards.append(Guard(lhs, op, rhs, result, reason, names, self.vars.display(names)))
        return result

    def specialise(self, e: Expr, reason: str) -> int:
        """The concrete value of ``e``, guarded."""
        v = self.vars.hint(e)
        self.guard(e, "==", const(v), reason)
        return v

    # -- sync -----------------------------------------------------------------
    @staticmethod
    def _roots(tensors) -> list:
        roots, seen = [], set()
        for t in tensors:
            n = t.node
            if not n.is_leaf and n.uid not in seen:
                seen.add(n.uid)
                roots.append(n)
        return roots

    def trace(self, tensors, roots=None) -> passes.Graph:
        if roots is None:
            roots = self._roots(tensors)
        g = passes.trace(roots, self.vars)
        names = g.canon
        g.guards = [gd for gd in self.guards if all(n in names for n in gd.vars)]
        return g

    def sync(self, tensors=None) -> None:
        """Compile (on a cache miss) and run the pending graph of ``tensors``;
        each becomes a leaf holding its value."""
        if tensors is not None and len(tensors) == 1 and type(tensors[0]) is LazyTensor:  # one output: most steps
            n = tensors[0].node
            roots = [] if n.op == "input" else [n]
        else:
            roots = self._roots([t for t in (tensors or ()) if type(t) is LazyTensor or isinstance(t, LazyTensor)])
        if not roots:
            return
        log, lk = self.log, None
        if log is not None:  # the step's first sync: its log names the graph
            self.log = None
            r = roots[0]
            p = r.pos
            if len(roots) == 1 and not self.guards and p is not None and p < len(log.nodes) and log.nodes[p] is r:
                lk = (tuple(log.entries), (p,), ())  # log.key, inline: one output, no guard (most steps)
            else:
                try:
                    lk = log.key(roots, self.guards)
                except Unlogged:
                    lk = None
            self.last_key = lk
            hit = None
            if lk is not None:
                last = self._last_hit
                if last is not None and last[0] == lk:  # the step before's key: equal (shared parts: cheap
                    hit = last[1]  # to compare), not hashed
                else:
                    hit = self.fast.get(lk)
                    if hit is not None:
                        self._last_hit = (lk, hit)
            if hit is not None:
                entry, positions, shapes = hit
                stats = self.stats
                stats["trace"] += 1
                stats["hit"] += 1
                self.last = entry
                nodes = log.nodes
                self._run(entry, [nodes[p].data for p in positions], roots, shapes)
                return
        g = self.trace(tensors, roots)
        self.stats["trace"] += 1
        k = passes.key(g, self.mode)
        entry = self.cache.get(k)
        if entry is None:
            reason = explain_miss(k, self.cache) if self.on_compile is not None else None
            t0 = time.perf_counter()
            with paused():  # (a sync in the middle of a traced step: torch's own methods for the compiler)
                entry = self.compiler(passes.verify(g, passes.LOWER), self.stats)
            dt = time.perf_counter() - t0
            self.cache[k] = entry
            self.compile_time_s += dt
            self.stats["compile"] += 1
            if self.on_compile is not None:
                self.on_compile(dt, reason)
        else:
            self.stats["hit"] += 1
        self.last = entry
        if lk is not None:
            try:
                # the step's variables are named canonically (p<leaf>_<axis>), so every step with this
                # key predicts its outputs' shapes by the same size expressions: compiled once
                self.fast[lk] = (entry, tuple([log.pos(n) for n in g.inputs]), shapes_fn([n.shape for n in g.outputs]))
            except Unlogged:
                pass
        self._run(entry, [n.data for n in g.inputs], g.outputs)

    def _run(self, entry, inputs, outputs, shapes=None) -> None:
        """Run a compiled graph; each output node becomes a leaf holding its value.
        ``shapes``: a cached step's :func:`shapes_fn` of its outputs (the check's
        predicted shapes in one call; else each dim's :func:`hint`)."""
        outs = entry.run(*inputs)
        hints, check = self.vars.hints, self.check
        predicted = None
        if check and shapes is not None:
            try:
                predicted = shapes(hints)
            except (KeyError, ZeroDivisionError):  # the per-dim check below names the size at fault
                predicted = None
        for i, (node, out) in enumerate(zip(outputs, outs, strict=False)):
            if check and (
                out.dtype != node.dtype
                or out.shape != (predicted[i] if predicted is not None else tuple([hint(e, hints) for e in node.shape]))
            ):
                raise IRError(
                    f"shape rule for {node.op} predicted {node.dtype}{list(node.hints(hints))}, "
                    f"ran to {out.dtype}{list(out.shape)}\n{entry.ir}"
                )
            node.op, node.args, node.kwargs, node.data = "input", (), NO_KWARGS, out

    def dump(self, *tensors) -> str:
        """The IR text of the pending graph of ``tensors`` (what a sync would compile)."""
        return passes.describe(self.trace(tensors))

    def compiles(self) -> int:
        return self.stats["compile"]


# ---------------------------------------------------------------------------
# jit: trace every call, compile once per key
# ---------------------------------------------------------------------------
class LazyFunction:
    """``fn`` run on the lazy path: each call traces ``fn`` on lazy leaves over
    the inputs, syncs the outputs (compile on a cache miss) and returns torch
    tensors. ``dims``/``bounds`` are per input, as in :meth:`LazyContext.input`."""

    def __init__(self, fn, mode="unbounded", dims=None, bounds=None, ctx=None):
        self.fn = fn
        self.ctx = ctx or LazyContext(mode)
        self.dims, self.bounds = dims, bounds
        self._leaves: list = []
        self.guards: list = []  # the last call's
        self.guard_log: dict = {}  # every distinct guard so far, as text
        self._logged: set = set()  # step-log keys whose guards are in guard_log
        self.sized_methods: bool | None = None  # whether a step patches them: see hooks.trace_step

    def _record(self, args):
        """Trace ``fn`` on fresh lazy leaves over ``args``: (output, flat outputs). A step that
        needs ``torch.Tensor``'s sized methods after all (see ``hooks.trace_step``) is traced again."""
        if self.sized_methods is not False:
            return self._trace_step(args)
        ctx = self.ctx
        ctx.sized_methods_off = True
        try:
            return self._trace_step(args)
        except NeedsSizedMethods:
            self.sized_methods = True
        finally:
            ctx.sized_methods_off = False
        return self._trace_step(args)

    def _trace_step(self, args):
        ctx = self.ctx
        ctx.new_step()
        leaves = []
        dims, bounds = self.dims, self.bounds
        for i, a in enumerate(args):
            if type(a) is _TENSOR or isinstance(a, _TENSOR):
                a = ctx.input(a, True if dims is None else dims[i], None if bounds is None else bounds[i])
            leaves.append(a)
        self._leaves = leaves  # (release reads the step's variables, not these)
        out = trace_step(self, leaves)
        flat = [out] if type(out) is LazyTensor else list(out) if isinstance(out, (list, tuple)) else [out]
        return out, flat

    def __call__(self, *args):
        out, flat = self._record(args)
        ctx = self.ctx
        ctx.sync(flat)
        guards = self.guards = ctx.guards  # (a new list each step)
        if guards:
            lk = ctx.last_key
            if lk is None or lk not in self._logged:
                for g in guards:
                    self.guard_log.setdefault(str(g))
                if lk is not None and all(len(g.names) == len(g.vars) for g in guards):
                    self._logged.add(lk)  # every variable user-named: a step with this key logs the same texts
        ctx.release(self._leaves)
        self._leaves = []
        if type(out) is LazyTensor:
            return out.node.data
        res = [o.node.data if type(o) is LazyTensor else o for o in flat]
        if not isinstance(out, (list, tuple)):
            return res[0]
        return type(out)(*res) if hasattr(out, "_fields") else type(out)(res)  # (a named tuple: topk, sort)

    def trace(self, *args) -> tuple:
        """The per-step work without running: record, collect the graph, and
        compute its cache key. Returns ``(graph, key)``."""
        _, flat = self._record(args)
        g = self.ctx.trace([o for o in flat if isinstance(o, LazyTensor)])
        return g, passes.key(g, self.ctx.mode)

    def dump(self, *args) -> str:
        """The IR text for ``fn`` on ``args`` (traced, not compiled or run)."""
        _, flat = self._record(args)
        return self.ctx.dump(*[o for o in flat if isinstance(o, LazyTensor)])


def jit(fn=None, *, mode="unbounded", dims=None, bounds=None, ctx=None):
    """Decorator form of :class:`LazyFunction`."""
    if fn is None:
        return lambda f: LazyFunction(f, mode, dims, bounds, ctx)
    return LazyFunction(fn, mode, dims, bounds, ctx)
