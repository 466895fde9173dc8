"""The op registry: one registration per op, and the recording helpers.

    @lazy_op("unsqueeze", lowers=torch.Tensor.unsqueeze)
    def unsqueeze(x, dim): ...

``lazy_op(*names)`` maps torch functions and Tensor methods named ``names``
(and ``torch.nn.functional`` functions ``fnames``) to one implementation; the
implementation records IR nodes whose runtime callables it registers with
``lowers``. The tables are the coverage list (:func:`covered_ops`):

``OPS``     torch function / method name -> implementation (``__torch_function__``)
``F_OPS``   ``torch.nn.functional`` name -> implementation
``METHODS`` Tensor method name -> implementation (``tensor.install_methods``)
``LOWER``   IR op name -> runtime callable (what ``lower_fx`` calls)
"""

from __future__ import annotations

import functools
import numbers

import torch

from engines.sizes import Expr

from ..ir import NO_KWARGS, Node
from ..replay import OpCall
from ..steplog import Unlogged
from ..symbolic import FinishedStep, SymSize, as_expr
from ..tensor import F_OPS, OPS, LazyTensor, ctx_of

METHODS: dict = {}
LOWER: dict = {}
_REPLAYED: dict = {}  # implementation -> what the tables hold (:func:`replayed`): one per implementation


class ShapeError(RuntimeError):
    pass


def _put(table: dict, name: str, fn, what: str) -> None:
    if name in table and table[name] is not fn:
        raise ValueError(f"duplicate lazy {what} registration for {name!r}")
    table[name] = fn


def lazy_op(*names, lowers=None, method: bool = True, function: bool = True, fnames=()):
    """Register the decorated implementation under ``names`` (a torch
    function if ``function``, a :class:`LazyTensor` method if ``method``) and
    under the ``torch.nn.functional`` names ``fnames``.

    ``lowers``: the runtime callable of the IR op the implementation records,
    named ``names[0]``, or ``{IR op name: callable}`` when it records others.
    """

    def deco(fn):
        op = _REPLAYED.get(fn) or _REPLAYED.setdefault(fn, replayed(fn))
        for n in names:
            if function:
                _put(OPS, n, op, "function")
            if method:
                _put(METHODS, n, op, "method")
        for n in fnames:
            _put(F_OPS, n, op, "torch.nn.functional")
        if lowers is not None:
            for k, target in lowers.items() if isinstance(lowers, dict) else [(names[0], lowers)]:
                _put(LOWER, k, target, "lowering")
        return fn

    return deco


def covered_ops() -> dict:
    """The coverage list: ``{"torch": [...], "methods": [...], "functional": [...], "ir": [...]}``."""
    return {"torch": sorted(OPS), "methods": sorted(METHODS), "functional": sorted(F_OPS), "ir": sorted(LOWER)}


# ---------------------------------------------------------------------------
# recording
# ---------------------------------------------------------------------------
_ATOMIC = frozenset({int, float, bool, str, type(None), Expr, torch.dtype})


def lift(ctx, obj):
    """A nested op argument in IR form: lazy tensors -> Nodes, torch tensors ->
    constant leaves, sizes -> Exprs, ``torch.Size`` -> tuple."""
    t = type(obj)
    if t is LazyTensor:
        return obj.node
    if t in _ATOMIC:  # (before isinstance: torch.Tensor's instance check is slow)
        return obj
    if t is tuple:
        return tuple([lift(ctx, o) for o in obj])
    if isinstance(obj, LazyTensor):
        return obj.node
    if isinstance(obj, torch.Tensor):
        return ctx.constant(obj)
    if isinstance(obj, SymSize):
        return obj.live()
    if isinstance(obj, (list, tuple)):
        t = [lift(ctx, o) for o in obj]
        return t if isinstance(obj, list) else tuple(t)
    if isinstance(obj, slice):
        return slice(lift(ctx, obj.start), lift(ctx, obj.stop), lift(ctx, obj.step))
    if isinstance(obj, dict):
        return {k: lift(ctx, v) for k, v in obj.items()}
    if isinstance(obj, numbers.Number) and hasattr(obj, "item"):  # a numpy scalar: the Python number (FX names it)
        return obj.item()
    return obj


def _lift_operand(ctx, a):
    """:func:`lift`, with a list of lazy tensors (``cat``, ``stack``) inline."""
    if type(a) is list:
        return [x.node if type(x) is LazyTensor else lift(ctx, x) for x in a]
    return lift(ctx, a)


def record(ctx, op, args, kwargs, shape, dtype, call: OpCall | None = None) -> LazyTensor:
    """A new lazy tensor: the IR node ``op(*args, **kwargs)`` (``op`` must be in
    ``LOWER``) with the predicted symbolic ``shape`` and ``dtype``, logged in the
    step log (:meth:`.steplog.StepLog.op`) when one records. The one way a node is made.
    ``call``: the last step's call this one replays (:func:`replayed`): ``args``/``kwargs``
    are in IR form already, and the node logs that call's entry."""
    if call is not None:
        node = Node(op, args, kwargs, shape, dtype)
        ctx.log.add(node, call.entry, call)
        return ctx.tensor(node)
    assert op in LOWER, op
    largs = []  # (loops, not comprehensions: a comprehension is a call of its own, and every op records)
    for a in args:
        t = type(a)
        largs.append(a.node if t is LazyTensor else a if t in _ATOMIC else _lift_operand(ctx, a))
    lkwargs = {k: lift(ctx, v) for k, v in kwargs.items()} if kwargs else NO_KWARGS
    for e in shape:
        if type(e) is not Expr:
            shape = [as_expr(x) for x in shape]
            break
    node = Node(op, tuple(largs), lkwargs, tuple(shape), dtype)
    log = ctx.log
    if log is not None:  # the step log (.steplog); an operand from outside the step turns it off
        try:
            log.op(node)
        except Unlogged:
            _refuse_finished(log, node)
            ctx.log = None
    return ctx.tensor(node)


