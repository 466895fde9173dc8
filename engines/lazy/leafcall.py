"""A leaf's :class:`~.replay.LeafCall` made afresh: what ``LazyContext.leaf`` makes of an input the
step does not follow the last step's leaf for (the first step, a new shape or dims)."""

from __future__ import annotations

import functools

from .ir import Node
from .replay import LeafCall
from .symbolic import _NAMES, Var, _var_expr, check_dim_name, const


@functools.lru_cache(maxsize=1024)
def _leaf_plan(pos: int | None, ndim: int, axes) -> tuple:
    """Per axis of a leaf of rank ``ndim``: None (a constant) or ``(user name or None,
    canonical name or None, axis, the canonical variable as a size or None)``. ``axes``: True (every axis), or ``((axis, name), ...)``
    (see :func:`.runtime.axes_key`). ``pos``: the leaf's step-log position (None: no log), which
    names its variables canonically (``p<pos>_<axis>``). User names are checked here, once."""
    plan = []
    named = {} if axes is True else dict(axes)
    for axis in range(ndim):
        if axes is not True and axis not in named:
            plan.append(None)
            continue
        name = named.get(axis) or None
        if name is not None and name not in _NAMES:
            check_dim_name(name)
        c = None if pos is None else f"p{pos}_{axis}"
        plan.append((name, c, axis, None if c is None else _var_expr(c)))
    return tuple(plan)


def leaf_call(log, named: dict, node: Node, dtype, shape_, axes, bounds) -> LeafCall:
    """The :class:`~.replay.LeafCall` of a leaf made here: per axis, a constant, a new
    variable (named ``p<position>_<axis>`` in a jit step, ``d<leaf uid>_<axis>`` in a
    context without a step log), or the variable of a user name an earlier axis made (``named``:
    the step's, user name -> variable). ``log``: the step log, or None."""
    pos = None if log is None else len(log.nodes)
    plan = _leaf_plan(pos, len(shape_), axes)
    own = None  # own: the names this leaf's axes make (``(n, n)`` dims)
    consts, vars_, shape, sig = [], [], [], []  # sig: the dims as the step log keys them
    for spec, size in zip(plan, shape_, strict=True):
        if spec is None:  # a constant axis
            consts.append((len(shape), size))
            shape.append(const(size))
            sig.append(size)
            continue
        name, c, axis, e = spec
        bound = bounds.get(axis) if bounds is not None else None
        v = None if name is None else (own and own.get(name)) or named.get(name)
        if v is None:
            # a jit step names its variables by position (the same names every step, so its size
            # arithmetic repeats the last one's); a context without a step log by leaf (unique)
            sym = c or f"d{node.uid}_{axis}"
            v = Var(sym, name or sym, size, None, bound, e)
            if name is not None:
                own = own or {}
                own[name] = v
            vars_.append((axis, v, name, bound, True))
        else:
            vars_.append((axis, v, name, bound, False))
        shape.append(v.expr)
        sig.append(v.sym if v.bound is None or bounds is None else (v.sym, v.bound))
    entry = ("in", dtype, tuple(sig))
    return LeafCall(
        dtype, len(shape_), axes, None if bounds is None else dict(bounds), tuple(consts), tuple(vars_), tuple(shape), entry
    )
