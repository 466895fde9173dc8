"""The recipe of one signature: what every graph of it is built from (sizes never enter).

A :class:`Signature` is what a call's graph depends on: op, description, array
library, ranks, dtypes, which arguments are Python scalars, the kinds of the
constraints (scalar or tuple length, not their values), static op kwargs and,
only for the static-mode emulation, the input shapes. Its :class:`Recipe`
(:func:`recipe`): parse + family semantics -> ellipsis expansion -> symbolic
solve, i.e. the expanded expressions, every axis size as an expression of
input dims and constraints, and the checks the generated code makes. Plain
elementwise descriptions (``"e d, e -> e d"``) get the same recipe directly
from ``_simple`` (tested to agree with the general path).
"""

import re
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from engines import sizes as sz

from .cse import eliminate
from .errors import InputCountError, SemanticError
from .expand import expand, flatten, leaves
from .semantics import FAMILY, _names_pos, analyse
from .solve import Check, dim_code, size_var, solve
from .tree import Axis, Concat, Flat, List, axes, nodes

_tuple_new = tuple.__new__


class Signature(NamedTuple):
    """Everything a graph depends on; equal signatures share one graph.

    A named tuple: made and hashed in C on a graph's first call. (It shares
    :data:`api.GRAPHS` with call keys, which are tuples too; a key's third item is a
    class, a signature's a library name, so the two never compare equal.)"""

    op: str
    description: str
    lib: str  # the array library of the graph: "torch" | "numpy" | "jax"
    ranks: tuple
    scalars: frozenset  # positions of Python-scalar arguments
    libs: tuple  # library of each argument ("scalar" for Python scalars)
    dtypes: tuple  # each argument's dtype: the library's dtype object, or a Python scalar's type name
    params: tuple = ()  # sorted ((constraint name, None | tuple length), ...)
    static: tuple = ()  # ((op kwarg, value), ...): keepdims, shift
    shapes: tuple | None = None  # the input shapes, for the static-mode emulation only

    def reason(self):
        """Why this signature's graph was built, for the build log."""
        if self.shapes is not None:
            return f"new input shapes {self.shapes}"
        out = f"new signature {self.op}({self.description!r}) on {self.lib}, ranks {self.ranks}, dtypes ({', '.join(map(str, self.dtypes))})"
        if self.params:
            out += f", parameters {dict(self.params)}"
        if self.static:
            out += f", {dict(self.static)}"
        return out


@dataclass
class Recipe:
    sig: Signature
    e_in: list  # expanded input expressions (``List`` of dims)
    e_out: list  # expanded output expressions
    sizes: dict  # axis name -> size (``engines.sizes`` expression of ``d{i}_{j}`` and ``p_*``)
    checks: list  # ``solve.Check`` in the order the graph makes them
    params: dict  # the constraints the description uses: name -> None | tuple length

    #: the :class:`Plain` form where the recipe says it directly (``PlainRecipe``), else None
    plain = None


class Plain(NamedTuple):
    """A description of plain named axes as a closure reads it: the axis names of each
    input and of the one output, and the checks as equalities of input dims
    ``(i0, j0, i1, j1)`` (``t{i0}.shape[j0] == t{i1}.shape[j1]``), in the recipe's order."""

    ins: tuple
    out: tuple
    eqs: tuple


class PlainRecipe(Recipe):
    """The recipe of a plain elementwise description (``_simple``), built from its plan alone.

    The closure graph reads only :attr:`plain`; the expanded expressions, sizes and
    checks (what generated source and error messages read) are derived from the same
    plan on first use, equal to what ``_analyse_solve`` produces (tested). The text
    positions of the axes (``_spans``) are found then too: a closure graph's build
    never reads them."""

    def __init__(self, sig, ins, out, first, eqs):
        self.sig, self.params = sig, {}
        self._ins, self._out = ins, out  # axis names per input / of the output
        self._first = first  # name -> (input, position) of its first occurrence
        self.plain = _tuple_new(Plain, (ins, out, eqs))  # Plain(ins, out, eqs), without the Python-level __new__

    @cached_property
    def _spans(self):
        """``[[span of each axis] per input, [span of each axis] of the output]`` in the description."""
        exprs = [[]]
        for m in _WORD.finditer(self.sig.description):
            t = m.group()
            if t in (",", "->"):
                exprs.append([])
            else:
                exprs[-1].append(m.span())
        return exprs

    @cached_property
    def e_in(self):
        return [
            List([Axis(n, pos=p) for n, p in zip(e, sp, strict=False)]) for e, sp in zip(self._ins, self._spans, strict=False)
        ]

    @cached_property
    def e_out(self):
        return [List([Axis(n, pos=p) for n, p in zip(self._out, self._spans[-1], strict=False)])]

    @cached_property
    def sizes(self):
        return {name: size_var(dim_code(*f)) for name, f in self._first.items()}

    @cached_property
    def checks(self):
        return [
            Check(
                "eq",
                size_var(dim_code(i0, j0)),
                size_var(dim_code(i, j)),
                self._ins[i][j],
                f"args[{i}].shape[{j}]",
                list(range(*self._spans[i][j])),
            )
            for i0, j0, i, j in self.plain.eqs
        ]


