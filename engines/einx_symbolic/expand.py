"""Ellipsis expansion: from parsed trees and *ranks* to flat axis lists.

This depends only on the signature (description, tensor ranks, constraint
shapes), never on sizes.  ``expand`` gives each expression as einx's stage-2 tree
(ellipses expanded, brackets kept as nodes: what ``cse`` works on); ``flatten``
turns one into a ``List`` of top-level dims, each an ``Axis`` (``marked`` if it
was in brackets), ``Flat`` (of a ``List``) or ``Concat``.  Named-ellipsis axes
``x...`` become ``x.0, x.1, ...``.
"""

import math

from .errors import NotSupportedError, RankError
from .tree import Axis, Brackets, Concat, Ell, Flat, List, nodes


def _ndim(n):
    """(static dims, {group: multiplier}) of a node at top level."""
    if isinstance(n, (Axis, Flat, Concat)):
        return 1, {}
    if isinstance(n, Brackets):
        return _ndim(n.inner)
    if isinstance(n, List):
        s, g = 0, {}
        for c in n.children:
            s2, g2 = _ndim(c)
            s += s2
            for k, v in g2.items():
                g[k] = g.get(k, 0) + v
        return s, g
    if isinstance(n, Ell):
        s, g = _ndim(n.inner)
        if g:
            raise NotSupportedError(None, "nested ellipses")
        return 0, {n._group: s}
    raise AssertionError(type(n))


def expand(desc, exprs, ranks, params):
    """Expand ellipses. ``ranks[i]`` is None for expressions without a tensor (outputs).

    ``params`` maps constraint names to ``None`` (scalar) or a tuple length.
    Returns (expanded expressions, {ellipsis axis name: repetitions}).
    """
    # union-find over ellipsis groups, keyed by axis names inside each ellipsis
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    ell_names = set()
    for e in exprs:
        for n in nodes(e):
            if isinstance(n, Ell):
                names = [a.name for a in nodes(n.inner) if isinstance(a, Axis) and a.value is None]
                if any(isinstance(m, Ell) for m in nodes(n.inner)):
                    raise NotSupportedError(desc, "nested ellipses (e.g. '(a...)...') are not supported.\n%EXPR%", range(*n.pos))
                key = ("ell", id(n)) if not names else ("ax", names[0])
                for nm in names[1:]:
                    parent[find(("ax", nm))] = find(key)
                if n.pos[0] >= 0:  # the same ellipsis of the text, also in derived expressions ('[s]...' -> '()...')
                    parent[find(("pos", n.pos))] = find(key)
                n._group = key
                ell_names.update(names)
    plain = {a.name for e in exprs for a in nodes(e) if isinstance(a, Axis) and a.value is None} - ell_names
    for e in exprs:  # an axis used both with and without ellipsis
        for n in nodes(e):
            if isinstance(n, Ell):
                for a in nodes(n.inner):
                    if isinstance(a, Axis) and a.name in plain:
                        pass
    both = set()
    for e in exprs:
        outside = _axes_outside_ell(e)
        both |= outside & ell_names
    if both:
        pos = [p for e in exprs for a in nodes(e) if isinstance(a, Axis) and a.name in both for p in range(*a.pos)]
        raise RankError(
            desc,
            f"Found an invalid usage of ellipses and/or constraints for the axis {', '.join(sorted(both))}:\n%EXPR%\n"
            "Please check the following:\n - Each axis name may be used either with or without an ellipsis, but not both.",
            pos,
        )
    for e in exprs:
        for n in nodes(e):
            if isinstance(n, Ell):
                n._group = find(n._group)

    known = {}
    for name, shape in params.items():
        if name in ell_names:
            if shape is None:  # one number for every repetition (einx broadcasts it): says nothing about the count
                continue
            g = find(("ax", name))
            if g in known and known[g] != shape:
                raise RankError(desc, "Constraints imply different ellipsis expansions.\n%EXPR%", _pos_of(exprs, {name}))
            known[g] = shape
        elif shape is not None and name in plain:
            raise RankError(
                desc,
                f"Found an invalid usage of ellipses and/or constraints for the axis {name}:\n%EXPR%\n"
                "The rank of a constraint must be equal to or less than the number of ellipses around the corresponding axis.",
                _pos_of(exprs, {name}),
            )

    eqs = []
    for e, r in zip(exprs, ranks, strict=False):
        if r is not None:
            s, g = _ndim(e)
            eqs.append((e, s, g, r))
    changed = True
    while changed:
        changed = False
        for _e, s, g, r in eqs:
            unknown = [k for k in g if k not in known]
            if len(unknown) == 1:
                k = unknown[0]
                rest = r - s - sum(v * known[kk] for kk, v in g.items() if kk != k)
                if rest < 0 or rest % g[k] != 0:
                    _rank_fail(desc, exprs)
                known[k] = rest // g[k]
                changed = True
    for _e, s, g, r in eqs:
        if any(k not in known for k in g):
            continue
        if s + sum(v * known[k] for k, v in g.items()) != r:
            _rank_fail(desc, exprs)
    groups = {n._group for e in exprs for n in nodes(e) if isinstance(n, Ell)}
    # an ellipsis that only ever appears inside compositions ('(...)', '(b...)') is only needed as the
    # product of its axes: when nothing fixes its repetitions, it stays unexpanded, one axis (as in einx)
    top = {n._group for e in exprs for n in _outside_flat(e) if isinstance(n, Ell)}
    # (not when one number constrains its axis: einx then fails to determine the expansion)
    top |= {find(("ax", name)) for name, shape in params.items() if shape is None and name in ell_names}
    for k in groups - top:
        known.setdefault(k, None)
    missing = [k for k in groups if k not in known]
    if missing:
        raise RankError(
            desc,
            "Failed to uniquely determine the expansion of ellipses in the expression. Please provide more constraints.\n%EXPR%",
            _ell_pos(exprs),
        )
    reps = {name: known[find(("ax", name))] for name in ell_names if known[find(("ax", name))] is not None}
    return [_root(_tree(e, known, "")) for e in exprs], reps


