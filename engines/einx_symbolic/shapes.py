"""einx 0.4.3's shape utilities: ``solve_shapes``, ``solve_axes``, ``matches``, ``check``.

A description without ``->``: comma-separated expressions, one tensor per expression.
A tensor may be ``None`` (or a tensor factory: a callable) whose shape is unknown: its
expression's sizes are derived from the other tensors and the constraints; a Python
scalar has shape ``()``. Solved with the ops' machinery: :func:`~.parse.parse` ->
:func:`~.expand.expand` (ranks of the known tensors; the unknown ones play the role of
outputs) -> :func:`~.cse.eliminate` (with einx's flags for these functions: concatenations
are merged, nothing inside brackets) -> :func:`~.solve.solve` (the known tensors' dims
are read), whose size expressions and checks are then evaluated with the concrete shapes
and constraints (``engines.sizes``). Solutions are cached per signature (description,
which tensors are known and their ranks, constraint kinds).
"""

import functools
import math
import warnings

import numpy as np

from engines import sizes as sz

from .adapters import SCALARS
from .api import _psig
from .cse import eliminate
from .errors import NotationSyntaxError, RankError
from .expand import expand, flatten, leaves
from .parse import parse
from .solve import dim_code, failer, isolve, param_code, ssolve
from .solve import solve as _solve_sizes
from .tree import ANON, Axis, Concat, Flat, nodes

__all__ = ["check", "matches", "solve", "solve_axes", "solve_shapes"]


def _shape(t):
    """A tensor's shape (ints), ``()`` for a Python scalar, None for ``None`` or a factory (einx's ``_get_shape``)."""
    if t is None:
        return None
    try:
        return tuple(int(x) for x in t.shape)
    except Exception:
        pass
    if isinstance(t, SCALARS):
        return ()
    if callable(t):
        return None
    raise ValueError(f"Found {type(t)} which is not a valid tensor argument.")


class _Solution:
    """The solve of one signature: the expanded expressions, sizes and checks (``Recipe``'s fields)."""

    def __init__(self, desc, exprs, sizes, checks):
        self.exprs, self.sizes, self.checks = exprs, sizes, checks
        self.sig = _Sig(desc)  # what ``solve.failer`` reads
        self.fail = failer(self)


class _Sig:
    def __init__(self, description):
        self.description = description


def _parsed(desc, n):
    """The expressions of ``desc``, which must not hold ``->`` and must be ``n`` (einx's errors, in its order)."""
    if "->" in desc:
        raise NotationSyntaxError(
            desc,
            "The expression must not contain a '->' operator.\n%EXPR%",
            [i for i in range(len(desc)) if desc.startswith("->", i) or desc.startswith("->", i - 1)],
        )
    ins, _ = parse(desc)
    if len(ins) != n:
        raise ValueError(f"The number of input expressions (found {len(ins)}) must match the number of input tensors (found {n})")
    return ins


@functools.lru_cache(maxsize=512)
def _solution(desc, ranks, params, cse):
    """Solve ``desc`` for tensors of ``ranks`` (None: unknown shape) and constraint kinds ``params``."""
    ins = _parsed(desc, len(ranks))
    used = {a.name for e in ins for a in nodes(e) if isinstance(a, Axis)}
    params = {k: v for k, v in params if k in used}
    trees, reps = expand(desc, ins, list(ranks), params)
    if cse:
        fixed = {
            a.name for t in trees for a in nodes(t) if isinstance(a, Axis) and a.value is None and a.name.split(".")[0] in params
        }
        trees = eliminate(trees, fixed, concat=True, in_brackets=False)
    exprs = [flatten(t) for t in trees]
    sizes, checks = _solve_sizes(
        desc, [e if r is not None else None for e, r in zip(exprs, ranks, strict=False)], exprs, params, (), reps
    )
    return _Solution(desc, exprs, sizes, checks)


