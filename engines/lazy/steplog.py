"""The step log: a cached step's key, built while the program records.

A jit step (one :class:`~.jit.LazyFunction` call) logs every leaf and op
as it is made -- ``("in", dtype, dims)``, ``("const", dtype, shape)``,
``(op, args, kwargs, dtype)`` -- with operands by log position and sizes over
canonical names (``p<leaf position>_<axis>``). The log, the positions synced
and the step's guards determine the traced graph and its cache key
(:func:`.passes.key`), so a step whose log was seen before reuses that
compile without walking the graph (:func:`.passes.trace`) or building its
key: the fast path of a cached step. A node or size the log cannot name (one
from another step) raises :class:`Unlogged`, and that step's sync takes the
full path. The log goes on past a sync to the end of the step: a later sync's
key holds the positions every earlier sync made leaves. The log also keeps the
call that made each node, and the next step follows it while it records the same
(see :mod:`.replay`): then it has this step's keys without building them.
"""

from __future__ import annotations

import torch

from engines.sizes import Expr

from .ir import Node, _atom_structure, _next_uid
from .memo import Memo

_PLAIN = frozenset({int, bool, str, type(None)})
_new = object.__new__
_EXPR_SIGS = Memo()  # a one-variable Expr -> (its variable's canonical name, the name, its signature, ("e", it))
_DTYPE = torch.dtype
_default_dtype = torch.get_default_dtype


# shared signature parts (one object each, so comparing a step's key with the last one's meets
# the same objects: see ``LazyContext.sync``)
NREFS, NINTS = 256, 64
REFS = [("%", p) for p in range(NREFS)]  # ("%", position) for the first NREFS positions
INTS = {i: (int, i) for i in range(-NINTS, NINTS)}  # (int, i) for small ints


class Unlogged(Exception):
    """An operand the step log cannot name (from another step or context)."""