def recipe(sig):
    """The :class:`Recipe` of ``sig`` (raises the einx error of a description that cannot work)."""
    fam = FAMILY[sig.op]
    if fam == "elementwise":
        r = _simple(sig)
        if r is not None:
            return r
    return _analyse_solve(sig)


def _s(n):
    return "s" if n != 1 else ""


def _analyse_solve(sig):
    """The general path: parse + family semantics -> ellipsis expansion -> symbolic solve."""
    op, desc, ranks, fam = sig.op, sig.description, sig.ranks, FAMILY[sig.op]
    ins, outs = analyse(desc, op, keepdims=bool(dict(sig.static).get("keepdims")))
    if len(ins) != len(ranks):
        raise InputCountError(
            desc,
            f"The operation is defined with {len(ins)} input expression{_s(len(ins))}, but "
            f"{len(ranks)} input tensor{_s(len(ranks))} {'are' if len(ranks) != 1 else 'is'} given as "
            f"argument{_s(len(ranks))}.\n%EXPR%",
            [i for i, ch in enumerate(desc) if ch == ","],
        )
    used = {a.name for e in ins + outs for a in axes(e)}
    params = {k: v for k, v in sig.params if k in used}
    trees, reps = expand(desc, ins + outs, list(ranks) + [None] * len(outs), params)
    fixed = {
        a.name for t in trees for a in nodes(t) if isinstance(a, Axis) and a.value is None and a.name.split(".")[0] in params
    }
    exp = [flatten(t) for t in eliminate(trees, fixed)]
    e_in, e_out = exp[: len(ins)], exp[len(ins) :]
    # einx checks these after it has solved the sizes: a size error wins, so they fail in the graph, after its checks
    deferred = []
    extra = _family_checks(desc, fam, e_in, e_out, deferred)
    if op in ("sort", "argsort"):
        try:
            sort_check(desc, e_in, e_out)
        except SemanticError as e:
            deferred.append(e)
    read = [None if lib == "factory" else e for e, lib in zip(e_in, sig.libs, strict=False)]  # a factory's dims are not read
    sizes, checks = solve(desc, read, exp, params, extra, reps)
    if fam == "id":
        _match_pieces(desc, e_in, e_out, sizes, checks, ins + outs, deferred)

    # Unmarked input axes that vanish from the output must have size 1 (einx rejects anything else)
    if fam != "update_at":
        out_names = {a.name for e in e_out for a in leaves(e) if not a.marked}
        gone = []
        for e in e_in:
            for a in leaves(e):
                if not a.marked and a.name not in out_names and a.name not in gone:
                    s = sz.const(a.value) if a.value is not None else sizes[a.name]
                    if s == 1:
                        continue
                    gone.append(a.name)
                    if s.is_const or a.value is not None:
                        deferred.append(
                            SemanticError(
                                desc,
                                f"The input axes {{{a.name!r}}} must appear in the output expression.\n%EXPR%",
                                _names_pos(ins + outs, {a.name}),
                            )
                        )
                        continue
                    checks.append(Check("one", s, sz.const(1), a.name, "its size", _names_pos(ins + outs, {a.name})))
    checks += [Check("raise", sz.const(0), sz.const(0), e, "", e.pos) for e in deferred[:1]]
    return Recipe(sig, e_in, e_out, sizes, checks, params)


# the tokens of a plain description (``PlainRecipe._spans``): names, "," and "->"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|,|->")