def replayed(impl):
    """``impl`` as the op tables hold it: in a step that follows the last one (see
    :mod:`..replay`), a call matching the last step's call at its log position records that
    call's node without running ``impl``; in a step that does not, the call is kept
    (:func:`capture`) for the next step to replay."""

    def op(*args, **kwargs):
        if args or kwargs:
            a = args[0] if args else next(iter(kwargs.values()))  # (``baddbmm(input=x, ...)``)
            if type(a) is not LazyTensor:
                if type(a) is list and a:  # (``cat([x, y])``)
                    a = a[0]
                elif len(args) > 1:  # (``2 - x``: the reflected operand)
                    a = args[1]
            if type(a) is LazyTensor:
                ctx = a.ctx
                log = ctx.log
                if log is not None:
                    k = len(log.nodes)
                    tape = log.follows
                    if tape is None:
                        return capture(impl, ctx, log, k, args, kwargs)
                    calls = tape.calls
                    if k < len(calls):
                        c = calls[k]
                        if (
                            type(c) is OpCall
                            and c.impl is impl
                            and (c.check is None or (ctx.recovers and c.holds(ctx.vars.hints)))
                        ):
                            replay = c.direct
                            if replay is not None:
                                out = replay(ctx, log, args, kwargs, c)
                                if out is not None:
                                    return out
                            else:
                                m = c.match(ctx, log.nodes, args, kwargs)  # (makes the call's constant leaves)
                                if m is not None:
                                    out = record(ctx, c.op, m[0], m[1], c.shape, c.dtype, c)
                                    log.calls[k] = c  # (the call starts at its first constant leaf, if any)
                                    if c.check is not None:  # (the last step's prediction, checked: a step
                                        # that can be traced again, as a failed check (or a demotion since) does)
                                        ctx.rechecks = True
                                        out = record(ctx, "check_shape", (out, *c.check), NO_KWARGS, c.shape, c.dtype)
                                    return out
                            return capture(impl, ctx, log, k, args, kwargs)
        return impl(*args, **kwargs)

    return functools.update_wrapper(op, impl)


def capture(impl, ctx, log, k: int, args, kwargs):
    """``impl(*args, **kwargs)``, kept in ``log`` as the :class:`OpCall` at position ``k``
    when the call made exactly the node it returned (after constant leaves of its concrete
    tensor arguments, if any; before the ``check_shape`` node over it of an optimistic meta
    rule, if any), synced nothing and decided nothing on the sizes (see :mod:`..replay` for
    what else it must not do)."""
    decided, syncs = ctx.decided, len(log.syncs)
    out = impl(*args, **kwargs)
    # (one node and no other leaf: no new size variable, which only a leaf makes)
    if ctx.log is log and type(out) is LazyTensor and ctx.decided == decided and len(log.syncs) == syncs:
        nodes, entries = log.nodes, log.entries
        node, last = out.node, len(nodes) - 1
        check, guessed = None, ctx.guessed
        ctx.guessed = None  # (a node of the step: held no longer than the call)
        if node.op == "check_shape" and last > k and node is nodes[last] and node.args[0] is nodes[last - 1]:
            if guessed is None or guessed[0] is not node:  # (not the meta rule's own check)
                return out
            check, node, last = node.args[1:], nodes[last - 1], last - 1
        if last >= k and node is nodes[last] and node.op != "input":  # (a leaf: a data-dependent size's, made by a sync)
            for p in range(k, last):  # (constant leaves: OpCall.of checks they are the call's arguments)
                if entries[p][0] != "const" or nodes[p].op != "input" or log.calls[p] is not None:
                    return out
            call = OpCall.of(impl, args, kwargs, node, entries[last], nodes, k, entries[k:last])
            if call is not None:
                if check is not None:
                    call.check, call.conds, call.direct = check, guessed[1], None  # (direct: one node)
                log.calls[k] = call
    return out


def _refuse_finished(log, node) -> None:
    """An operand logged by an earlier step (a tensor kept from it) with a
    symbolic size: its variable names are the current step's (``p<position>_<axis>``),
    so it cannot be told apart by name: refused, as the full path refuses the sizes of
    a finished step."""
    for a in node.args:
        if type(a) is Node and a.pos is not None and not (a.pos < len(log.nodes) and log.nodes[a.pos] is a):
            if any(not e.is_const for e in a.shape):
                raise FinishedStep(
                    f"lazy: operand {a.op}#{a.uid} of {node.op} belongs to a finished step "
                    f"(its sizes are symbolic: keep a concrete tensor across steps instead)"
                )


def ctx_for(*args):
    """The lazy context of the operands (a TypeError when none is lazy)."""
    ctx = ctx_of(*args)
    if ctx is None:
        raise TypeError("no lazy tensor among the operands")
    return ctx


# functions that only need the tensor's metadata (answered without recording)
for _n in ("numel", "size", "dim", "is_floating_point"):
    lazy_op(_n, method=False)(getattr(LazyTensor, _n))