class StepLog:
    """The log of one step: ``entries`` (hashable), ``nodes`` (by position), ``calls`` (by
    position: the :mod:`.replay` call that made the node, or None), ``canon`` (size
    variable -> canonical name), and ``follows``: the last step's log while this step
    equals it so far (None once it differs, or from the start under another default dtype;
    see :mod:`.replay`). Each sync of the step appends to ``syncs`` its record ``[entries
    logged, positions synced, guards, key, hit]`` and fills ``keyed`` (its key), ``hit`` (the
    cached compile the key found), ``roots`` (the positions synced) and ``guards`` (the step's,
    ``nguards`` of them at the sync): what the next step follows. The log goes on after a sync
    (a data-dependent size, a value read mid-step): the rest of the step is logged, keyed and
    followed too."""

    __slots__ = (
        "calls",
        "canon",
        "default_dtype",
        "entries",
        "follows",
        "guards",
        "hit",
        "keyed",
        "nguards",
        "nodes",
        "refs",
        "roots",
        "shared",
        "syncs",
    )

    def __init__(self, follows: StepLog | None = None):
        self.nodes: list = []
        self.canon: dict = {}
        # (rules read torch's default dtype: ``int / int``, ``zeros(n)``; a step under another follows no step)
        self.default_dtype = d = _default_dtype()
        if follows is not None and follows.default_dtype is d:
            # ``entries`` and ``calls``: the last step's lists until this one logs anything of its own
            # (see unshare): a step that takes the last one's nodes (.reuse) only appends to ``nodes``
            self.follows, self.entries, self.calls, self.shared = follows, follows.entries, follows.calls, True
        else:
            self.follows, self.entries, self.calls, self.shared = None, [], [], False
        self.keyed = self.hit = self.roots = None
        self.guards: list | tuple = ()  # (set at a sync and at the end of the step)
        self.nguards = 0
        self.syncs: list = []
        self.refs: tuple | None = None  # a released step's (positions, reuse.spare check): the next step's too

    def add(self, node: Node, entry: tuple, call=None) -> None:
        """Log ``node`` as ``entry`` (its operands signed by the caller, as :meth:`op` does);
        ``call``: the :mod:`.replay` call that made it. A node that is not the last step's
        call at its position, replayed, stops the step following the last one unless its
        entry is the one logged there."""
        if self.shared:
            self.unshare()
        k = len(self.nodes)
        node.pos = k
        self.nodes.append(node)
        self.entries.append(entry)
        self.calls.append(call)
        last = self.follows
        if last is not None and (call is None or k >= len(last.calls) or last.calls[k] is not call):
            if k >= len(last.entries) or last.entries[k] != entry:
                self.follows = None

    def follow(self, call, op: str, args: tuple, kwargs: dict, data) -> Node:
        """Log the node of ``call``, the last step's call at this position, which this step
        follows (:mod:`.replay`: a matched :class:`~.replay.LeafCall` or a replayed op): made
        here from the call's fields (``Node(op, args, kwargs, call.shape, call.dtype, data)``
        without its conversions nor a Python ``__init__`` call, ~40% of a node's cost) and logged
        as :meth:`add` would log it, without its test (the step still follows)."""
        if self.shared:
            self.unshare()
        nodes = self.nodes
        node = _new(Node)
        node.uid = _next_uid()
        node.pos = len(nodes)
        node.op = op
        node.kwargs = kwargs
        node.dtype = call.dtype
        node.data = data
        node.args = args
        node.shape = call.shape
        nodes.append(node)
        self.entries.append(call.entry)
        self.calls.append(call)
        return node

    def unshare(self, kept: bool = False) -> None:
        """``entries`` and ``calls`` of this step's own, up to the position it has reached (a step
        that follows the last one shares that step's lists from the start: only ``nodes`` grows while
        it takes that step's nodes one by one, its length the position reached), before anything else
        is logged, keyed afresh or kept; ``kept``: the step is over and the last one is let go, so
        lists it ended with are its own as they are."""
        n = len(self.nodes)
        if not kept or len(self.entries) != n:
            self.entries, self.calls = self.entries[:n], self.calls[:n]
        self.shared = False

    def follow_guard(self, i: int, g) -> None:
        """The step's ``i``-th guard is ``g``: it stops following unless the last step's was the same."""
        last = self.follows
        if i >= last.nguards:
            self.follows = None
            return
        h = last.guards[i]
        if (
            h.result != g.result
            or h.op != g.op
            or not (h.lhs is g.lhs or h.lhs == g.lhs)
            or not (h.rhs is g.rhs or h.rhs == g.rhs)
        ):
            self.follows = None

    def input(self, node: Node, dims: tuple) -> None:
        """A leaf over a user input; ``dims``: each a size, or its variable's
        canonical name (``p<position>_<axis>``, with the bound in bounded mode),
        entered in ``canon`` by the caller."""
        self.add(node, ("in", node.dtype, dims))

    def constant(self, node: Node) -> None:
        """A leaf for a concrete tensor met while tracing (its values are an input, its shape is keyed)."""
        self.add(node, ("const", node.dtype, tuple(e.terms for e in node.shape)))

    def op(self, node: Node) -> None:
        """Log an op node (made by ``ops.registry.record``, the one way an op node is made), its
        operands signed by position; :class:`Unlogged` for one the log cannot name."""
        nodes = self.nodes
        n = len(nodes)
        args = []
        for a in node.args:  # sig(node.args), the common operands inline
            t = type(a)
            if t is Node:
                p = a.pos
                if p is None or p >= n or nodes[p] is not a:
                    raise Unlogged(a)
                args.append(REFS[p] if p < NREFS else ("%", p))
            elif t is int and -NINTS <= a < NINTS:
                args.append(INTS[a])
            elif t is Expr:  # a size (narrow's start and length, expand's sizes)
                terms = a.terms
                args.append(("e", terms[0][1]) if len(terms) == 1 and not terms[0][0] else self.esig(a))
            else:
                args.append(self.sig(a))
        self.add(node, (node.op, tuple(args), self.sig(node.kwargs) if node.kwargs else None, node.dtype))

    def pos(self, n: Node) -> int:
        p = n.pos
        if p is None or p >= len(self.nodes) or self.nodes[p] is not n:
            raise Unlogged(n)
        return p

    def expr(self, e: Expr):
        t = e.terms
        if not t:
            return 0
        if len(t) == 1 and not t[0][0]:  # a constant: its value
            return t[0][1]
        canon = self.canon
        memo = _EXPR_SIGS.get(e)
        if memo is not None and memo[0] is canon.get(memo[1]):  # this step names it as before
            return memo[2]
        out = []
        try:
            for m, c in t:
                if len(m) == 1 and m[0][0].kind == "var":  # c * v**p, the common term
                    out.append((canon[m[0][0].name], m[0][1], c))
                else:
                    out.append((tuple([(_atom_structure(a, canon), p) for a, p in m]), c))
        except KeyError:
            raise Unlogged(e) from None
        out = tuple(out)
        names = e.vars
        if len(names) == 1:  # memoised when one variable: its canonical name decides the signature
            (n,) = names
            _EXPR_SIGS.put(e, (canon[n], n, out, ("e", out)))
        return out

    def esig(self, e: Expr) -> tuple:
        """``("e", self.expr(e))`` for a non-constant size: one shared tuple per
        one-variable size (a cached step's entries then compare by identity)."""
        memo = _EXPR_SIGS.get(e)
        if memo is not None and memo[0] is self.canon.get(memo[1]):
            return memo[3]
        out = self.expr(e)
        memo = _EXPR_SIGS.get(e)
        return memo[3] if memo is not None and memo[2] is out else ("e", out)

    def sig(self, a):
        """An operand as a hashable value that names nodes by position (as ``passes._sig`` does by index)."""
        t = type(a)
        if t is Node:
            p = self.pos(a)
            return REFS[p] if p < NREFS else ("%", p)
        if t is int and -NINTS <= a < NINTS:
            return INTS[a]
        if t in _PLAIN:
            return (t, a)
        if t is tuple or t is list:
            nodes, n = self.nodes, len(self.nodes)
            out = [t]
            for x in a:  # (the tensors of cat/stack, the sizes of view/expand: inline)
                tx = type(x)
                if tx is Node and x.pos is not None and x.pos < n and nodes[x.pos] is x:
                    out.append(REFS[x.pos] if x.pos < NREFS else ("%", x.pos))
                elif tx is int and -NINTS <= x < NINTS:
                    out.append(INTS[x])
                else:
                    out.append(self.sig(x))
            return tuple(out)
        if t is float or t is _DTYPE:
            return (t, repr(a))  # nan and -0.0 keyed apart
        if t is Expr:
            terms = a.terms
            if len(terms) == 1 and not terms[0][0]:  # a constant (most sizes an op is given)
                return ("e", terms[0][1])
            return ("e", self.expr(a))
        if t is dict:
            return ("d",) + tuple([(k, self.sig(v)) for k, v in sorted(a.items())]) if a else ("d",)
        if t is slice:
            return ("sl", self.sig(a.start), self.sig(a.stop), self.sig(a.step))
        if isinstance(a, (Node, Expr, list, tuple, dict, slice)):
            raise Unlogged(a)  # a subclass: not worth a fast path
        return (t, a)

    def key(self, roots, guards) -> tuple:
        """The key of the step's sync of ``roots``: the log so far, the positions synced by
        this sync and the earlier ones (their nodes are leaves now), and every guard of the
        step so far (the one key of a logged step: ``LazyContext.sync`` looks its compile up
        by it). A step that followed the last one to here, syncing as it did, has its key:
        taken, not built (and ``hit``, what it found); one that syncs otherwise than the last
        step did here follows it no further (its nodes are leaves where the last step's were not)."""
        nodes = self.nodes
        n = len(nodes)
        if len(roots) == 1:  # (self.pos, inline: most syncs have one root)
            r = roots[0]
            p = r.pos
            if p is None or p >= n or nodes[p] is not r:
                raise Unlogged(r)
            outs = (p,)
        else:
            outs = tuple([self.pos(r) for r in roots])
        syncs, ng = self.syncs, len(guards)
        self.roots, self.guards, self.nguards = outs, guards, ng
        last = self.follows
        if last is not None:
            j = len(syncs)
            if j < len(last.syncs):
                rec = last.syncs[j]
                if rec[0] == n and rec[1] == outs and rec[2] == ng:
                    syncs.append(rec)  # (shared: its hit is only ever set to the compile its key found)
                    self.keyed, self.hit = rec[3], rec[4]
                    return self.keyed
            self.follows = None
        if self.shared:
            self.unshare()
        if syncs:  # (a later sync of the step: the earlier ones' roots are leaves of its graph)
            outs = tuple([r[1] for r in syncs]) + (outs,)
        if not guards:
            k = (tuple(self.entries), outs, ())
        else:
            k = (tuple(self.entries), outs, tuple([(self.expr(g.lhs), g.op, self.expr(g.rhs), g.result) for g in guards]))
        syncs.append([n, self.roots, ng, k, None])
        self.keyed, self.hit = k, None
        return k

    def found(self, hit) -> None:
        """The compile the last sync's key found (or made): the next step following this one takes it."""
        self.hit = hit
        self.syncs[-1][4] = hit