def _plan(desc, ranks):
    """Plain named axes: ``(ins, out, first, eqs)`` or None: the axis names of each input and
    of the output, each name's first ``(input, position)``, and the equalities of input dims
    ``(i0, j0, i1, j1)`` that later occurrences impose, in order.

    Accepts exactly what ``_simple`` accepts (it is built on this): ASCII names
    separated by spaces, one ``->``, one output, ranks matching, no repeated name
    within an expression, every input axis in the output and vice versa. Plain string,
    tuple and dict operations in one pass (a graph's first call pays for every line run here)."""
    parts = desc.split("->")
    # printable ASCII: its only whitespace is " ", so ``split()`` splits exactly at spaces
    if len(parts) != 2 or "," in parts[1] or not (desc.isascii() and desc.isprintable()):
        return None
    exprs = parts[0].split(",")
    if len(exprs) != len(ranks):
        return None
    ins, first, eqs = [], {}, []
    for i, e in enumerate(exprs):
        e = tuple(e.split())
        if not e or len(e) != ranks[i]:
            return None
        for j, name in enumerate(e):
            f = first.setdefault(name, (i, j))
            if f[0] == i:
                if f[1] != j:  # a name twice in one expression
                    return None
            else:
                eqs.append(f + (i, j))
        ins.append(e)
    out = tuple(parts[1].split())
    if len(out) != len(first) or first.keys() != set(out):  # the input names, each once
        return None
    for name in out:
        if not name.isidentifier():
            return None
    return tuple(ins), out, first, tuple(eqs)


def _simple(sig):
    """The recipe of an elementwise op on plain named axes (a :class:`PlainRecipe`), or None.

    Produces exactly what ``_analyse_solve`` produces for such descriptions (same
    expanded expressions, sizes and checks, in the same order; tested), when every
    input axis appears in the output, every output axis in some input, no name
    repeats within an expression, ranks match, and there are no constraints or
    scalars.  Anything else (including every case that raises) takes the general path.
    """
    desc = sig.description
    if sig.params or sig.scalars or not isinstance(desc, str):
        return None
    plan = _plan(desc, sig.ranks)
    return None if plan is None else PlainRecipe(sig, *plan)


def _pieces(dims):
    """The axis names of each piece of an expression once its concatenations are split."""
    flat = []
    for d in dims:
        flat.extend(d.inner.children if isinstance(d, Flat) else [d])
    for j, d in enumerate(flat):
        if isinstance(d, Concat):
            return [p for c in d.children for p in _pieces(flat[:j] + [c] + flat[j + 1 :])]
        if isinstance(d, Flat):
            return _pieces(flat[:j] + d.inner.children + flat[j + 1 :])
    return [leaves(flat)]


def _match_pieces(desc, e_in, e_out, sizes, checks, trees, deferred):
    """einx's ``id``: the k-th input piece's axes (of size other than 1) must be in the k-th output piece."""
    pin = [p for e in e_in for p in _pieces(e.children)]
    pout = [p for e in e_out for p in _pieces(e.children)]
    if len(pin) != len(pout):
        deferred.append(
            SemanticError(
                desc,
                "The number of input and output expressions (after decomposition of axis concatenations) "
                f"must be the same, but got {len(pin)} input{_s(len(pin))} and {len(pout)} output{_s(len(pout))}.\n%EXPR%",
            )
        )
        return
    if len(pin) == len(e_in) and len(pout) == len(e_out):
        return  # without concatenations the global check covers it
    for k, (a, b) in enumerate(zip(pin, pout, strict=False)):
        names = {x.name for x in b}
        for x in a:
            if x.name in names:
                continue
            s = sz.const(x.value) if x.value is not None else sizes[x.name]
            if s == 1:
                continue
            if s.is_const:
                deferred.append(
                    SemanticError(
                        desc,
                        f"The {_ORD(k)} input expression is not compatible with the {_ORD(k)} output "
                        "expression (after decomposition of axis concatenations).\n%EXPR%",
                        _names_pos(trees, {x.name}),
                    )
                )
                continue
            checks.append(Check("one", s, sz.const(1), x.name, "its size", _names_pos(trees, {x.name})))


def _ORD(k):
    return {0: "1st", 1: "2nd", 2: "3rd"}.get(k, f"{k + 1}th")


def _marked(e):
    return [a for a in leaves(e) if a.marked]