def _solve(description, tensors, parameters, cse):
    """``(solution, size of each axis name)``: raises einx's error where the tensors and constraints do not solve."""
    shapes = [_shape(t) for t in tensors]
    ranks = tuple(None if sh is None else len(sh) for sh in shapes)
    try:
        kinds = tuple(sorted((k, _psig(v)) for k, v in parameters.items()))
    except ValueError:  # einx validates the constraints after parsing the description and counting its expressions
        _parsed(description, len(ranks))
        raise
    s = _solution(description, ranks, kinds, cse)
    env = {dim_code(i, j): n for i, sh in enumerate(shapes) if sh is not None for j, n in enumerate(sh)}
    for k, v in parameters.items():
        if isinstance(v, (tuple, list)) or (isinstance(v, np.ndarray) and v.ndim):
            env.update((param_code(k, i), int(x)) for i, x in enumerate(v))
        else:
            env[param_code(k)] = int(v)
    for k, c in enumerate(s.checks):
        if c.kind == "root":  # a size found at run time (``solve.isolve``)
            env[c.what] = isolve(lambda x: sz.evaluate(c.lhs, {**env, "x": x}), sz.evaluate(c.rhs, env))
            continue
        if c.kind == "system":  # several sizes found at run time (``solve.ssolve``), as the generated graph does
            names = c.what.split(", ")
            xs = [f"x{i}" for i in range(len(names))]

            def f(*x, _c=c, _xs=xs):
                at = {**env, **dict(zip(_xs, x, strict=False))}
                return tuple(sz.evaluate(e[0], at) for e in _c.eqs)

            found = ssolve(f, tuple(sz.evaluate(e[1], env) for e in c.eqs), len(names))
            if found is None:
                s.fail(k, 0, 0)
            env.update(zip(names, found, strict=False))
            continue
        lhs, rhs = sz.evaluate(c.lhs, env), sz.evaluate(c.rhs, env)
        if (c.kind == "eq" and lhs != rhs) or (c.kind == "nonneg" and lhs < 0) or (c.kind == "div" and (rhs == 0 or lhs % rhs)):
            s.fail(k, lhs, rhs)
    return s, {name: sz.evaluate(v, env) for name, v in s.sizes.items()}


def _size(d, sizes):
    if isinstance(d, Axis):
        return d.value if d.value is not None else sizes[d.name]
    if isinstance(d, Flat):
        return math.prod(_size(c, sizes) for c in d.inner.children)
    if isinstance(d, Concat):
        return sum(_size(c, sizes) for c in d.children)
    return math.prod(_size(c, sizes) for c in d.children)  # a List


def solve_shapes(description, *tensors, **parameters):
    """The shape of every expression of ``description`` (no ``->``) under the tensors and constraints.

    ``tensors``: one per expression; ``None`` (or a tensor factory) where the shape is unknown.
    ``parameters``: axis sizes, e.g. ``a=4`` (a tuple for an ellipsis axis).

    >>> solve_shapes("a b, c b a", np.zeros((3, 4)), None, c=3)
    ((3, 4), (3, 4, 3))
    """
    s, sizes = _solve(description, tensors, parameters, cse=True)
    return tuple(tuple(_size(d, sizes) for d in e.children) for e in s.exprs)


def solve_axes(description, *tensors, **parameters):
    """The size of every named axis of ``description`` (no ``->``) under the tensors and constraints.

    An axis repeated by an ellipsis (``a...``) maps to an ``int32`` array of its sizes. Unnamed
    axes (number axes, ``...``) have no entry. No common-subexpression elimination: every named
    axis must be determined (``(a b)`` needs a constraint).

    >>> solve_axes("a..., c a...", np.zeros((3, 4)), None, c=3)
    {'a': array([3, 4], dtype=int32), 'c': 3}
    """
    s, sizes = _solve(description, tensors, parameters, cse=False)
    out, reps = {}, {}
    for e in s.exprs:
        for a in leaves(e):
            if a.value is not None or a.name.startswith(ANON):
                continue
            if a.name.startswith("UnexpandedEllipsis("):
                raise RankError(
                    description,
                    "Failed to uniquely determine the expansion of ellipses in the expression. "
                    "Please provide more constraints.\n%EXPR%",
                    list(range(*a.pos)),
                )
            name, _, rep = a.name.partition(".")
            if rep:
                reps.setdefault(name, {})[int(rep)] = sizes[a.name]
                out.setdefault(name, None)
            else:
                out.setdefault(name, sizes[name])
    for name, r in reps.items():
        out[name] = np.array([r[i] for i in range(max(r) + 1)], dtype="int32")
    return out


def solve(description, *tensors, **parameters):
    """An alias of :func:`solve_axes` (as in einx)."""
    return solve_axes(description, *tensors, **parameters)


def matches(description, *tensors, **parameters):
    """Whether the tensors and constraints match ``description`` (any error: False).

    >>> matches("a b", np.zeros((3, 4))), matches("a b c", np.zeros((3, 4)))
    (True, False)
    """
    try:
        solve_shapes(description, *tensors, **parameters)
        return True
    except Exception:
        return False


def check(description, *tensors, **parameters):
    """Deprecated in einx (use ``id``): raises einx's error where the tensors do not match ``description``."""
    warnings.warn(
        "einx.check is deprecated and will be removed in a future release. Please call einx.id instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    _solve(description, tensors, parameters, cse=True)
