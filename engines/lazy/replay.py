"""Replay: a jit step that repeats the last one reuses what the last one worked out.

Most steps record what the step before them recorded: the same ops, on operands at the
same step-log positions, with the same plain arguments; only the sizes differ, and they
are named canonically (``p<position>_<axis>``), so every shape, dtype and log entry is the
last step's too. The step log keeps, per node, the call that made it (:class:`OpCall` for
an op, :class:`LeafCall` for a leaf), and the next step's log *follows* it
(``StepLog.follows``): a call that matches the one at its position takes that call's node
(shape, dtype, arguments) and log entry instead of running its shape rule and signing its
operands again. A leaf that matches takes its shape, entry and variables; its sizes are
still checked against its bounds and named dims.

Following is sound while this step, so far, equals the last one: a node made by its rule
must log the entry the last step logged at its position, and a new guard must be the last
step's guard at its index (same sides, same result), or the step stops following (see
``StepLog.add`` and ``LazyContext.guard``); a step under another torch default dtype (which
rules read) follows nothing. So an operand at a matched position has the
shape the last step's had, and a rule -- a function of its operands' shapes and its
arguments -- gives the node it gave then. Only calls whose rule decided nothing on the sizes
(no guard asked, not even one already recorded) are kept: a rule that asks one chooses which
by the sizes (``bcast_dim`` asks ``a == b`` or ``b == 1`` by the sizes it meets), so it runs
every step, and a step records exactly the guards, entries and key a fresh trace would. A
step that followed to a sync, syncing what the last step synced there, has the last step's
key for it (``StepLog.key``: not built again). The log goes on past a sync (a data-dependent
count, a value read): a sync turns its roots into leaves, so a step that syncs otherwise
than the last one did at that point follows it no further. What a replay skips is a rule's
size checks that decide nothing (``view`` of a size that does not divide): the kernel
refuses such a step instead.

What a call may not do to be kept (:func:`.ops.registry.capture` checks it): make any node
but the one it returns, after a constant leaf for each of its concrete tensor arguments its
rule lifts (a data-dependent size is a leaf of its own, made after a sync) and before the
``check_shape`` node of the generic rule's optimistic prediction (:mod:`.ops.meta`: the replay
records the check again, and a check that fails traces the step afresh), sync, change an
operand (an in-place op names a new node), decide a guard, or take an argument other than
a lazy tensor of this step, a concrete tensor (:class:`Held`: the same tensor, unchanged,
next step: a module's parameters and buffers), a plain scalar (not a float zero, whose sign
``==`` ignores, nor nan), a dtype, a string, a symbolic size, or a tuple or list of ints and
symbolic sizes.
"""

from __future__ import annotations

import functools
import operator

import torch

from engines.sizes import Expr

from .ir import Node, walk
from .symbolic import SymSize, compare
from .tensor import LazyTensor

# arguments matched by type and value (a float: not 0.0, whose sign ``==`` ignores, nor nan)
_PLAIN = frozenset({int, bool, str, type(None), torch.dtype, float})
_TENSOR, _PARAMETER = torch.Tensor, torch.nn.Parameter


class Ref(int):
    """An operand in a recorded call or node argument: the step-log position of its node."""

    __slots__ = ()


