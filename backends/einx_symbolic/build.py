"""Build one graph for one signature: analyse -> expand -> solve -> generate -> exec (or closures, see ``_closure``)."""
import operator as _operator
import re

from backends import sizes as sz

from . import codegen as cg
from .backends import ADAPTERS, namespace
from .errors import AxisSizeError, SemanticError
from .expand import expand, leaves
from .semantics import FAMILY, _names_pos, analyse
from .solve import Check, dim_code, param_code, solve
from .tree import Axis, Concat, List, axes

COUNT = [0]
_DIM = re.compile(r"\bd\d+_\d+\b")
_IMPORTS = {"torch": [("torch", "import torch")], "numpy": [("np", "import numpy as np")],
            "jax": [("jax", "import jax"), ("jnp", "import jax.numpy as jnp")]}


def _s(n):
    return "s" if n != 1 else ""


def build(op, desc, lib, ranks, scalars, libs, params, static):
    """Return ``(function, source)``. ``params``: {name: None | tuple length}; ``static``: op kwargs."""
    fam = FAMILY[op]
    if fam == "elementwise" and not params and not scalars and isinstance(desc, str):
        plan = _plan(desc, ranks, libs, lib)
        if plan is not None:
            fn = _closure(op, desc, lib, plan)
            if fn is not None:
                COUNT[0] += 1
                # the source text (``graph=True``, error messages) is generated on first use only
                return [fn, None, lambda: _source(op, desc, fam, lib, ranks, scalars, libs, {}, static,
                                                  *_simple(desc, fam, ranks, scalars, libs, lib, {}))[0]]
    simple = _simple(desc, fam, ranks, scalars, libs, lib, params) if fam == "elementwise" else None
    if simple is not None:
        e_in, e_out, sizes, checks = simple
    else:
        e_in, e_out, sizes, checks, params = _analyse_solve(op, desc, fam, ranks, params, static)
    return _generate(op, desc, fam, lib, ranks, scalars, libs, params, static, e_in, e_out, sizes, checks)


def _analyse_solve(op, desc, fam, ranks, params, static):
    """The general path: parse + family semantics -> ellipsis expansion -> symbolic solve."""
    ins, outs = analyse(desc, op, keepdims=bool(static.get("keepdims")))
    if len(ins) != len(ranks):
        raise ValueError(f"The operation is defined with {len(ins)} input expression{_s(len(ins))}, but {len(ranks)} input "
                         f"tensor{_s(len(ranks))} {'are' if len(ranks) != 1 else 'is'} given as argument{_s(len(ranks))}.")
    used = {a.name for e in ins + outs for a in axes(e)}
    params = {k: v for k, v in params.items() if k in used}
    exp, reps = expand(desc, ins + outs, list(ranks) + [None] * len(outs), params)
    e_in, e_out = exp[:len(ins)], exp[len(ins):]
    extra = _family_checks(desc, fam, e_in, e_out)
    if op in ("sort", "argsort"):
        sort_check(desc, e_in, e_out)
    sizes, checks = solve(desc, e_in, exp, params, extra)

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
                    if s.is_const or a.value is not None:
                        raise SemanticError(desc, f"The input axes {{{a.name!r}}} must appear in the output expression.\n%EXPR%",
                                            _names_pos(ins + outs, {a.name}))
                    gone.append(a.name)
                    checks.append(Check("one", s, sz.const(1), a.name, "its size", _names_pos(ins + outs, {a.name})))
    return e_in, e_out, sizes, checks, params


# Plain named axes only: "a b, b -> a b" (ASCII names, single spaces or more, one '->')
_TOK = r"[A-Za-z_][A-Za-z0-9_]*"
_SEXPR = rf" *{_TOK}(?: +{_TOK})* *"
_SIMPLE = re.compile(rf"{_SEXPR}(?:,{_SEXPR})*->{_SEXPR}")
_WORD = re.compile(rf"{_TOK}|,|->")