def _family_checks(desc, fam, e_in, e_out, deferred):
    """Name-based checks of einx (after expansion) and extra size equations; ``deferred`` receives
    the errors einx raises only once the sizes are solved."""
    allx = e_in + e_out
    extra = []
    if fam == "dot":
        if len(e_in) < 2:
            raise SemanticError(
                desc, f"The dot operation requires at least 2 input expressions, but only {len(e_in)} is given.\n%EXPR%"
            )
        bad = sorted({a.name for e in e_in for a in _marked(e) if sum(a.name in {b.name for b in leaves(f)} for f in e_in) != 2})
        if bad:
            deferred.append(
                SemanticError(desc, "All contracted axes must appear in exactly two input expressions.\n%EXPR%", _pos(allx, bad))
            )
    if fam == "get_at" or fam == "update_at":
        if len(e_in) < 2:
            n = "2" if fam == "get_at" else "3"
            raise SemanticError(desc, f"The operation expects at least {n} input expressions, but found {len(e_in)}.\n%EXPR%")
        coords = e_in[1:] if fam == "get_at" else e_in[1:-1]
        caxes = []
        for c in coords:
            m = _marked(c)
            if len({a.name for a in m}) > 1 or len(m) > 1:
                raise SemanticError(
                    desc,
                    "Each coordinate expression must contain at most one axis in brackets.\n%EXPR%",
                    _pos(allx, [a.name for a in m]),
                )
            caxes.append(m[0] if m else Axis("unnamed.coord", 1))
        n = len(_marked(e_in[0]))
        if fam == "update_at":
            tin = {a.name for a in _marked(e_in[0])}
            tout = {a.name for a in _marked(e_out[0])}
            if tin != tout:
                raise SemanticError(
                    desc,
                    "The first input and output expressions must have the same set of axes in brackets.\n%EXPR%",
                    _pos(allx, tin ^ tout),
                )
            inter = tin & {a.name for e in e_in[1:] for a in _marked(e)}
            if inter:
                raise SemanticError(
                    desc,
                    "Axes may not appear in brackets both in the first input tensor and in a coordinate or update "
                    "expression.\n%EXPR%",
                    _pos(allx, inter),
                )
        fixed = sum(a.value for a in caxes if a.value is not None)
        free = [a for a in caxes if a.value is None]
        if not free and fixed != n:
            raise SemanticError(
                desc,
                "The number of coordinates must match the number of axes in brackets in the first input expression.\n%EXPR%",
                _pos(allx, [a.name for a in _marked(e_in[0])]),
            )
        if len(free) == 1 or (free and n - fixed == len(free)):
            # the coordinate axes' lengths are numbers then (the graph indexes each coordinate): the one free one has the
            # rest; several have one each (einx's sizes are >= 1), e.g. "[h v], p [n], p [m]"; each an equation of its own
            extra += [(a, sz.const(n - fixed if len(free) == 1 else 1), "number of marked axes of the 1st input") for a in free]
        elif free:  # several free ones sharing more coordinates than they are: a split only the shapes decide
            extra.append((Concat(caxes), sz.const(n), "number of marked axes of the 1st input"))
    if fam == "argfind":
        mi, mo = _marked(e_in[0]), _marked(e_out[0])
        if len(mo) > 1:
            raise SemanticError(
                desc, "The output expression must contain at most one axis in brackets.\n%EXPR%", _pos(allx, [a.name for a in mo])
            )
        if not mo and len(mi) != 1:
            raise SemanticError(
                desc,
                "If no axis is marked with brackets in the output expression, exactly one axis must be marked in the "
                f"input expression, but found {len(mi)} marked axes.\n%EXPR%",
                _pos(allx, [a.name for a in mi]),
            )
        if mo:
            if mo[0].value is not None and mo[0].value != len(mi):
                raise SemanticError(
                    desc,
                    f"The value of the marked axis in the output expression ({mo[0].value}) must match the number of "
                    f"marked axes in the input expression ({len(mi)}).\n%EXPR%",
                    _pos(allx, [mo[0].name] + [a.name for a in mi]),
                )
            extra.append((mo[0], sz.const(len(mi)), "number of marked input axes"))
    return extra


def _pos(exprs, names):
    names = set(names)
    return [p for e in exprs for a in leaves(e) if a.name in names and a.pos[0] >= 0 for p in range(*a.pos)]


def sort_check(desc, e_in, e_out):
    for e in e_in + e_out:
        m = [a.name for a in leaves(e) if a.marked]
        if len(m) != 1:
            raise SemanticError(
                desc,
                "The expression for this operation must contain exactly one axis in brackets.\n%EXPR%",
                _pos(e_in + e_out, m),
            )
