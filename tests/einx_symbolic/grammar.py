"""Hypothesis strategies that generate einx 0.4 descriptions from the grammar, with shapes.

An expression is a list of *atoms* (a small tree) rendered to text by :func:`render`
and measured by :func:`shape`:

- ``("ax", n)`` a named axis, ``("num", k)`` an unnamed (number) axis;
- ``("comp", [atoms])`` a composition ``(a b)``; ``("cat", [atom, atom])`` a concatenation ``(a + b)``;
- ``("br", [atoms])`` brackets ``[a b]`` (repeated names allowed: separate axes of one size);
- ``("ell", atom)`` an ellipsis ``x...`` over an axis, a number, brackets or a composition
  (``b...``, ``[s]...``, ``(b...)`` is ``("comp", [("ell", ("ax", "b"))])``), ``("ell", None)`` is ``...``.

Ellipsis names (``ELL_NAMES``) repeat ``World.reps`` times (one count for all, the anonymous
``...`` too), each repetition with its own size. Nesting of ellipses deeper than one level
(``(a...)...``) is never generated: it is the one documented exclusion.
"""

import math
from dataclasses import dataclass, field

from hypothesis import strategies as st

NAMES = "abcdef"
ELL_NAMES = "st"
ANON = "_anon"


@dataclass
class World:
    """The sizes every generated expression of one example is measured with."""

    sizes: dict  # name -> size; ellipsis names: "s.0", "s.1", ...
    reps: int  # repetitions of every ellipsis
    kw: dict = field(default_factory=dict)  # constraints passed to the call


def render(e):
    return " ".join(_r(a) for a in e)


def _r(a):
    k = a[0]
    if k == "ax":
        return a[1]
    if k == "num":
        return str(a[1])
    if k == "comp":
        return "(" + " ".join(_r(c) for c in a[1]) + ")"
    if k == "cat":
        return "(" + " + ".join(_r(c) for c in a[1]) + ")"
    if k == "br":
        return "[" + " ".join(_r(c) for c in a[1]) + "]"
    if k == "ell":
        return "..." if a[1] is None else _r(a[1]) + "..."
    raise AssertionError(a)


def _dims(a, w, suffix=""):
    """Top-level dim sizes of atom ``a``."""
    k = a[0]
    if k == "ax":
        return [w.sizes[a[1] + suffix] if a[1] + suffix in w.sizes else w.sizes[a[1]]]
    if k == "num":
        return [a[1]]
    if k == "comp":
        return [math.prod(d for c in a[1] for d in _dims(c, w, suffix))]
    if k == "cat":
        return [sum(math.prod(_dims(c, w, suffix)) for c in a[1])]
    if k == "br":
        return [d for c in a[1] for d in _dims(c, w, suffix)]
    if k == "ell":
        inner = a[1] if a[1] is not None else ("ax", ANON)
        return [d for i in range(w.reps) for d in _dims(inner, w, f"{suffix}.{i}")]
    raise AssertionError(a)


def shape(e, w):
    return tuple(d for a in e for d in _dims(a, w))


def names_of(e):
    """Named axes of an expression (ellipsis names included), in order."""
    out = []
    for a in e:
        k = a[0]
        if k == "ax":
            out.append(a[1])
        elif k in ("comp", "cat", "br"):
            out += names_of(a[1])
        elif k == "ell" and a[1] is not None:
            out += names_of([a[1]])
    return out


@st.composite
def world(draw, max_size=3, min_size=1):
    reps = draw(st.integers(0, 2))
    sizes = {n: draw(st.integers(min_size, max_size)) for n in NAMES}
    for n in list(ELL_NAMES) + [ANON]:
        for i in range(reps):
            sizes[f"{n}.{i}"] = draw(st.integers(min_size, max_size))
    return World(sizes, reps)