def _plan(desc, ranks, libs, lib):
    """Plain named axes: ``([[(name, span), ...] per input], [(name, span), ...] of the output)`` or None.

    Accepts exactly what ``_simple`` accepts (it is built on this): one output, ranks
    matching, no repeated name within an expression, every input axis in the output
    and vice versa, all arguments of library ``lib``."""
    if _SIMPLE.fullmatch(desc) is None:
        return None
    exprs, cur = [[]], None
    for m in _WORD.finditer(desc):
        t = m.group()
        if t == ",":
            exprs.append([])
        elif t == "->":
            if cur is not None:
                return None
            cur = len(exprs)
            exprs.append([])
        else:
            exprs[-1].append((t, m.span()))
    ins, outs = exprs[:cur], exprs[cur:]
    if len(outs) != 1 or len(ins) != len(ranks) or any(l != lib for l in libs):
        return None
    seen = set()
    for e, r in zip(ins, ranks):
        names = {a[0] for a in e}
        if len(e) != r or len(names) != r:
            return None
        seen |= names
    out = {a[0] for a in outs[0]}
    if len(out) != len(outs[0]) or out != seen:
        return None
    return ins, outs[0]


def _simple(desc, fam, ranks, scalars, libs, lib, params):
    """Fast path for elementwise ops on plain named axes, or None.

    Produces exactly what ``_analyse_solve`` produces for such descriptions (same
    expanded expressions, sizes and checks, in the same order; tested), when every
    input axis appears in the output, every output axis in some input, no name
    repeats within an expression, ranks match, and there are no constraints or
    scalars.  Anything else (including every case that raises) takes the general path.
    """
    if params or scalars or not isinstance(desc, str):
        return None
    plan = _plan(desc, ranks, libs, lib)
    if plan is None:
        return None
    ins, out = plan
    sizes, checks = {}, []
    for i, e in enumerate(ins):
        for j, (name, pos) in enumerate(e):
            v = sz.var(dim_code(i, j))
            s = sizes.get(name)
            if s is None:
                sizes[name] = v
            else:
                checks.append(Check("eq", s, v, name, f"args[{i}].shape[{j}]", list(range(*pos))))
    return [List([Axis(n, pos=p) for n, p in e]) for e in ins], [List([Axis(n, pos=p) for n, p in out])], sizes, checks


def _generate(op, desc, fam, lib, ranks, scalars, libs, params, static, e_in, e_out, sizes, checks):
    src, checks = _source(op, desc, fam, lib, ranks, scalars, libs, params, static, e_in, e_out, sizes, checks)
    _fail = _failer(desc, checks)
    ns = dict(namespace(lib))
    ns["_fail"] = _fail
    exec(compile(src, f"<einx_symbolic {op} {desc!r}>", "exec"), ns)
    COUNT[0] += 1
    fn = ns["op"]
    fn.__einx_source__ = src
    return fn, src


