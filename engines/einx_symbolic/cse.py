"""einx 0.4.3's common-subexpression elimination, on expanded (stage-2) trees.

After expanding ellipses and before solving sizes, einx replaces every subexpression
whose axes are used nowhere else by one new axis (``einx._src.namedtensor.stage2.cse``,
called by every op with ``cse_concat=False, cse_in_brackets=True``): ``(c 2) -> (c 2)``
becomes ``(x) -> (x)``, ``a [(b c)]`` becomes ``a [x]``, ``(a b) c -> (a b c)`` becomes
``(x) c -> (x c)``. The graph then never needs the parts' sizes, and what einx counts
afterwards (marked axes of ``argmax``/``get_at``, axes that vanish from the output) counts
the new axis once. Candidates are found by their text, where a number axis reads as its
value, so ``(c 2)`` on both sides is one subexpression though its two ``2`` are different
axes. The rules, in einx's order (``eliminate``):

1. a candidate is a node other than a root, or a run of consecutive children of a list
   other than a root, grouped by text;
2. kept if it holds an axis and every use of its axis names is inside its occurrences
   (a constrained name is used by its constraint, so it is never replaced);
3. not a single axis (alone, or alone in brackets);
4. holding no bracket node (``[a] [b]``) and no concatenation;
5. not, where its first occurrence is outside every composition, longer than one dim;
6. not inside an occurrence of another kept candidate.

The new axis is named by the candidate's text (no user name has a space or a parenthesis)
and has the product of the values where every part is a number axis.
"""

import math

from .expand import _value, ndim
from .tree import Axis, Brackets, Concat, Flat, List, nodes


def eliminate(trees, fixed, concat=False, in_brackets=True):
    """The trees with einx's common subexpressions replaced. ``fixed``: the constrained axis names.

    ``concat``, ``in_brackets``: einx's ``cse_concat``, ``cse_in_brackets`` (the ops call it with
    the defaults here; ``shapes.solve_shapes`` with ``True, False``: concatenations may be merged,
    nothing inside brackets may)."""
    at_root = {}
    cands = {}  # text -> [occurrence: list of nodes]
    for root in trees:
        _index(root, True, at_root)
        for n in nodes(root):
            if n is root:
                continue
            cands.setdefault(str(n), []).append([n])
            if isinstance(n, List):
                ch = n.children
                for i in range(len(ch)):
                    for j in range(i, len(ch)):
                        cands.setdefault(" ".join(str(c) for c in ch[i : j + 1]), []).append(ch[i : j + 1])
    bracketed = (
        set() if in_brackets else {id(x) for root in trees for b in nodes(root) if isinstance(b, Brackets) for x in nodes(b)}
    )
    uses = {}  # axis name -> ids of its nodes
    for root in trees:
        for a in nodes(root):
            if isinstance(a, Axis):
                uses.setdefault(a.name, set()).add(id(a))
    common = []
    for occs in cands.values():
        ids, names = set(), set()
        for occ in occs:
            for n in occ:
                for a in nodes(n):
                    if isinstance(a, Axis):
                        ids.add(id(a))
                        names.add(a.name)
        if not ids or names & fixed or any(not uses[nm] <= ids for nm in names):
            continue
        uniq = []
        for occ in occs:
            if not any(len(o) == len(occ) and all(x is y for x, y in zip(o, occ, strict=False)) for o in uniq):
                uniq.append(occ)
        first = uniq[0]
        inner = [x for occ in uniq for n in occ for x in nodes(n)]
        if (
            _singleton(first)
            or (not concat and any(isinstance(x, Concat) for x in inner))
            or (any(isinstance(x, Brackets) for x in inner) if in_brackets else any(id(x) in bracketed for x in inner))
            or (at_root[id(first[0])] and (len(first) > 1 or ndim(first[0]) > 1))
        ):
            continue
        common.append(uniq)
    inside = [{id(x) for occ in c for n in occ for x in nodes(n) if x is not n} for c in common]
    common = [
        c
        for k, c in enumerate(common)
        if not any(k2 != k and any(id(n) in ins for occ in c for n in occ) for k2, ins in enumerate(inside))
    ]
    if not common:
        return trees
    return [_rebuild(_replace(root, common)) for root in trees]


def _index(n, root_level, at_root):
    """``at_root[id(node)]``: no composition above the node (einx's ``is_at_root``)."""
    at_root[id(n)] = root_level
    below = root_level and not isinstance(n, Flat)
    for c in n.children if isinstance(n, (List, Concat)) else [n.inner] if isinstance(n, (Flat, Brackets)) else []:
        _index(c, below, at_root)


def _singleton(occ):
    if len(occ) != 1:
        return False
    n = occ[0]
    while isinstance(n, Brackets):
        n = n.inner
    return isinstance(n, Axis)


def _new(occ):
    text = " ".join(str(n) for n in occ)
    leaves = [a for n in occ for a in nodes(n) if isinstance(a, Axis)]
    value = math.prod(_value(n) for n in occ) if all(a.value is not None for a in leaves) else None
    return Axis(text, value, pos=(occ[0].pos[0], occ[-1].pos[1]))


def _replace(n, common):
    """The list of nodes ``n`` becomes (einx's ``cse.replace``)."""
    for c in common:
        for occ in c:
            if len(occ) == 1 and occ[0] is n:
                return [_new(occ)]
    if isinstance(n, List):
        return _replace_run(n.children, common)
    if isinstance(n, Axis):
        return [Axis(n.name, n.value, pos=n.pos)]
    if isinstance(n, Concat):
        return [Concat([x for c in n.children for x in _replace(c, common)], pos=n.pos)]
    inner = _rebuild(_replace_run([n.inner], common))
    if isinstance(n, Flat):
        return [inner if isinstance(inner, Flat) else Flat(inner, pos=n.pos)]
    return [inner if isinstance(inner, Brackets) else Brackets(inner, pos=n.pos)] if ndim(inner) else []


def _replace_run(kids, common):
    out, i = [], 0
    while i < len(kids):
        found = None
        for c in common:
            for occ in c:
                if all(i + j < len(kids) and kids[i + j] is x for j, x in enumerate(occ)):
                    found = occ
            if found is not None:
                break
        if found is not None:
            out.append(_new(found))
            i += len(found)
        else:
            out.extend(_replace(kids[i], common))
            i += 1
    return out


def _rebuild(ns):
    flat = [x for n in ns for x in (n.children if isinstance(n, List) else [n])]
    return flat[0] if len(flat) == 1 else List(flat)