@st.composite
def leaf(draw, names, ell=True, nums=True):
    """A plain axis, a number axis, or an ellipsis over one (``b...``, ``...``)."""
    kinds = ["ax", "ax", "ax"] + (["num"] if nums else []) + (["ell"] if ell else [])
    k = draw(st.sampled_from(kinds))
    if k == "ax":
        return ("ax", draw(st.sampled_from(names)))
    if k == "num":
        return ("num", draw(st.sampled_from([1, 1, 2, 3])))
    return ("ell", draw(st.sampled_from([None, ("ax", "s"), ("ax", "t")])))


@st.composite
def atom(draw, names, brackets=False, cat=False, ell=True, nums=True):
    """One top-level element: a leaf, a composition of leaves, a concatenation, brackets, or an
    ellipsis over brackets/a composition (``[s]...``, ``(s [t])...``)."""
    kinds = ["leaf"] * 4 + ["comp"] + (["cat"] if cat else []) + (["br", "br"] if brackets else []) + (["ellx"] if ell else [])
    k = draw(st.sampled_from(kinds))
    if k == "leaf":
        return draw(leaf(names, ell, nums))
    if k == "comp":
        parts = draw(st.lists(leaf(names, ell, nums), min_size=0, max_size=3))
        if brackets and parts and draw(st.booleans()):
            i = draw(st.integers(0, len(parts) - 1))
            parts[i] = ("br", [parts[i]])
        return ("comp", parts)
    if k == "cat":
        return (
            "cat",
            [
                draw(
                    st.one_of(
                        leaf(names, False, nums),
                        st.builds(lambda p: ("comp", p), st.lists(leaf(names, False, nums), min_size=1, max_size=2)),
                    )
                )
                for _ in range(2)
            ],
        )
    if k == "br":
        return ("br", draw(st.lists(leaf(names, ell, nums), min_size=1, max_size=2)))
    inner = draw(
        st.sampled_from(
            [
                ("br", [("ax", "s")]),
                ("comp", [("ax", "s")]),
                ("comp", [("br", [("ax", "s")])]),
                ("comp", [("ax", "s"), ("ax", "t")]),
            ]
        )
    )
    return ("ell", inner)


@st.composite
def expression(draw, names, min_size=0, max_size=4, **kw):
    """A list of atoms; empty only now and then (``min_size`` 0)."""
    lo = min_size if min_size or draw(st.integers(0, 7)) == 0 else 1
    return draw(st.lists(atom(names, **kw), min_size=lo, max_size=max(lo, max_size)))


@st.composite
def system(draw, names):
    """Two or three atoms that hold two unknown names ``u``, ``v`` only together, as many equations as unknowns
    (einx solves them with sympy): concatenations of ``u``, ``v``, ``(k u)``, ``(u v)`` (linear, or not) and the
    composition ``(u v)``, e.g. ``(a + b) (a + b + b)``, ``(a + (2 b))``, ``(a b) (a + b)``."""
    u, v = draw(st.permutations(names))[:2]
    piece = st.sampled_from(
        [
            ("ax", u),
            ("ax", v),
            ("ax", u),
            ("ax", v),
            ("comp", [("num", 2), ("ax", u)]),
            ("comp", [("ax", v), ("num", 2)]),
            ("comp", [("ax", u), ("ax", v)]),
        ]
    )
    cat = st.builds(lambda p: ("cat", p), st.lists(piece, min_size=2, max_size=3))
    atoms = draw(st.lists(st.one_of(cat, cat, st.just(("comp", [("ax", u), ("ax", v)]))), min_size=2, max_size=3))
    return atoms if {u, v} <= set(names_of(atoms)) else atoms + [("cat", [("ax", u), ("ax", v)])]


def has(e, kind):
    for a in e:
        if a[0] == kind:
            return True
        if a[0] in ("comp", "cat", "br") and has(a[1], kind):
            return True
        if a[0] == "ell" and a[1] is not None and has([a[1]], kind):
            return True
    return False


