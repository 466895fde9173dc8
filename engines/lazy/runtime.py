"""The lazy context: leaves, guards, the compile cache and ``sync`` (``jit``: :mod:`.jit`).

Modes (the cache key):
  ``unbounded``  dynamic dims are size variables; one compile for all shapes.
  ``bounded``    as unbounded, each variable carries a maximum (in the key);
                 a size past it raises :class:`BoundError`.
  ``static``     every size is a constant, and the key holds the concrete
                 shapes -- torch_xla's LazyTensor: one compile per shape.
"""

from __future__ import annotations

import collections
import functools
import sys
import time
import weakref

import torch

from engines.sizes import Expr
from engines.sizes.modes import MODES, BoundError

from . import passes
from .guard import Guard
from .hooks import paused
from .ir import NO_KWARGS, IRError, Node
from .leafcall import leaf_call
from .misses import explain_miss
from .replay import LeafCall
from .reuse import spare_check
from .served import served_fn
from .steplog import StepLog, Unlogged
from .symbolic import (
    PROBES,
    ShapeGuess,
    SizeVars,
    compare,
    const,
    hint,
    shapes_fn,
)
from .tensor import LazyTensor

_TENSOR = torch.Tensor
_refcount, _weakrefs = sys.getrefcount, weakref.getweakrefcount


@functools.lru_cache(maxsize=1024)
def _static_leaf(shape: torch.Size) -> tuple:
    """A leaf without variables: (its sizes as constants, the step log's dims)."""
    return tuple([const(s) for s in shape]), tuple(shape)