def _source(op, desc, fam, lib, ranks, scalars, libs, params, static, e_in, e_out, sizes, checks):
    """``(source text, checks)`` of the graph; ``_fail(k, lhs, rhs)`` in it raises for ``checks[k]``."""
    ad = ADAPTERS[lib]
    g = cg.Gen(desc, ad, sizes)
    if fam == "id":
        res = cg.gen_id(g, e_in, e_out)
    elif fam == "elementwise":
        res = cg.gen_elementwise(g, op, e_in, e_out, scalars)
    elif fam == "reduce":
        res = cg.gen_reduce(g, op, e_in, e_out)
    elif fam == "dot":
        res = cg.gen_dot(g, e_in, e_out)
    elif fam == "preserve":
        res = cg.gen_preserve(g, op, e_in, e_out, static.get("shift"))
    elif fam == "argfind":
        res = cg.gen_argfind(g, op, e_in, e_out)
    elif fam == "get_at":
        res = cg.gen_get_at(g, e_in, e_out)
    else:
        res = cg.gen_update_at(g, op, e_in, e_out)

    # -- assemble source -----------------------------------------------------
    args = [f"t{i}" for i in range(len(ranks))]
    conds = []
    for k, c in enumerate(checks):
        cond = _condition(c)
        if cond is not None:
            conds.append(f"if {cond}: _fail({k}, {sz.source(c.lhs)}, {sz.source(c.rhs)})")
    # read only the dims the code uses (the rank is part of the signature, so it needs no run-time check)
    # a tensor whose dims only one check reads: read them there (t0.shape[0] is a postfix expression, safe to substitute)
    used = set(_DIM.findall("\n".join(conds + g.lines + res)))
    in_body = set(_DIM.findall("\n".join(g.lines + res)))
    head = []
    inline = {}
    for i, r in enumerate(ranks):
        if libs[i] not in (lib, "scalar"):
            head.append(f"t{i} = {ad.to_array(f't{i}')}")
        elif libs[i] == "scalar" and i not in scalars:
            head.append(f"t{i} = {ad.to_array(f't{i}')}")
        ds = [dim_code(i, j) for j in range(r)]
        if not any(d in in_body for d in ds) and sum(any(d in c for d in ds if d in used) for c in conds) <= 1:
            inline.update((d, f"t{i}.shape[{j}]") for j, d in enumerate(ds) if d in used)
        elif any(d in used for d in ds):
            head.append(f"{', '.join(d if d in used else '_' for d in ds)}{',' if r == 1 else ''} = t{i}.shape")
    if inline:
        conds = [_DIM.sub(lambda m: inline.get(m.group(), m.group()), c) for c in conds]
    for name, shape in params.items():
        if shape is None:
            head.append(f"{param_code(name)} = P[{name!r}]")
        else:
            for k in range(shape):
                head.append(f"{param_code(name, k)} = P[{name!r}][{k}]")
    head += conds
    sig = ", ".join(args + (["P=None"] if params else []))
    lines = list(g.lines)
    if len(res) == 1 and lines and lines[-1].startswith(res[0] + " = "):  # "v = x; return v" -> "return x"
        ret = lines.pop()[len(res[0]) + 3:]
    else:
        ret = res[0] if len(res) == 1 else "(" + ", ".join(res) + ",)"
    body = head + lines + [f"return {ret}"]
    text = "".join(f"    {line}\n" for line in body)
    # the library is a global of the generated code; the import line documents it (only when used)
    imports = "".join(line + "\n" for mod, line in _IMPORTS[lib] if mod + "." in text)
    src = imports + f"def op({sig}):\n" + text
    return src, checks


def _condition(c):
    """Python source that is true when check ``c`` fails, or None when it evidently holds."""
    lhs = sz.source(c.lhs)
    if c.kind == "eq":
        return f"{lhs} != {sz.source(c.rhs)}"  # comparisons bind looser than arithmetic: no brackets needed
    if c.kind == "one":
        return f"{lhs} != 1"
    if c.kind == "nonneg":
        return f"{lhs} < 0"
    # "div": lhs % rhs != 0, and a zero divisor fails too
    if c.rhs.is_const:
        if c.rhs == 0:
            return "True"
        zero = []
    else:
        zero = [f"{sz.source(c.rhs)} == 0"]
    rem = c.lhs % c.rhs  # normal form (a symbolic divisor assumed nonzero: the test before it)
    return " or ".join(zero + ([] if rem == 0 else [f"{sz.source(rem)} != 0"])) or None


def _failer(desc, checks):
    """The ``_fail(k, lhs, rhs)`` of generated code: raise the error of ``checks[k]`` for sizes lhs, rhs."""
    def _fail(k, lhs, rhs, _checks=checks, _desc=desc):
        c = _checks[k]
        if c.kind == "one":
            raise SemanticError(_desc, f"The input axes {{{c.what!r}}} must appear in the output expression (its size is {lhs}, "
                                "only axes of size 1 may be dropped).\n%EXPR%", c.pos)
        if c.kind == "div":
            raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                                f"{c.what} = {c.where} = {lhs} is not divisible by {sz.source(c.rhs)} = {rhs}.\n%EXPR%", c.pos)
        if c.kind == "nonneg":
            raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                                f"axis {c.what} = {c.where} = {lhs} would be negative.\n%EXPR%", c.pos)
        raise AxisSizeError(_desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                            f"{c.what} = {sz.source(c.lhs)} = {lhs}, but {c.where} = {rhs}.\n%EXPR%", c.pos)
    return _fail


def _marked(e):
    return [a for a in leaves(e) if a.marked]