def flatten_atoms(e):
    """The leaves of an expression (axes, numbers, ellipses over a leaf), brackets and groups dropped."""
    out = []
    for a in e:
        if a[0] in ("comp", "cat", "br"):
            out += flatten_atoms(a[1])
        elif a[0] == "ell" and a[1] is not None and a[1][0] != "ax":
            out += [("ell", x) if x[0] == "ax" else x for x in flatten_atoms([a[1]])]
        else:
            out.append(a)
    return out


@st.composite
def rearranged(draw, e, extra_names=(), allow_new=True):
    """An output expression over the leaves of ``e`` (permuted, regrouped), maybe with output-only
    axes: numbers, ``(1 + 1)``, or a name from ``extra_names`` (sized by a keyword). Now and then
    the compositions of ``e`` (``(c 2)``, ``(s t)...``; without brackets) stay whole, number axes
    and all: einx's common-subexpression elimination makes each one axis (``(c 2) -> (c 2)``)."""
    whole = draw(st.integers(0, 2)) == 0
    leaves = []
    for a in e:
        if whole and (a[0] == "comp" or (a[0] == "ell" and a[1] is not None and a[1][0] == "comp")) and not has([a], "br"):
            if a not in leaves:
                leaves.append(a)
            continue
        for x in flatten_atoms([a]):
            if x[0] != "num" and x not in leaves:
                leaves.append(x)
    if allow_new and draw(st.integers(0, 3)) == 0:
        new = draw(
            st.sampled_from([("num", 1), ("num", 2), ("cat", [("num", 1), ("num", 1)])] + [("ax", n) for n in extra_names])
        )
        leaves.append(new)
    leaves = list(draw(st.permutations(leaves)))
    out, i = [], 0
    while i < len(leaves):
        if len(leaves) - i >= 2 and draw(st.integers(0, 3)) == 0:
            j = draw(st.integers(i + 1, len(leaves)))
            out.append(("comp", leaves[i:j]))
            i = j
        else:
            out.append(leaves[i])
            i += 1
    return out


def kw_for(draw, exprs, w, p_extra=0.1):
    """Constraints: usually enough to split compositions (all parts but one), sometimes more, sometimes
    fewer (to provoke einx's own "cannot determine" errors); ellipsis names as tuples or one number."""
    kw = {}
    for e in exprs:
        for a in e:
            if a[0] in ("comp", "ell") or (a[0] == "br" and any(c[0] == "comp" for c in a[1])):
                ns = [n for n in names_of([a]) if n not in ELL_NAMES]
                for n in ns[1:] if draw(st.integers(0, 4)) else ns:
                    kw[n] = w.sizes[n]
    for n in NAMES:
        if draw(st.floats(0, 1)) < p_extra / 4:
            kw[n] = w.sizes[n]
    used = {n for e in exprs for n in names_of(e)}
    for n in ELL_NAMES:
        if (n in used or draw(st.integers(0, 5)) == 0) and draw(st.integers(0, 3)) == 0:
            if draw(st.booleans()) and len({w.sizes[f"{n}.{i}"] for i in range(w.reps)}) <= 1:
                kw[n] = w.sizes.get(f"{n}.0", 2)  # one number for every repetition
            else:
                kw[n] = tuple(w.sizes[f"{n}.{i}"] for i in range(w.reps))
    return kw


def perturb(draw, shp):
    """Usually ``shp``; sometimes one dim off by one, or one dim dropped/added (inconsistent shapes)."""
    shp = list(shp)
    r = draw(st.integers(0, 9))
    if r == 0 and shp:
        k = draw(st.integers(0, len(shp) - 1))
        shp[k] += 1
    elif r == 1 and shp:
        shp.pop(draw(st.integers(0, len(shp) - 1)))
    elif r == 2:
        shp.insert(draw(st.integers(0, len(shp))), draw(st.integers(1, 3)))
    return tuple(shp)
