"""One graph per recipe: Python closures or generated source, exec'd.

:func:`build` makes the :class:`Graph` of a signature: its recipe
(``recipe.py``), then closures (``closure.py``, no ``compile()``/``exec``)
where the recipe is plain elementwise, else the generated :func:`source`,
exec'd. A closure graph generates its source text only when asked (``graph=True``,
or quoted by ``CallOperationError``).
"""

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as _np

from engines import sizes as sz

from . import closure
from . import codegen as cg
from . import codegen_index as cg_index
from .adapters import ADAPTERS, namespace
from .errors import NotSupportedError, OpValueError
from .recipe import Recipe, recipe
from .semantics import FAMILY
from .solve import dim_code, failer, isolve, param_code, ssolve

_DIM = re.compile(r"\bd\d+_\d+\b")
_IMPORTS = {
    "torch": [("torch", "import torch")],
    "numpy": [("np", "import numpy as np")],
    "jax": [("jax", "import jax"), ("jnp", "import jax.numpy as jnp")],
}


@dataclass(eq=False, slots=True)
class Graph:
    """The graph of one signature: ``fn(*arrays, P=constraints)`` and its source text."""

    fn: Callable
    recipe: Recipe
    text: str | None = None  # the source, once generated

    @property
    def signature(self):
        return self.recipe.sig

    @property
    def source(self):
        if self.text is None:
            self.text = source(self.recipe)
        return self.text


def build(sig):
    """The :class:`Graph` of signature ``sig`` (raises the einx error of a call that cannot work)."""
    r = recipe(sig)
    fn = closure.make(r)
    return Graph(fn, r) if fn is not None else generated(r)


def generated(r):
    """The graph of recipe ``r`` as generated source, exec'd."""
    text = source(r)
    ns = dict(namespace(r.sig.lib))
    ns["_fail"] = failer(r)
    ns["_factory"] = _factory if r.sig.lib not in _ARRAY else functools.partial(_factory, array=_ARRAY[r.sig.lib]())
    ns["_isolve"] = isolve
    ns["_ssolve"] = ssolve
    ns["_OpValueError"] = OpValueError
    ns["_NotSupportedError"] = NotSupportedError
    exec(compile(text, f"<einx_symbolic {r.sig.op} {r.sig.description!r}>", "exec"), ns)
    return Graph(ns["op"], r, text)


#: the array class a tensor factory must return, per library (einx checks it too: a NumPy scalar is refused)
_ARRAY = {"numpy": lambda: _np.ndarray, "torch": lambda: __import__("torch").Tensor, "jax": lambda: __import__("jax").Array}


def _factory(f, shape, i, array=None):
    """Call tensor factory ``f`` (argument ``i``) with its solved ``shape``, as einx does, and check what it returns."""
    t = f(shape)
    if array is not None and not isinstance(t, array):
        raise ValueError(
            f"The tensor factory given as argument {i} returned {type(t).__name__}, expected {array.__module__}.{array.__name__}."
        )
    if tuple(getattr(t, "shape", (None,))) != shape:
        raise ValueError(
            f"The tensor factory given as argument {i} returned {type(t).__name__} of shape "
            f"{tuple(getattr(t, 'shape', ()))}, expected an array of shape {shape}."
        )
    return t