def _outside_flat(n):
    """The nodes of ``n`` not inside a composition."""
    yield n
    if not isinstance(n, Flat):
        from .tree import children

        for c in children(n):
            yield from _outside_flat(c)


def _axes_outside_ell(n):
    if isinstance(n, Ell):
        return set()
    if isinstance(n, Axis):
        return {n.name} if n.value is None else set()
    from .tree import children

    out = set()
    for c in children(n):
        out |= _axes_outside_ell(c)
    return out


def _pos_of(exprs, names):
    return [p for e in exprs for a in nodes(e) if isinstance(a, Axis) and a.name in names for p in range(*a.pos)]


def _ell_pos(exprs):
    return [p for e in exprs for n in nodes(e) if isinstance(n, Ell) and n.pos[1] > 2 for p in range(n.pos[1] - 3, n.pos[1])]


def _rank_fail(desc, exprs):
    if any(isinstance(n, Ell) for e in exprs for n in nodes(e)):
        msg = "Failed to find an expansion of ellipses in the expression such that the number of dimensions matches all given constraints.\n%EXPR%"
    else:
        msg = "The number of tensor dimensions and axes in the expression does not match.\n%EXPR%"
    raise RankError(desc, msg, _ell_pos(exprs))


def _root(nodes, pos=(-1, -1)):
    """einx's ``List.create``: nested lists spliced, a list of one node is that node."""
    return nodes[0] if len(nodes) == 1 else List(nodes, pos=pos)


def _tree(n, known, suffix):
    """The stage-2 nodes (a list) of node ``n``: einx's ``stage2.solve.map``, with the same
    ``create`` rules (``((a b))`` is ``(a b)``, ``[]`` vanishes, a list of one node is the node)."""
    if isinstance(n, Axis):
        return [Axis(n.name + suffix, n.value, pos=n.pos)]
    if isinstance(n, List):
        return [d for c in n.children for d in _tree(c, known, suffix)]
    if isinstance(n, Ell):
        if known[n._group] is None:  # unexpanded: one axis, named by its text (brackets inside it are gone), as einx
            v = _value(n.inner)
            return [Axis(f"UnexpandedEllipsis({n}){suffix}", v if v in (0, 1) else None, pos=n.pos)]
        return [d for i in range(known[n._group]) for d in _tree(n.inner, known, f"{suffix}.{i}")]
    if isinstance(n, Concat):
        return [Concat([_root(_tree(c, known, suffix), c.pos) for c in n.children], pos=n.pos)]
    inner = _root(_tree(n.inner, known, suffix))
    if isinstance(n, Flat):
        return [inner if isinstance(inner, Flat) else Flat(inner, pos=n.pos)]
    if isinstance(inner, Brackets):
        return [inner]
    return [Brackets(inner, pos=n.pos)] if ndim(inner) else []


def _value(n):
    """The size a (stage-1) node fixes by itself, or None (einx's ``.value``)."""
    if isinstance(n, Axis):
        return n.value
    if isinstance(n, (Flat, Brackets)):
        return _value(n.inner)
    if isinstance(n, Ell):
        v = _value(n.inner)
        return v if v in (0, 1) else None
    vs = [_value(c) for c in n.children]
    return None if None in vs else (sum(vs) if isinstance(n, Concat) else math.prod(vs))


def ndim(n):
    """The number of top-level dims of a stage-2 node."""
    if isinstance(n, List):
        return sum(ndim(c) for c in n.children)
    return ndim(n.inner) if isinstance(n, Brackets) else 1


def flatten(tree):
    """The expanded expression of a stage-2 tree: a ``List`` of top-level dims."""
    return List(_flat(tree, False))


def _flat(n, marked):
    if isinstance(n, Axis):
        return [Axis(n.name, n.value, marked, pos=n.pos)]
    if isinstance(n, List):
        return [d for c in n.children for d in _flat(c, marked)]
    if isinstance(n, Brackets):
        return _flat(n.inner, True)
    if isinstance(n, Flat):
        return [Flat(List(_flat(n.inner, marked)), pos=n.pos)]
    if isinstance(n, Concat):
        return [Concat([_single(c, marked) for c in n.children], pos=n.pos)]
    raise AssertionError(type(n))


def _single(n, marked):
    ds = _flat(n, marked)
    return ds[0] if len(ds) == 1 else Flat(List(ds), pos=n.pos)


def leaves(dims):
    """Plain axes of an expanded expression, in order."""
    out = []
    for d in dims.children if isinstance(dims, List) else dims:
        if isinstance(d, Axis):
            out.append(d)
        elif isinstance(d, Flat):
            out.extend(leaves(d.inner))
        elif isinstance(d, Concat):
            for c in d.children:
                out.extend(leaves([c]))
    return out