def _family_checks(desc, fam, e_in, e_out):
    """Name-based checks of einx (after expansion) and extra size equations."""
    allx = e_in + e_out
    extra = []
    if fam == "dot":
        if len(e_in) < 2:
            raise SemanticError(desc, f"The dot operation requires at least 2 input expressions, but only {len(e_in)} is given.\n%EXPR%")
        bad = sorted({a.name for e in e_in for a in _marked(e)
                      if sum(a.name in {b.name for b in leaves(f)} for f in e_in) != 2})
        if bad:
            raise SemanticError(desc, "All contracted axes must appear in exactly two input expressions.\n%EXPR%", _pos(allx, bad))
    if fam == "get_at" or fam == "update_at":
        if len(e_in) < 2:
            n = "2" if fam == "get_at" else "3"
            raise SemanticError(desc, f"The operation expects at least {n} input expressions, but found {len(e_in)}.\n%EXPR%")
        coords = e_in[1:] if fam == "get_at" else e_in[1:-1]
        caxes = []
        for c in coords:
            m = _marked(c)
            if len({a.name for a in m}) > 1 or len(m) > 1:
                raise SemanticError(desc, "Each coordinate expression must contain at most one axis in brackets.\n%EXPR%",
                                    _pos(allx, [a.name for a in m]))
            caxes.append(m[0] if m else Axis("unnamed.coord", 1))
        n = len(_marked(e_in[0]))
        if fam == "update_at":
            tin = {a.name for a in _marked(e_in[0])}
            tout = {a.name for a in _marked(e_out[0])}
            if tin != tout:
                raise SemanticError(desc, "The first input and output expressions must have the same set of axes in brackets.\n%EXPR%",
                                    _pos(allx, tin ^ tout))
            inter = tin & {a.name for e in e_in[1:] for a in _marked(e)}
            if inter:
                raise SemanticError(desc, "Axes may not appear in brackets both in the first input tensor and in a coordinate or update "
                                    "expression.\n%EXPR%", _pos(allx, inter))
        fixed = sum(a.value for a in caxes if a.value is not None)
        free = [a for a in caxes if a.value is None]
        if not free and fixed != n:
            raise SemanticError(desc, "The number of coordinates must match the number of axes in brackets in the first input expression.\n%EXPR%",
                                _pos(allx, [a.name for a in _marked(e_in[0])]))
        if free:
            extra.append((Concat(caxes) if len(caxes) > 1 else caxes[0], sz.const(n), "number of marked axes of the 1st input"))
    if fam == "argfind":
        mi, mo = _marked(e_in[0]), _marked(e_out[0])
        if len(mo) > 1:
            raise SemanticError(desc, "The output expression must contain at most one axis in brackets.\n%EXPR%", _pos(allx, [a.name for a in mo]))
        if not mo and len(mi) != 1:
            raise SemanticError(desc, "If no axis is marked with brackets in the output expression, exactly one axis must be marked in the "
                                f"input expression, but found {len(mi)} marked axes.\n%EXPR%", _pos(allx, [a.name for a in mi]))
        if mo:
            if mo[0].value is not None and mo[0].value != len(mi):
                raise SemanticError(desc, f"The value of the marked axis in the output expression ({mo[0].value}) must match the number of "
                                    f"marked axes in the input expression ({len(mi)}).\n%EXPR%", _pos(allx, [mo[0].name] + [a.name for a in mi]))
            extra.append((mo[0], sz.const(len(mi)), "number of marked input axes"))
    return extra


def _pos(exprs, names):
    names = set(names)
    return [p for e in exprs for a in leaves(e) if a.name in names and a.pos[0] >= 0 for p in range(*a.pos)]


def sort_check(desc, e_in, e_out):
    for e in e_in + e_out:
        m = [a.name for a in leaves(e) if a.marked]
        if len(m) != 1:
            raise SemanticError(desc, "The expression for this operation must contain exactly one axis in brackets.\n%EXPR%", _pos(e_in + e_out, m))


# -- closure graphs for the plain-axis elementwise path (no compile()/exec) -----------------
_PYOPS = {"+": _operator.add, "-": _operator.sub, "*": _operator.mul, "/": _operator.truediv}
_CHAINED = ("add", "multiply", "logaddexp", "logical_and", "logical_or", "maximum", "minimum")


