"""A leaf's :class:`~.replay.LeafCall` made afresh: what ``LazyContext.leaf`` makes of an input the
step does not follow the last step's leaf for (the first step, a new shape or dims)."""

from __future__ import annotations

import functools

import torch

from .ir import Node
from .replay import LeafCall
from .symbolic import _NAMES, Var, _var_expr, check_dim_name, const

_TENSOR = torch.Tensor


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


def take_leaves(ctx, args: tuple, keys: list, bounds):
    """The lazy leaves of a jit step's ``args`` (exact ``torch.Tensor``s, their axes ``keys``
    and ``bounds`` as ``LazyFunction`` passes them) when the step takes the last step's nodes
    from the start (:mod:`.reuse`) and each input matches the last step's leaf at its position
    (what ``LazyContext.leaf`` tests one by one); else None, nothing changed, and the step makes
    them one by one. One generated call for all of them: every test first, then each leaf's
    node, tensor and variables taken as ``LazyContext.leaf`` takes them."""
    log = ctx.log
    last = log.follows
    if last is None:  # (under another default dtype: it follows nothing)
        return None
    calls = last.calls
    n = len(args)
    if n > len(calls) or not n:
        return None
    c0 = calls[0]
    if type(c0) is not LeafCall:
        return None
    fn = c0.batch
    if fn is not None and fn.n == n:
        out = fn(ctx, log, args, keys, bounds, calls)
        if out is not False:
            return out
    # (made for the calls it names, from the first position on: False for others, made again; only
    # once a step meets the calls the last attempt met, so leaves that change every step, which
    # would make it every step at ~0.3 ms of code generated, are made one by one instead)
    cs = tuple(calls[:n])
    if c0.seen != cs:
        c0.seen = cs
        return None
    if any(type(c) is not LeafCall for c in cs):
        c0.batch = _refusing(n)
        return None
    fn = c0.batch = _batch(cs)
    return fn(ctx, log, args, keys, bounds, calls)


def _batch(cs: tuple):
    n = len(cs)
    scope: dict = {"T": _TENSOR}
    lines = [
        "def take(ctx, log, args, keys, bounds, calls):",
        f"    {''.join(f'a{i}, ' for i in range(n))}= args",
    ]
    made: dict = {}  # a variable a leaf of the batch makes -> the local holding its size
    lines.append(f"    if {' or '.join(f'calls[{i}] is not C{i}' for i in range(n))}:\n        return False")
    for i, c in enumerate(cs):
        scope[f"C{i}"], scope[f"D{i}"], scope[f"A{i}"], scope[f"B{i}"] = c, c.dtype, c.axes, c.bounds
        lines += [
            f"    if type(a{i}) is not T or keys[{i}] is not A{i} or a{i}.dtype is not D{i}:",
            "        return None",
            f"    if {f'bounds is not None and bounds[{i}] is not None' if c.bounds is None else f'bounds is None or bounds[{i}] != B{i}'}:",
            "        return None",
            f"    sh{i} = a{i}.shape",
            f"    if len(sh{i}) != {c.ndim}:",
            "        return None",
        ]
        lines += [f"    if sh{i}[{axis}] != {size}:\n        return None" for axis, size in c.consts]
        for j, (axis, v, _, bound, new) in enumerate(c.vars):
            s = f"s{i}_{j}"
            lines.append(f"    {s} = sh{i}[{axis}]")
            if bound is not None:
                lines.append(f"    if {s} > {bound}:\n        return None")
            if new:
                made[v.sym] = s
            elif v.sym in made:  # (a name an earlier axis of the batch made: its size)
                lines.append(f"    if {made[v.sym]} != {s}:\n        return None")
            else:  # (not the batch's: LazyContext.leaf says why, every step)
                return _refusing(n)
    lines += [
        "    reuse, nodes, made = ctx.reuse, log.nodes, ctx._made",
        "    sv = ctx.vars",
        "    vars_, hints, named, canon = sv.vars, sv.hints, ctx._named, log.canon",
    ]
    for i, c in enumerate(cs):
        lines += [
            f"    o{i} = reuse[{i}]",
            f"    n{i} = o{i}.node",
            f"    n{i}.data = a{i}",
            f"    nodes.append(n{i})",
            f"    made.append(o{i})",
        ]
        for j, (axis, v, name, _, new) in enumerate(c.vars):
            if new:  # (the call's own variable, this step's now)
                scope[f"V{i}_{j}"] = v
                lines += [
                    f"    V{i}_{j}.hint, V{i}_{j}.src = s{i}_{j}, (n{i}, {axis})",
                    f"    vars_[{v.sym!r}] = V{i}_{j}",
                    f"    hints[{v.sym!r}] = s{i}_{j}",
                    f"    canon[{v.sym!r}] = {v.sym!r}",
                ]
                if name is not None:
                    lines.append(f"    named[{name!r}] = V{i}_{j}")
    lines += [f"    ctx.reused = {n}", f"    return [{''.join(f'o{i}, ' for i in range(n))}]"]
    exec("\n".join(lines), scope)  # (our own text: positions, sizes, canonical or checked user names)
    fn = scope["take"]
    fn.n, fn.calls = n, cs  # (the leaves it is made for)
    return fn


def _refusing(n: int):
    """``take_leaves``'s call for ``n`` inputs whose leaves it does not take (an input that is not
    a leaf, a name another input's leaf made): the step makes its leaves one by one."""

    def take(ctx, log, args, keys, bounds, calls):
        return None

    take.n, take.calls = n, ()  # type: ignore[attr-defined]
    return take
