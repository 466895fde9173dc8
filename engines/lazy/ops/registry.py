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

import torch

from engines.sizes import Expr

from ..ir import NO_KWARGS, Node
from ..steplog import INTS, NINTS, NREFS, REFS, Unlogged
from ..symbolic import FinishedStep, SymSize, as_expr
from ..tensor import F_OPS, OPS, LazyTensor, ctx_of

METHODS: dict = {}
LOWER: dict = {}


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
        for n in names:
            if function:
                _put(OPS, n, fn, "function")
            if method:
                _put(METHODS, n, fn, "method")
        for n in fnames:
            _put(F_OPS, n, fn, "torch.nn.functional")
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
    return obj


def _lift_operand(ctx, a):
    """:func:`lift`, with a list of lazy tensors (``cat``, ``stack``) inline."""
    if type(a) is list:
        return [x.node if type(x) is LazyTensor else lift(ctx, x) for x in a]
    return lift(ctx, a)


def record(ctx, op, args, kwargs, shape, dtype) -> LazyTensor:
    """A new lazy tensor: the IR node ``op(*args, **kwargs)`` (``op`` must be in
    ``LOWER``) with the predicted symbolic ``shape`` and ``dtype``."""
    assert op in LOWER, op
    log = ctx.log
    if log is not None and not kwargs:
        out = _record_logged(ctx, log, op, args, shape, dtype)
        if out is not None:
            return out
    largs = tuple([a.node if type(a) is LazyTensor else a if type(a) in _ATOMIC else _lift_operand(ctx, a) for a in args])
    lkwargs = {k: lift(ctx, v) for k, v in kwargs.items()} if kwargs else NO_KWARGS
    node = Node(op, largs, lkwargs, tuple([s if type(s) is Expr else as_expr(s) for s in shape]), dtype)
    if log is not None:  # the step log (.steplog); an operand from outside the step turns it off
        try:
            log.op(node)
        except Unlogged:
            _refuse_finished(log, node)
            ctx.log = None
    return LazyTensor(node, ctx)


def record_xi(ctx, op, x, i, shape: tuple, dtype) -> LazyTensor:
    """:func:`record` of ``op(x, i)``, ``x`` a lazy tensor and ``i`` an int (``x.sum(1)``,
    ``x.unsqueeze(0)``), ``shape`` a tuple of Expr: the same node and step-log entry,
    built without the general operand loop when ``x`` is of the step and ``i`` small."""
    log = ctx.log
    if log is not None and type(x) is LazyTensor and type(i) is int and -NINTS <= i < NINTS:
        n = x.node
        p = n.pos
        nodes = log.nodes
        if p is not None and p < len(nodes) and nodes[p] is n:
            node = Node(op, (n, i), NO_KWARGS, shape, dtype)
            node.pos = len(nodes)
            nodes.append(node)
            log.entries.append((op, (REFS[p] if p < NREFS else ("%", p), INTS[i]), None, dtype))
            return LazyTensor(node, ctx)
    return record(ctx, op, (x, i), NO_KWARGS, shape, dtype)


def _record_logged(ctx, log, op, args, shape, dtype):
    """:func:`record` of an op whose operands are lazy tensors of the step (or lists
    of them), ints and sizes, lifted and signed for the step log in one pass (what
    ``log.op`` signs); None for any other operand (the general path)."""
    nodes = log.nodes
    size = len(nodes)
    largs, sargs = [], []
    for a in args:
        t = type(a)
        if t is LazyTensor:
            n = a.node
            p = n.pos
            if p is None or p >= size or nodes[p] is not n:
                return None
            largs.append(n)
            sargs.append(REFS[p] if p < NREFS else ("%", p))
        elif t is int and -NINTS <= a < NINTS:
            largs.append(a)
            sargs.append(INTS[a])
        elif t is Expr:
            terms = a.terms
            if len(terms) == 1 and not terms[0][0]:  # a constant (log.sig, inline)
                sargs.append(("e", terms[0][1]))
            else:
                try:
                    sargs.append(log.esig(a))
                except Unlogged:  # a size of another step: the general path refuses it
                    return None
            largs.append(a)
        elif t is list:  # the tensors of cat/stack
            ln, ls = [], [list]
            for x in a:
                if type(x) is not LazyTensor:
                    return None
                n = x.node
                p = n.pos
                if p is None or p >= size or nodes[p] is not n:
                    return None
                ln.append(n)
                ls.append(REFS[p] if p < NREFS else ("%", p))
            largs.append(ln)
            sargs.append(tuple(ls))
        else:
            return None
    node = Node(op, tuple(largs), NO_KWARGS, tuple([s if type(s) is Expr else as_expr(s) for s in shape]), dtype)
    node.pos = size  # (log.add, inline)
    nodes.append(node)
    log.entries.append((op, tuple(sargs), None, dtype))
    return LazyTensor(node, ctx)


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