def source(r):
    """The Python source of the graph of recipe ``r``: ``def op(t0, ..., P=None)``; the
    ``_fail(k, lhs, rhs)`` it calls raises the error of ``r.checks[k]``."""
    sig, e_in, e_out, checks, params = r.sig, r.e_in, r.e_out, r.checks, r.params
    op, lib, ranks, scalars, libs, fam = sig.op, sig.lib, sig.ranks, sig.scalars, sig.libs, FAMILY[sig.op]
    ad = ADAPTERS[lib]
    g = cg.Gen(sig.description, ad, r.sizes)
    if any(c.kind == "raise" for c in checks):  # the graph raises einx's error after its checks: no body
        res = ["None"]
    elif fam == "id":
        res = cg.gen_id(g, e_in, e_out, scalars)
    elif fam == "elementwise":
        res = cg.gen_elementwise(g, op, e_in, e_out, scalars)
    elif fam == "reduce":
        res = cg.gen_reduce(g, op, e_in, e_out)
    elif fam == "dot":
        res = cg.gen_dot(g, e_in, e_out)
    elif fam == "preserve":
        res = cg.gen_preserve(g, op, e_in, e_out, dict(sig.static).get("shift"))
    elif fam == "argfind":
        res = cg_index.gen_argfind(g, op, e_in, e_out)
    elif fam == "get_at":
        res = cg_index.gen_get_at(g, e_in, e_out)
    else:
        res = cg_index.gen_update_at(g, op, e_in, e_out)

    # -- assemble source -----------------------------------------------------
    args = [f"t{i}" for i in range(len(ranks))]
    conds = []
    for k, c in enumerate(checks):
        if c.kind == "root":  # a size found at run time (``solve.isolve``): defined where the solve order puts it
            conds.append(f"{c.what} = _isolve(lambda x: {sz.source(c.lhs)}, {sz.source(c.rhs)})")
            continue
        if c.kind == "system":  # several sizes found at run time (``solve.ssolve``), or einx's error where no unique one
            xs = ", ".join(f"x{i}" for i in range(c.what.count(",") + 1))
            fs, vs = (", ".join(sz.source(e[j]) for e in c.eqs) + "," for j in (0, 1))
            conds.append(f"{c.what}, = _ssolve(lambda {xs}: ({fs}), ({vs}), {xs.count('x')}) or _fail({k}, 0, 0)")
            continue
        cond = _condition(c)
        if cond is not None:
            conds.append(f"if {cond}: _fail({k}, {sz.source(c.lhs)}, {sz.source(c.rhs)})")
    # read only the dims the code uses (the rank is part of the signature, so it needs no run-time check)
    # a tensor whose dims only one check reads: read them there (t0.shape[0] is a postfix expression, safe to substitute)
    factories = []  # tensor factories: called with the solved shape, after the checks
    for i, lib_i in enumerate(libs):
        if lib_i == "factory":
            shape = ", ".join(g.scode(d) for d in e_in[i].children)
            factories.append(f"t{i} = _factory(t{i}, ({shape}{',' if len(e_in[i].children) == 1 else ''}), {i})")
    used = set(_DIM.findall("\n".join(conds + factories + g.lines + res)))
    in_body = set(_DIM.findall("\n".join(factories + g.lines + res)))
    head = []
    inline = {}
    for i, rank in enumerate(ranks):
        if libs[i] == "factory":
            continue
        if libs[i] not in (lib, "scalar") or (libs[i] == "scalar" and fam not in ("elementwise", "id")):
            head.append(f"t{i} = {ad.to_array(f't{i}')}")
        ds = [dim_code(i, j) for j in range(rank)]
        if not any(d in in_body for d in ds) and sum(any(d in c for d in ds if d in used) for c in conds) <= 1:
            inline.update((d, f"t{i}.shape[{j}]") for j, d in enumerate(ds) if d in used)
        elif any(d in used for d in ds):
            head.append(f"{', '.join(d if d in used else '_' for d in ds)}{',' if rank == 1 else ''} = t{i}.shape")
    if inline:
        conds = [_DIM.sub(lambda m: inline.get(m.group(), m.group()), c) for c in conds]
    for name, shape in params.items():
        if shape is None:
            head.append(f"{param_code(name)} = P[{name!r}]")
        else:
            for k in range(shape):
                head.append(f"{param_code(name, k)} = P[{name!r}][{k}]")
    head += conds + factories
    arglist = ", ".join(args + (["P=None"] if sig.params else []))  # constraints the description does not use are accepted
    lines = list(g.lines)
    if len(res) == 1 and lines and lines[-1].startswith(res[0] + " = "):  # "v = x; return v" -> "return x"
        ret = lines.pop()[len(res[0]) + 3 :]
    else:
        ret = res[0] if len(res) == 1 else "(" + ", ".join(res) + ",)"
    body = head + lines + [f"return {ret}"]
    text = "".join(f"    {line}\n" for line in body)
    # the library is a global of the generated code; the import line documents it (only when used)
    imports = "".join(line + "\n" for mod, line in _IMPORTS[lib] if mod + "." in text)
    return imports + f"def op({arglist}):\n" + text


def _condition(c):
    """Python source that is true when check ``c`` fails, or None when it evidently holds."""
    lhs = sz.source(c.lhs)
    if c.kind == "eq":
        return f"{lhs} != {sz.source(c.rhs)}"  # comparisons bind looser than arithmetic: no brackets needed
    if c.kind == "one":
        return f"{lhs} != 1"
    if c.kind == "raise":
        return "True"
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