def _resolve(lib, spec):
    """The library function ``spec`` ("torch.divide", "jnp.add", ...) names in generated code, or None."""
    if not isinstance(spec, str) or "{" in spec or "(" in spec:
        return None
    parts = spec.split(".")
    obj = namespace(lib).get(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
    return obj if callable(obj) else None


def _transform(lib, names_in, names_out):
    """What ``codegen.Gen.align(..., broadcast=False)`` emits for one input, as a callable (None: identity)."""
    perm = [names_in.index(n) for n in names_out if n in names_in]
    steps = []
    if perm != list(range(len(perm))):
        steps.append(("perm", tuple(perm)))
    if len(names_in) < len(names_out):
        new = [k for k, n in enumerate(names_out) if n not in names_in]
        if lib == "torch" and len(new) <= 2:
            steps.extend(("unsqueeze", k) for k in new)
        else:
            idx = [slice(None) if n in names_in else None for n in names_out]
            while idx and idx[-1] is not None:
                idx.pop()
            steps.append(("index", tuple(idx)))
    if not steps:
        return None
    if len(steps) == 1 and steps[0][0] == "unsqueeze":
        k = steps[0][1]

        def unsqueeze(t):
            return t.unsqueeze(k)
        unsqueeze.unsqueeze_dim = k
        return unsqueeze
    permute = {"torch": "torch.permute", "numpy": "np.transpose", "jax": "jnp.transpose"}[lib]
    permute = _resolve(lib, permute)

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


def _closure(op, desc, lib, plan):
    """The graph of ``_generate`` for a ``_plan`` (plain axes, >= 2 array inputs) as closures, or None.

    Same checks in the same order (``_fail`` raises the same errors), the same
    per-input layout ops and the same library calls / operators in the same order."""
    ins, out = plan
    n = len(ins)
    ad = ADAPTERS[lib]
    if n < 2 or op not in ad.ops:
        return None
    out_names = [a[0] for a in out]
    first, checks = {}, []
    for i, e in enumerate(ins):
        for j, (name, span) in enumerate(e):
            p = first.get(name)
            if p is None:
                first[name] = (i, j)
            else:
                checks.append((p[0], p[1], i, j, name, span))
    xs = [_transform(lib, [a[0] for a in e], out_names) for e in ins]

    sym = getattr(ad, "binop", {}).get(op)
    if sym is not None and (n == 2 or op in ("add", "multiply")):
        f2, fn_all = _PYOPS[sym], None
    else:
        f = _resolve(lib, ad.ops[op])
        if f is None:
            return None
        f2, fn_all = (f, None) if op in _CHAINED else (None, f)

    def _fail(k, lhs, rhs):
        i0, j0, i1, j1, name, span = checks[k]
        raise AxisSizeError(desc, f"Failed to determine the size of all axes in the expression under the given constraints: "
                            f"{name} = {dim_code(i0, j0)} = {lhs}, but args[{i1}].shape[{j1}] = {rhs}.\n%EXPR%", list(range(*span)))

    if n == 2 and fn_all is None and len(checks) <= 1:
        x0, x1 = xs
        if not checks:
            def op2(t0, t1):
                return f2(t0 if x0 is None else x0(t0), t1 if x1 is None else x1(t1))
            return op2
        (_, j0, _, j1, _, _), = checks
        k1 = getattr(x1, "unsqueeze_dim", None)
        if x0 is None and k1 is not None and f2 is _operator.truediv:  # the report's graph, operator inlined
            def op2(t0, t1):
                if t0.shape[j0] != t1.shape[j1]:
                    _fail(0, t0.shape[j0], t1.shape[j1])
                return t0 / t1.unsqueeze(k1)
            return op2
        if x0 is None and k1 is not None:
            def op2(t0, t1):
                if t0.shape[j0] != t1.shape[j1]:
                    _fail(0, t0.shape[j0], t1.shape[j1])
                return f2(t0, t1.unsqueeze(k1))
            return op2

        def op2(t0, t1):
            if t0.shape[j0] != t1.shape[j1]:
                _fail(0, t0.shape[j0], t1.shape[j1])
            return f2(t0 if x0 is None else x0(t0), t1 if x1 is None else x1(t1))
        return op2
    cks = [(k, c[0], c[1], c[2], c[3]) for k, c in enumerate(checks)]

    def opn(*ts):
        for k, i0, j0, i1, j1 in cks:
            if ts[i0].shape[j0] != ts[i1].shape[j1]:
                _fail(k, ts[i0].shape[j0], ts[i1].shape[j1])
        args = [t if x is None else x(t) for t, x in zip(ts, xs)]
        if fn_all is not None:
            return fn_all(*args)
        v = args[0]
        for a in args[1:]:
            v = f2(v, a)
        return v
    return opn
