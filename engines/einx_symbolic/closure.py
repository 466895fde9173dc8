"""Closure graphs: what ``build.source`` would generate for a plain elementwise recipe, as closures.

No ``compile()``/``exec``: building one costs a few closures. A recipe
qualifies when it is an elementwise op on arrays of the signature's library
(two or more, no Python scalars, no constraints) whose expressions are plain
axes (no compositions, brackets or numbers, no name twice in one expression),
one output with every input axis in it and nothing else, and whose checks
are equalities of input dims (``d0_0 != d1_0``). The closure then does what
the generated code does, derived from the same pieces: the recipe's checks
in order, raising through the same ``solve.failer``; per input the steps of
``codegen.layout``; the combination of ``codegen.combine``, with the library
function resolved from the adapter's spelling of it.
"""

import operator as _operator

from . import codegen as cg
from .adapters import ADAPTERS, namespace
from .recipe import Plain
from .semantics import FAMILY
from .solve import dim_index, failer
from .tree import Axis

_PYOPS = {"+": _operator.add, "-": _operator.sub, "*": _operator.mul, "/": _operator.truediv}


def _resolve(lib, spec):
    """The library function ``spec`` ("torch.divide", "jnp.add", ...) names in generated code, or None."""
    if not isinstance(spec, str) or "{" in spec or "(" in spec:
        return None
    parts = spec.split(".")
    obj = namespace(lib).get(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
    return obj if callable(obj) else None


def _plain(e):
    """The axis names of a plain expression (distinct, unmarked, named axes), or None."""
    names = []
    for d in e.children:
        if not isinstance(d, Axis) or d.value is not None or d.marked or d.name in names:
            return None
        names.append(d.name)
    return names


def _transform(ad, steps):
    """One input's layout ``steps`` as a callable (None: identity)."""
    if not steps:
        return None
    if len(steps) == 1 and steps[0][0] == "unsqueeze":
        k = steps[0][1]

        def unsqueeze(t):
            return t.unsqueeze(k)

        return unsqueeze
    permute = _resolve(ad.name, ad.permute)
    steps = [(kind, tuple(slice(None) if i == ":" else i for i in a) if kind in ("take", "index") else a) for kind, a in steps]

    def f(t):
        for kind, a in steps:
            if kind == "perm":
                t = permute(t, a)
            elif kind == "unsqueeze":
                t = t.unsqueeze(a)
            else:
                t = t[a]
        return t

    return f


def plain_form(r):
    """The :class:`~.recipe.Plain` form of recipe ``r``: what the recipe states (a plain
    elementwise recipe), else derived from its expressions and checks; None where the
    expressions are not plain axes with one output holding every input axis and nothing
    else, or a check is not an equality of two input dims."""
    if r.plain is not None:
        return r.plain
    if len(r.e_out) != 1:
        return None
    ins, out = [_plain(e) for e in r.e_in], _plain(r.e_out[0])
    if out is None or any(e is None for e in ins) or set(out) != {a for e in ins for a in e}:
        return None
    eqs = []
    for c in r.checks:
        lhs, rhs = dim_index(c.lhs), dim_index(c.rhs)
        if c.kind != "eq" or lhs is None or rhs is None:
            return None
        eqs.append(lhs + rhs)
    return Plain(tuple(map(tuple, ins)), tuple(out), tuple(eqs))


def make(r):
    """The closure graph of recipe ``r``, or None where it does not qualify (see the module doc)."""
    sig = r.sig
    op, lib, n = sig.op, sig.lib, len(sig.ranks)
    ad = ADAPTERS[lib]
    if FAMILY[op] != "elementwise" or n < 2 or sig.scalars or sig.params or sig.libs.count(lib) != n or op not in ad.ops:
        return None
    form = r.plain if r.plain is not None else plain_form(r)
    if form is None:
        return None
    ins, out, checks = form.ins, form.out, form.eqs
    kind, f = cg.combine(ad, op, n)
    if kind == "operator":
        f2, fn_all = _PYOPS[f], None
    else:
        f = _resolve(lib, ad.ops[op])
        if f is None:
            return None
        f2, fn_all = (f, None) if kind == "fold" else (None, f)
    # per input, ``codegen.layout``'s steps (plain forms: no name repeats within one expression)
    unsqueeze, steps = hasattr(ad, "unsqueeze"), []
    for e in ins:
        steps.append(() if e == out else cg.layout(e, out, unsqueeze, distinct=True))
    _fail = failer(r)

    if n == 2 and fn_all is None and (not checks or (len(checks) == 1 and checks[0][::2] == (0, 1))):
        s0, s1 = steps
        if checks and not s0 and len(s1) == 1 and s1[0][0] == "unsqueeze":
            ((_, j0, _, j1),) = checks  # t0.shape[j0] == t1.shape[j1]
            k1 = s1[0][1]
            if f2 is _operator.truediv:  # the report's graph, operator inlined

                def op2(t0, t1):
                    if t0.shape[j0] != t1.shape[j1]:
                        _fail(0, t0.shape[j0], t1.shape[j1])
                    return t0 / t1.unsqueeze(k1)

                return op2

            def op2(t0, t1):
                if t0.shape[j0] != t1.shape[j1]:
                    _fail(0, t0.shape[j0], t1.shape[j1])
                return f2(t0, t1.unsqueeze(k1))

            return op2
        x0, x1 = _transform(ad, s0), _transform(ad, s1)
        if not checks:

            def op2(t0, t1):
                return f2(t0 if x0 is None else x0(t0), t1 if x1 is None else x1(t1))

            return op2
        ((_, j0, _, j1),) = checks

        def op2(t0, t1):
            if t0.shape[j0] != t1.shape[j1]:
                _fail(0, t0.shape[j0], t1.shape[j1])
            return f2(t0 if x0 is None else x0(t0), t1 if x1 is None else x1(t1))

        return op2
    xs = [_transform(ad, s) for s in steps]
    cks = [(k, *c) for k, c in enumerate(checks)]

    def opn(*ts):
        for k, i0, j0, i1, j1 in cks:
            if ts[i0].shape[j0] != ts[i1].shape[j1]:
                _fail(k, ts[i0].shape[j0], ts[i1].shape[j1])
        args = [t if x is None else x(t) for t, x in zip(ts, xs, strict=False)]
        if fn_all is not None:
            return fn_all(*args)
        v = args[0]
        for a in args[1:]:
            v = f2(v, a)
        return v

    return opn