class Sym:
    """A symbolic size argument, matched by its expression (canonical names: the last step's)."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr):
        self.expr = expr


class Seq:
    """A tuple or list argument of ints, symbolic sizes (``view((b, -1))``) and lazy tensors
    (``cat([x, y])``: each a :class:`Ref`), item by item."""

    __slots__ = ("items", "kind")

    def __init__(self, kind: type, items: tuple):
        self.kind, self.items = kind, items


class Bits:
    """A float that ``==`` cannot match: a zero (whose sign it ignores) or nan; by its text."""

    __slots__ = ("text",)

    def __init__(self, x: float):
        self.text = repr(x)


class Refs:
    """A node argument that is a list or tuple of operands (``cat``'s): a :class:`Ref` per node."""

    __slots__ = ("items", "kind")

    def __init__(self, kind: type, items: tuple):
        self.kind, self.items = kind, items


class Held:
    """A concrete tensor argument (a parameter, a buffer), matched by identity and version: the
    same tensor with the same values (``_version`` counts its in-place changes), so a rule that
    read its values would read the same ones. The call's rule made it a constant leaf; a replay
    makes that leaf again."""

    __slots__ = ("shape", "t", "version")

    def __init__(self, t: torch.Tensor):
        self.t, self.version, self.shape = t, t._version, t.shape


def spec(a, nodes: list):
    """``a`` as a call argument is matched by (``NotImplemented``: it cannot be)."""
    t = type(a)
    if t is LazyTensor:
        return template(a.node, nodes, len(nodes))
    if t in _PLAIN:
        return a if t is not float or (a == a and a != 0.0) else Bits(a)
    if t is SymSize:
        return Sym(a.expr)
    if t is _TENSOR or t is _PARAMETER:
        return Held(a)
    if t is tuple or t is list:
        items = []
        for x in a:
            tx = type(x)
            if tx is int:
                items.append(x)
            elif tx is SymSize:
                items.append(Sym(x.expr))
            elif tx is LazyTensor:
                r = template(x.node, nodes, len(nodes))
                if r is NotImplemented:
                    return r
                items.append(r)
            else:
                return NotImplemented
        return Seq(t, tuple(items))
    return NotImplemented


def _same(a, s, step: int, nodes: list) -> bool:
    """``a`` matches the argument spec ``s`` (what the inline checks of :meth:`OpCall.match` leave)."""
    ts = type(s)
    if ts is Ref:  # (an operand in a list)
        return type(a) is LazyTensor and a.node.pos == s and nodes[s] is a.node
    if ts is Bits:
        return type(a) is float and repr(a) == s.text
    if ts is Held:
        return a is s.t and a._version == s.version and a.shape == s.shape
    if ts is Sym:
        return type(a) is SymSize and a.step == step and (a.expr is s.expr or a.expr == s.expr)
    if ts is Seq:
        if type(a) is not s.kind or len(a) != len(s.items):
            return False
        for x, y in zip(a, s.items, strict=True):
            if type(y) is int:
                if type(x) is not int or x != y:
                    return False
            elif not _same(x, y, step, nodes):
                return False
        return True
    return False  # (a Ref met by something not a lazy tensor; a plain value of another type or value)


def _changed(s, k: int) -> bool:
    """The spec ``s`` names an operand at position ``k`` or later: one the call changed (in place)."""
    if type(s) is Ref:
        return s >= k
    return type(s) is Seq and any(type(x) is Ref and x >= k for x in s.items)


def template(obj, nodes: list, k: int):
    """A node's argument with an operand node as its :class:`Ref` (``NotImplemented`` for an
    operand nested in it, or one not logged before position ``k``); a dict (the node's
    keyword arguments) item by item."""
    if type(obj) is Node:
        p = obj.pos
        return Ref(p) if p is not None and p < k and nodes[p] is obj else NotImplemented
    if (type(obj) is list or type(obj) is tuple) and obj and type(obj[0]) is Node:
        refs = tuple([template(x, nodes, k) for x in obj])
        return NotImplemented if NotImplemented in refs else Refs(type(obj), refs)
    if type(obj) is dict:
        out = {}
        for name, v in obj.items():
            out[name] = template(v, nodes, k)
            if out[name] is NotImplemented:
                return NotImplemented
        return out
    for x in walk(obj):
        if type(x) is Node:
            return NotImplemented
    return obj


# what a replayer does once its call matched: its node, logged (``StepLog.follow``), and its lazy tensor
# (``LazyContext.tensor``, inline); or the last step's node and tensor at this position taken again (.reuse)
_REPLAYED = """
    k = len(nodes)
    if ctx.reused == k:
        out = ctx.reuse[k]
        node = out.node
        node.op = c.op
        node.args = ARGS
        node.kwargs = c.kwargs
        node.data = None
        ctx.reused = k + 1
        nodes.append(node)
    else:
        node = log.follow(c, c.op, ARGS, c.kwargs, None)
        pool = ctx._pool
        if not pool and ctx.reuse is not None:
            ctx._restock()
        if pool:
            out = pool.pop()
            out.node = node
        else:
            out = LazyTensor(node, ctx)
    ctx._made.append(out)
    return out"""


@functools.lru_cache(maxsize=256)
def direct_replayer(operands: tuple):
    """``replay(ctx, log, args, kwargs, c)`` for a call ``c`` whose node arguments are its own
    (``operands``: per argument, whether it is a lazy tensor), at the position the step's log
    ``log`` has reached: the call's lazy tensor, or None when ``args`` are not ``c.spec``'s.
    Generated per kind of call, one test per argument and no loop (~110 ns for two arguments
    against ~370 ns for :meth:`OpCall.match`'s loop), then the node and its tensor made in the
    same frame (the ops of a cached step: a call's frames are a good part of its cost)."""
    n = len(operands)
    names = ", ".join(f"a{i}" for i in range(n)) + ("," if n == 1 else "")
    lines = [
        "def replay(ctx, log, args, kwargs, c):",
        f"    if kwargs or len(args) != {n}:",
        "        return None",
        "    nodes = log.nodes",
    ]
    if n:
        lines += [f"    {names} = args", f"    {names.replace('a', 's')} = c.dspec"]
    for i, operand in enumerate(operands):
        if operand:
            lines += [
                f"    if type(a{i}) is not LazyTensor:",
                "        return None",
                f"    a{i} = a{i}.node",
                f"    if a{i}.pos != s{i} or nodes[s{i}] is not a{i}:",
                "        return None",
            ]
        else:
            lines += [f"    if type(a{i}) is not type(s{i}) or (a{i} is not s{i} and a{i} != s{i}):", "        return None"]
    lines.append(_REPLAYED.replace("ARGS", f"({names})" if n else "()"))
    scope = {"LazyTensor": LazyTensor}
    exec("\n".join(lines), scope)  # (our own text: the test per argument above)
    return scope["replay"]


class OpCall:
    """One op call of a step, as the next step replays it: the implementation called
    (``impl``), its arguments as specs (``spec``: per positional argument; ``kwspec``:
    ``((name, spec), ...)`` or None), and what it recorded: the constant leaves its rule made
    of its :class:`Held` arguments (``consts``: ``(tensor, shape, entry)`` each, logged from
    the call's position on), then the node's ``op``, its ``args`` and ``kwargs`` (operands as
    :class:`Ref`; ``kwrefs``: whether the kwargs hold one), ``shape``, ``dtype`` and log
    ``entry``. ``direct``: :func:`direct_replayer`'s replayer when the node's arguments are the call's.
    ``check``: the ``check_shape`` node's arguments after its operand (``(shape, dtype, key)``)
    when the call's rule traced it optimistically (``ops.meta``: its node is followed by that
    check, which the replay records again: the prediction is checked every step), else None;
    ``conds``: the guards that trace dropped (``guess.decides``), which must decide alike
    (:meth:`holds`) for the prediction to be the one a trace would make."""

    __slots__ = (
        "args",
        "check",
        "conds",
        "consts",
        "direct",
        "dspec",
        "dtype",
        "entry",
        "impl",
        "kwargs",
        "kwrefs",
        "kwspec",
        "op",
        "shape",
        "spec",
    )

    def __init__(self, impl, spec: tuple, kwspec, node: Node, entry, args: tuple, kwargs=None, consts: tuple = ()):
        self.impl, self.spec, self.kwspec, self.args, self.consts = impl, spec, kwspec, args, consts
        self.check, self.conds = None, ()
        self.kwrefs = kwargs is not None and any(type(v) is Ref for v in kwargs.values())
        self.kwargs = kwargs if self.kwrefs else node.kwargs
        self.op, self.shape, self.dtype, self.entry = node.op, node.shape, node.dtype, entry
        plain = all(type(s) is Ref or type(s) in _PLAIN for s in spec)
        same = args == spec and all(type(a) is type(s) for a, s in zip(args, spec, strict=True))
        self.direct = (
            direct_replayer(tuple([type(s) is Ref for s in spec])) if kwspec is None and plain and same and not consts else None
        )
        # the spec as the direct replayer tests it: each Ref a plain int (an int subclass takes the
        # interpreter's slow path in ``!=`` and as a list index: ~20 ns an operand)
        self.dspec = tuple([int(s) if type(s) is Ref else s for s in spec])

    @staticmethod
    def of(impl, args, kwargs, node: Node, entry, nodes: list, k: int, entries=()) -> OpCall | None:
        """The call ``impl(*args, **kwargs)`` that made ``node``, from position ``k`` on (the
        constant leaves its rule made of its concrete tensor arguments first: their log
        ``entries``), or None when its arguments or the node's cannot be matched next step."""
        sp = []
        held = []
        for a in args:
            s = spec(a, nodes)
            if s is NotImplemented or _changed(s, k):
                return None
            if type(s) is Held:
                held.append(s.t)
            sp.append(s)
        kw = None
        if kwargs:
            kw = []
            for name, v in kwargs.items():
                s = spec(v, nodes)
                if s is NotImplemented or _changed(s, k):
                    return None
                if type(s) is Held:
                    held.append(s.t)
                kw.append((name, s))
            kw = tuple(kw)
        consts = []
        for p in range(k, node.pos):  # (each made of an argument, so the same tensor when the call matches)
            c = nodes[p]
            if not any(c.data is t for t in held):
                return None
            consts.append((c.data, c.shape, entries[p - k]))
        nargs = tuple([template(a, nodes, node.pos) for a in node.args])
        nkwargs = template(node.kwargs, nodes, node.pos)
        if NotImplemented in nargs or nkwargs is NotImplemented:
            return None
        return OpCall(impl, tuple(sp), kw, node, entry, nargs, nkwargs, tuple(consts))

    def holds(self, hints) -> bool:
        """Whether the guards the call's optimistic trace dropped decide at ``hints`` as they did."""
        return all(compare(lhs, op, rhs, hints) == result for lhs, op, rhs, result in self.conds)

    def match(self, ctx, nodes: list, args, kwargs):
        """The node arguments and kwargs this call records on ``args`` (operands: this step's
        nodes), or None when ``args``/``kwargs`` are not the last step's. A call that matches
        makes the constant leaves its rule made (``consts``), as its rule would have."""
        sp = self.spec
        if len(args) != len(sp):
            return None
        step = ctx.vars.step
        for a, s in zip(args, sp):  # noqa: B905 (one length)
            t = type(a)
            if t is LazyTensor:
                n = a.node
                if type(s) is not Ref or n.pos != s or nodes[s] is not n:
                    return None
            elif not ((t is type(s) and (a is s or a == s)) or _same(a, s, step, nodes)):
                return None
        kw = self.kwspec
        if kw is None:
            if kwargs:
                return None
        elif not kwargs or len(kwargs) != len(kw):
            return None
        else:
            for name, s in kw:
                if name not in kwargs:
                    return None
                a = kwargs[name]
                t = type(a)
                if not ((t is type(s) and (a is s or a == s)) or _same(a, s, step, nodes)):
                    return None
        for t, shape, entry in self.consts:
            ctx.constant(t, shape, entry)
        out = []
        for a in self.args:
            ta = type(a)
            out.append(
                nodes[a] if ta is Ref else a if ta is not Refs else a.kind([nodes[r] if type(r) is Ref else r for r in a.items])
            )
        if self.kwrefs:
            return tuple(out), {name: nodes[v] if type(v) is Ref else v for name, v in self.kwargs.items()}
        return tuple(out), self.kwargs


class LeafCall:
    """One leaf of a step: what it was made over (``dtype``, ``ndim``, the symbolic ``axes``
    key, the ``bounds`` in bounded mode, its constant axes' sizes ``consts``), and what
    it made: the node ``shape``, the log ``entry``, and per symbolic axis ``(axis, variable,
    user name or None, bound or None, new)`` in ``vars`` (``new``: the leaf makes the
    variable, a :class:`~.symbolic.Var` each step takes over; else a variable of an earlier
    leaf of the same user name, whose size this axis must equal)."""

    __slots__ = (
        "axes",
        "batch",
        "bounds",
        "const_of",
        "const_sizes",
        "consts",
        "dtype",
        "entry",
        "ndim",
        "seen",
        "shape",
        "vars",
    )

    def __init__(self, dtype, ndim: int, axes, bounds, consts: tuple, vars_: tuple, shape: tuple, entry):
        self.dtype, self.ndim, self.axes, self.bounds = dtype, ndim, axes, bounds
        self.consts, self.vars, self.shape, self.entry = consts, vars_, shape, entry
        # the constant axes' sizes of a shape in one C call (``const_of(shape) == const_sizes``), or None:
        # none (``LazyContext.leaf`` tests a leaf against the last step's with them)
        self.const_of = operator.itemgetter(*[a for a, _ in consts]) if consts else None
        self.const_sizes = consts[0][1] if len(consts) == 1 else tuple([n for _, n in consts])
        self.batch = None  # leafcall.take_leaves's call for the step's leaves from this one on, once made
        self.seen: tuple | None = None  # the calls take_leaves last met from this one on (it makes one the second time)