def axes_key(dims):
    """:meth:`LazyContext.input`'s ``dims`` as the hashable form a leaf plan is keyed by:
    True (every axis), False (none) or ``((axis, name), ...)``."""
    if type(dims) is dict and dims:  # (a jit step's, every input)
        return tuple(dims.items())
    if dims is True or not dims:
        return bool(dims)
    if isinstance(dims, dict):
        return tuple(dims.items())
    return tuple([(d, None) for d in dims])


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
        self.recovers = False  # a step that can be traced again on a ShapeGuess (LazyFunction): see ops.meta
        self.wrote = False  # the step wrote into a concrete tensor (ops.inplace): it cannot be traced again
        self.on_compile = on_compile
        self.compiler = compiler or passes.compile_graph
        self.cache: dict = {}
        self._stats: collections.Counter = collections.Counter()
        self._served = 0  # syncs served by their step-log key, not yet in _stats (see stats)
        self.compile_time_s = 0.0
        self.guards: list = []
        self._guard_keys: set = set()
        self.decided = 0  # guards decided on the sizes, ever (recorded or not: see replay)
        self.vars = SizeVars()  # the step's size variables, by algebra name
        self._named: dict = {}  # user dim name -> Var
        self.last: passes.Compiled | None = None
        self.log: StepLog | None = None  # the step log while a step records (see .steplog)
        self.fast: dict = {}  # step-log key -> (Compiled, input positions): the cached steps
        self.last_key = None  # the step-log key of the step's last sync (None: none, or unlogged)
        self.tape: StepLog | None = None  # the log of the last step that synced: the next step follows it (.replay)
        self._made: list = []  # the lazy tensors made while the step log records
        self._pool: list = []  # lazy tensors of finished steps no one holds (see release)
        self._spare: list | None = None  # the last step's tensors, for the next step to take (.reuse)
        self.reuse: list | None = None  # this step's: the last step's tensors, taken by position
        self.reused = -1  # the positions taken from ``reuse`` so far (-1: none may be)
        self.rechecks = False  # whether the step replayed a meta rule's prediction (see LazyFunction)
        self.guessed: tuple | None = None  # the last optimistic meta call's check node and guards (.ops.meta)

    @property
    def stats(self) -> collections.Counter:
        """Counts per stage: ``trace`` (syncs), ``hit`` (served by a compile of the cache),
        ``compile`` and the compiler's stages. A sync served by its step-log key is counted in
        an int and added here (not two Counter increments on every cached step's path)."""
        n = self._served
        if n:
            self._served = 0
            self._stats["trace"] += n
            self._stats["hit"] += n
        return self._stats

    # -- leaves ------------------------------------------------------------
    def new_step(self) -> None:
        """Forget the size variables and guards of the previous step."""
        if self.log is not None:  # the last step was not released (a trace, an error): followed as far as it went
            self._keep(self.log)
        if self._named:
            self._named.clear()
        self.wrote = self.rechecks = False
        self.guessed = None
        sv = self.vars  # (SizeVars.clear, inline: every step)
        sv.vars.clear()
        sv.hints.clear()
        sv.step += 1
        self.guards = []  # (a new list: the last step's is handed out)
        if self._guard_keys:
            self._guard_keys.clear()
        if PROBES:
            PROBES.clear()  # (the frames of the last step's calls)
        self.log, self.last_key = StepLog(self.tape), None
        self._made = []  # (a step never released: its tensors are not reused)
        self.reuse, self._spare = self._spare, None  # (taken once: a step that raises leaves none)
        self.reused = -1 if self.reuse is None else 0

    def _keep(self, log: StepLog) -> None:
        """``log``, recorded, is the one the next step follows (:mod:`.replay`), with the step's
        guards (those after its last sync too), and follows no log itself (no chain of them)."""
        log.guards, log.nguards = self.guards, len(self.guards)
        log.follows = None
        if log.shared:
            log.unshare(kept=True)
        self.tape = log

    def release(self) -> None:
        """End of a step: its size variables stop holding their leaves, so
        refcounting frees the step at once (they can no longer be read by a later
        graph), and the step's lazy tensors no one else holds (or watches: a weak
        reference) are kept for the next step's :meth:`tensor`, without their nodes; or, when no
        one holds any tensor or node of the step, for the next step to take by position (.reuse)."""
        for v in self.vars.vars.values():  # every variable of a jit step is read from one of its leaves
            v.src = None
        made, self._made = self._made, []
        if self.reuse is not None:  # (the list of the tensors it took: no holder now)
            if self.reused < len(self.reuse):
                self._restock()
            self.reuse = None
        log = self.log
        if log is not None:  # (the step's log: it goes on after a sync, to the end of the step): _keep, inline
            self.log = None
            log.guards = g = self.guards
            log.nguards = len(g)
            last, log.follows = log.follows, None
            if log.shared:  # (StepLog.unshare, inline: lists it ended with are its own as they are)
                if len(log.entries) != len(log.nodes):
                    log.unshare()
                log.shared = False
            self.tape = log
            nodes, log.nodes = log.nodes, ()  # (the next step follows its calls and entries: its tensors may go)
            if nodes and len(made) == len(nodes):
                # a step that followed the last one to the end (the same entries, so the same operands by
                # position, synced where it synced) has its references (.reuse)
                refs = None if last is None else last.refs
                if refs is None or refs[0] != len(nodes):
                    refs = spare_check(nodes)
                log.refs = refs
                if refs[1](nodes, made):
                    self._spare = made
                    return
            del nodes
        elif self.tape is not None:
            self.tape.nodes = ()
        pool = self._pool
        for t in made:
            if _refcount(t) == 3 and not _weakrefs(t):  # (the list, the loop, the call): unreachable
                t.node = None
                d = t.__dict__
                if d:
                    d.clear()
                pool.append(t)
        self._made = []

    def input(self, t: torch.Tensor, dims=True, bounds=None) -> LazyTensor:
        """A lazy leaf over ``t``.

        ``dims``: which axes are symbolic -- ``True`` (all), ``False``/``None``
        (none), a sequence of axes, or ``{axis: name}``; axes with the same
        name share one variable. ``bounds``: ``{axis: max}`` (bounded mode).
        Static mode makes every axis constant.
        """
        if type(t) is not _TENSOR and not isinstance(t, _TENSOR):  # (torch's isinstance check is slow)
            t = torch.as_tensor(t)
        return self.leaf(t, axes_key(dims), bounds)

    def leaf(self, t: torch.Tensor, axes, bounds=None) -> LazyTensor:
        """:meth:`input` with ``dims`` as :func:`axes_key` gives them: the one constructor
        of a leaf over a user input (a jit step calls it directly). Its shape, log entry and
        variables come from a :class:`~.replay.LeafCall`: the last step's at this position
        when the step follows it and the leaf matches, else made here (:func:`.leafcall.leaf_call`)."""
        log = self.log
        dtype = t.dtype
        if axes is False or self.mode == "static":  # every axis constant: shape and key entry shared per shape
            shape, sig = _static_leaf(t.shape)
            node = Node("input", (), None, shape, dtype, t)
            if log is not None:
                log.input(node, sig)
            return self.tensor(node)
        shape_ = t.shape
        if bounds is not None and self.mode != "bounded":
            bounds = None
        call, k = None, -2
        if log is not None and log.follows is not None:
            k = len(log.nodes)
            calls = log.follows.calls
            if k < len(calls):
                c = calls[k]
                if (  # the same leaf as the last step's here (inline: every input of every step)
                    type(c) is LeafCall
                    and dtype is c.dtype
                    and len(shape_) == c.ndim
                    and bounds == c.bounds
                    and (axes is c.axes or axes == c.axes)
                    and (c.const_of is None or c.const_of(shape_) == c.const_sizes)
                ):
                    call = c
        if call is None:
            node = Node("input", (), None, (), dtype, t)
            call = leaf_call(log, self._named, node, dtype, shape_, axes, bounds)
            node.shape = call.shape
            followed, out = False, None
        elif self.reused == k:  # the last step's node here, taken again (.reuse)
            out = self.reuse[k]  # type: ignore[index]
            node = out.node
            node.data = t
            self.reused = k + 1
            log.nodes.append(node)  # (its entry and call: the last step's, shared)
            followed = True
        else:
            node = log.follow(call, "input", (), NO_KWARGS, t)
            followed = True
            out = None
        named, vars_, hints = self._named, self.vars.vars, self.vars.hints
        lcanon = log.canon if log is not None else None
        for axis, v, name, bound, new in call.vars:
            size = shape_[axis]
            if bound is not None and size > bound:
                raise BoundError(f"dim {name or axis} of input is {size}, past the bound {bound} this graph is compiled for")
            sym = v.sym
            if new:  # (the call's own variable, this step's now: a variable lives for one step)
                v.hint, v.src = size, (node, axis)
                vars_[sym] = v
                hints[sym] = size
                if name is not None:
                    named[name] = v
                if lcanon is not None:
                    lcanon[sym] = sym
            elif hints[sym] != size:
                raise ValueError(f"dim {name} is {hints[sym]} in one input and {size} in another")
        if not followed and log is not None:  # (a followed leaf is logged: StepLog.follow)
            log.add(node, call.entry, call)
        elif out is not None:
            self._made.append(out)
            return out
        return self.tensor(node)

    def tensor(self, node: Node) -> LazyTensor:
        """The lazy tensor of ``node``: one of the last step's no one holds any more (see
        :meth:`release`), or a new one. Making a ``torch.Tensor`` subclass costs ~1 us, a
        cached step makes one per leaf and op: most of what the subclass added to a step."""
        pool = self._pool
        if not pool and self.reuse is not None:
            self._restock()
        if pool:
            t = pool.pop()
            t.node = node
        else:
            t = LazyTensor(node, self)
        if self.log is not None:
            self._made.append(t)
        return t

    def _restock(self) -> None:
        """The last step's tensors this step did not take (it left that step at position
        ``reused``): to the pool, without their nodes (no one holds them: see :meth:`release`)."""
        spare, self.reuse = self.reuse, None
        pool = self._pool
        for t in spare[self.reused :]:  # type: ignore[index]  # (reused: past the positions it will reach now)
            t.node = None
            pool.append(t)

    def constant(self, t: torch.Tensor, shape=None, entry=None) -> Node:
        """A leaf for a concrete tensor met during tracing (all axes constant); ``shape`` and
        its log ``entry``: a replayed call's (:class:`~.replay.OpCall`), made of this tensor."""
        node = Node("input", shape=shape or tuple([const(s) for s in t.shape]), dtype=t.dtype, data=t)
        log = self.log
        if log is not None:
            if entry is None:
                log.constant(node)
            else:
                log.add(node, entry)
        return node

    # -- guards ------------------------------------------------------------
    def guard(self, lhs: Expr, op: str, rhs: Expr, reason: str) -> bool:
        """Decide ``lhs op rhs`` on the current sizes; record it unless constant."""
        if lhs is rhs or lhs == rhs:  # (normal forms: equal sizes for every input) decided, no guard
            return op in ("==", "<=", ">=")
        result = compare(lhs, op, rhs, self.vars.hints)
        if lhs.is_const and rhs.is_const:
            return result
        self.decided += 1
        k = (lhs, op, rhs)
        if k not in self._guard_keys:
            self._guard_keys.add(k)
            names = lhs.vars | rhs.vars
            g = Guard(lhs, op, rhs, result, reason, names, self.vars.display(names))
            log = self.log
            if log is not None and log.follows is not None:
                log.follow_guard(len(self.guards), g)
            self.guards.append(g)
        return result

    def retract(self, g: Guard) -> None:
        """Forget ``g``, the newest guard (recorded for a size that was not read after all:
        ``symbolic.retract_probes``). ``decided`` keeps its count: the step stays unreplayable."""
        assert self.guards and self.guards[-1] is g
        self.guards.pop()
        self._guard_keys.discard((g.lhs, g.op, g.rhs))

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
            if n.op == "input":
                return
            roots = [n]
        else:
            roots = self._roots([t for t in (tensors or ()) if type(t) is LazyTensor or isinstance(t, LazyTensor)])
            if not roots:
                return
        log, lk = self.log, None
        if log is not None:  # the step log names the graph (and goes on after the sync)
            try:
                lk = log.key(roots, self.guards)
            except Unlogged:  # (a root it cannot name: the log ends here, the rest of the step unlogged)
                self.log = log = None
            self.last_key = lk
            if lk is not None:
                hit = log.hit  # (a step that followed the last one to here: the last one's)
                if hit is None:
                    hit = self.fast.get(lk)
                    if hit is not None:
                        log.found(hit)
                if hit is not None:
                    entry = self.last = hit[0]
                    self._served += 1  # (a trace and a hit: see stats)
                    try:
                        if self.check:  # (the kernel run and its outputs checked in one generated call)
                            outs = hit[3](entry.run, log.nodes, self.vars.hints, roots)
                            if outs is not None:  # (a fault, or a size it could not evaluate: the per-dim check)
                                self._run(entry, (), roots, outs=outs)
                        else:
                            self._run(entry, [log.nodes[p].data for p in hit[1]], roots)
                    except BaseException as e:
                        self._failed(lk, e)
                        raise
                    return
        try:
            g = self.trace(tensors, roots)
            self.stats["trace"] += 1
            entry = self.last = self._compiled(g)
            if lk is not None:
                try:
                    # the step's variables are named canonically (p<leaf>_<axis>), so every step with this
                    # key predicts its outputs' shapes by the same size expressions: compiled once
                    positions, shapes = tuple([log.pos(n) for n in g.inputs]), tuple([n.shape for n in g.outputs])
                    hit = (entry, positions, shapes_fn(shapes), served_fn(positions, shapes))
                    self.fast[lk] = hit
                    log.found(hit)
                except Unlogged:
                    pass
            self._run(entry, [n.data for n in g.inputs], g.outputs)
        except BaseException as e:
            if log is not None:
                self._failed(lk, e)
            raise

    def _failed(self, lk, e: BaseException) -> None:
        """A logged sync's run raised ``e``: the step log ends there (the step is refused, or traced
        again), and on a :class:`ShapeGuess` the key's compile is not reused (nor followed to)."""
        self.log = None
        if isinstance(e, ShapeGuess):  # (an optimistic trace's check failed)
            self.fast.pop(lk, None)
            self.tape = None

    def _compiled(self, g: passes.Graph) -> passes.Compiled:
        """The compile of the traced graph ``g``, from the cache keyed by its structure
        (:func:`passes.key`), compiled on a miss."""
        k = passes.key(g, self.mode)
        entry = self.cache.get(k)
        if entry is not None:
            self.stats["hit"] += 1
            return entry
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
        return entry

    def _run(self, entry, inputs, outputs, outs=None) -> None:
        """Run a compiled graph; each output node becomes a leaf holding its value.
        ``outs``: the outputs of a run already made (a cached step's that its
        :func:`.served.served_fn` did not pass: each dim checked here names the fault)."""
        if outs is None:
            outs = entry.run(*inputs)
        hints, check = self.vars.hints, self.check
        for i in range(len(outputs)):  # (one output per node by construction; an index, not enumerate(zip()))
            node, out = outputs[i], outs[i]
            if check and (out.dtype != node.dtype or out.shape != tuple([hint(e, hints) for e in node.shape])):
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
