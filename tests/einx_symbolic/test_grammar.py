"""Grammar-driven differential tests: generated descriptions on einx 0.4.3 and on ours.

Descriptions come from the notation's grammar (``grammar.py``): compositions,
concatenations, number axes, brackets with repeated names, ellipses at every level
einx allows (only nesting deeper than one is left out), keyword sizes (tuples and
single numbers for ellipsis axes), output-only axes, Python scalars and tensor
factories as operands; shapes consistent with them and deliberately inconsistent
ones. Each call runs on both; the outcome must agree: values, shapes, dtypes, or
the class of the error raised (``einx.errors`` class, else the exception type).

Examples per family: ``EXAMPLES`` (independent of the loaded profile, so ``make test``
runs them; ``HYPOTHESIS_PROFILE=dev`` keeps it at the profile's count).
"""

import copy
import os

import einx
import grammar as gr
import jax.numpy as jnp
import numpy as np
import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from conftest import arr as shared_arr
from engines import einx_symbolic as ex

#: examples per op family in the default (``ci``) profile: 500 keeps ``make test`` in its
#: budget (2,000 took 240 s of its ~18 min; 500 still finds the planted class the findings page
#: names); ``EINX_GRAMMAR_EXAMPLES=2000`` (and other ``EINX_GRAMMAR_SEED``s) search further
EXAMPLES = int(os.environ.get("EINX_GRAMMAR_EXAMPLES", "500"))
#: each family runs as this many test items (seeds 0, 1, ...), EXAMPLES split between them, so that
#: ``pytest -n 2`` can balance the families (their costs differ by ~3x) over its workers
SHARDS = 2
#: the hypothesis seed of the first item (``EINX_GRAMMAR_SEED``; items use SEED, SEED + 1, ...): other seeds
#: draw other descriptions, for a search beyond what ``make test`` runs
SEED = int(os.environ.get("EINX_GRAMMAR_SEED", "0"))
_DEV = os.environ.get("HYPOTHESIS_PROFILE") == "dev"
GRAMMAR = settings(
    max_examples=12 if _DEV else -(-EXAMPLES // SHARDS), deadline=None, database=None, suppress_health_check=list(HealthCheck)
)

LIBS = st.sampled_from(["torch", "torch", "torch", "numpy", "jax"])
ERRORS = [
    einx.errors.SyntaxError,
    einx.errors.RankError,
    einx.errors.AxisSizeError,
    einx.errors.SemanticError,
    einx.errors.BackendResolutionError,
    einx.errors.CallOperationError,
    einx.errors.EinxError,
]


arr = shared_arr  # ints in [0, 4)


def factory(lib, kind="float", seed=0):
    """A tensor factory: einx calls it with the solved shape."""

    def make(shape):
        return arr(lib, tuple(shape), kind, seed)

    return make


def error_class(e):
    for c in ERRORS:
        if isinstance(e, c):
            return c.__name__
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")  # ValueError, TypeError, ...


def _run(fn, desc, args, kw):
    """``("ok", result, args)`` or ``("err", exception, args)``: ``args`` the call's own copies of the arrays, as the
    call left them (einx's ``set_at``/``add_at``/``subtract_at`` write into their first input on numpy and torch)."""
    args = [copy.deepcopy(a) if hasattr(a, "shape") else a for a in args]
    try:
        return "ok", fn(desc, *args, **kw), args
    except Exception as e:
        return "err", e, args


def _np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


#: triage: ``EINX_GRAMMAR_COLLECT=file`` appends each disagreement to ``file`` instead of failing (no shrinking), and
#: each outcome ``_excluded`` accepts as a line ``EXCLUDED <op>: <reason>: <description>`` (to count them)
_COLLECT = os.environ.get("EINX_GRAMMAR_COLLECT")
if _COLLECT:
    GRAMMAR = settings(GRAMMAR, phases=[Phase.explicit, Phase.generate])


def same(op, desc, *args, **kw):
    """Assert einx 0.4.3 and einx_symbolic agree on ``op(desc, *args, **kw)``."""
    if _COLLECT:
        try:
            _same(op, desc, *args, **kw)
        except AssertionError as e:
            with open(_COLLECT, "a") as f:
                f.write(" ".join(str(e).split())[:600] + "\n")
        return
    _same(op, desc, *args, **kw)


#: where einx 0.4.3 itself fails (an internal assertion, a wrong diagonal): not a difference to copy
EINX_BUGS = [
    (AssertionError, ""),
    (ValueError, "Cannot take diagonal over axes of different length"),
    # its generated code calls torch.prod(x, dim=None) where every reduced axis it kept has size 1
    (einx.errors.CallOperationError, "prod() received an invalid combination of arguments - got (Tensor, dim=NoneType)"),
    # its generated reshape after several diagonals it ordered wrongly ("(... b 1) (... b 1) d -> (...) b d")
    (einx.errors.CallOperationError, "is invalid for input of size"),
    # its common-subexpression elimination sizes "(a 2 ())" with np.prod, a float ("c a, () a 1 1 -> a (2) c, (a 2 ())")
    (TypeError, "Axis value must be an int or None"),
    # its np.roll(a, axis=(), shift=()) on the 0-d array left after dropping axes of size 1 (numpy fails there)
    (einx.errors.CallOperationError, "not enough values to unpack (expected 2, got 0)"),
]


#: the ``NotSupportedError`` classes the README lists as deliberate ("Deliberate differences", "Not covered"): only these
#: refusals of ours count as agreement; any other one is a disagreement the suite reports
NOT_SUPPORTED = {"nested ellipses": "nested ellipses", "without any reduced axis": "reduction without reduced axis"}


def _excluded(r1, r2):
    """The reason an outcome is one the README lists, else None: einx's own internal failures, ours raising
    ``NotSupportedError`` for a documented class (``NOT_SUPPORTED``), and size-0 axes (valid for us)."""
    if r1[0] == "err" and any(type(r1[1]) is t and m in str(r1[1]) for t, m in EINX_BUGS):
        return "einx bug: " + next(m or t.__name__ for t, m in EINX_BUGS if type(r1[1]) is t and m in str(r1[1]))
    if r1[0] == "err" and r2[0] == "ok" and isinstance(r1[1], einx.errors.AxisSizeError):
        if any(0 in tuple(np.shape(v)) for v in (r2[1] if isinstance(r2[1], tuple) else (r2[1],))):
            return "size-0 axis"
        return None
    if r2[0] == "err" and isinstance(r2[1], ex.errors.NotSupportedError):
        why = next((c for m, c in NOT_SUPPORTED.items() if m in str(r2[1])), None)
        return None if why is None else f"not supported: {why} (einx {r1[0]}{'' if r1[0] == 'ok' else ' ' + error_class(r1[1])})"
    return None


def _zero_size(op, desc, args, kw):
    """Whether our solution of the call has an axis of size 0 (valid for us, einx's ``AxisSizeError``): einx then
    fails before the semantic errors it finds after solving (``"b (b + c) -> c b"`` on 4 x 4: ``c`` is 0)."""
    from engines.einx_symbolic import api, recipe
    from engines.sizes import evaluate

    kw = dict(kw)
    backend = kw.pop("backend", None)
    static = (("keepdims", True),) if kw.pop("keepdims", None) else ()
    if "shift" in kw:
        static = (("shift", kw.pop("shift")),)
    try:
        r = recipe.recipe(api._signature("id" if op == "rearrange" else op, desc, args, backend, kw, static, False))
        env = {f"d{i}_{j}": n for i, a in enumerate(args) for j, n in enumerate(getattr(a, "shape", ()))}
        for k, v in kw.items():
            if isinstance(v, tuple):
                env.update((f"p{i}_{k}", x) for i, x in enumerate(v))
            else:
                env[f"p_{k}"] = v
        return any(evaluate(v, env) == 0 for v in r.sizes.values())
    except Exception:
        return False


def has_diagonal(desc):
    """Whether an input expression repeats an unbracketed name (a diagonal): einx 0.4.3 orders
    the other axes of a diagonal wrongly unless the repeated axes are trailing (README), so the
    values of such calls are not compared (shapes, dtypes and errors are). A composition of number
    axes that occurs twice in an input (``(1) 2 (1)``, ``(2 3 a) (2 3 b)``, ``(1)...``) is one axis
    after einx's common-subexpression elimination (``cse.py``), repeated: a diagonal too."""
    from engines.einx_symbolic.parse import parse
    from engines.einx_symbolic.tree import Axis, Brackets, Ell, Flat, List, axes, bracket_axes, children

    try:
        ins = parse(desc)[0]
    except Exception:
        return False
    for e in ins:
        br = {id(a) for a in bracket_axes(e)}
        names = [a.name for a in axes(e) if id(a) not in br and a.value is None]
        if len(names) != len(set(names)):
            return True
        seen = []

        def walk(n, repeated):
            if isinstance(n, Brackets):
                return
            if isinstance(n, Flat):
                kids = n.inner.children if isinstance(n.inner, List) else [n.inner]
                nums = [isinstance(k, Axis) and k.value is not None for k in kids]
                if kids and all(nums):
                    seen.extend([str(n)] * (2 if repeated else 1))
                for i in range(len(kids)):  # runs of two or more number axes
                    for j in range(i + 2, len(kids) + 1):
                        if all(nums[i:j]):
                            seen.extend([" ".join(str(k) for k in kids[i:j])] * (2 if repeated else 1))
            for c in children(n):
                walk(c, repeated or isinstance(n, Ell))

        walk(e, False)
        if len(seen) != len(set(seen)):
            return True
    return False


def _same(op, desc, *args, **kw):
    r1, r2 = _run(getattr(einx, op), desc, args, kw), _run(getattr(ex, op), desc, args, kw)
    why = _excluded(r1, r2)
    if why:
        if _COLLECT:
            with open(_COLLECT, "a") as f:
                f.write(f"EXCLUDED {op}: {why}: {desc!r}\n")
        return
    if (
        r1[0] == "err"
        and isinstance(r1[1], einx.errors.AxisSizeError)
        and not isinstance(r2[1], einx.errors.AxisSizeError)
        and _zero_size(op, desc, args, kw)
    ):  # a size 0 that is not in the result's shape (``(c + d) -> ((c + d))``, d = 0)
        return
    call = f"{op}({desc!r}, shapes={[tuple(getattr(a, 'shape', ())) if not callable(a) else 'factory' for a in args]}, {kw})"
    assert r1[0] == r2[0], f"{call}: einx {r1[0]} {r1[1]!r:.300} / ours {r2[0]} {r2[1]!r:.300}"
    if r1[0] == "err":
        assert error_class(r1[1]) == error_class(r2[1]), (
            f"{call}: einx raised {error_class(r1[1])}: {r1[1]}\n\nours {error_class(r2[1])}: {r2[1]}"
        )
        return
    v1, v2 = r1[1], r2[1]
    if not isinstance(v1, tuple):
        v1, v2 = (v1,), (v2,)
    assert isinstance(v2, tuple) and len(v1) == len(v2), call
    for x, y in zip(v1, v2, strict=False):
        assert type(x) is type(y), (call, type(x), type(y))
        assert tuple(np.shape(x)) == tuple(np.shape(y)), (call, np.shape(x), np.shape(y))
        assert getattr(x, "dtype", None) == getattr(y, "dtype", None), (call, x.dtype, y.dtype)
        if not has_diagonal(desc):
            _values(_np(x), _np(y), call)
    for k, (x, y) in enumerate(zip(r1[2], r2[2], strict=False)):  # what each call wrote into its inputs, if anything
        if hasattr(x, "shape"):
            _values(_np(x), _np(y), f"{call}: argument {k} after the call")


def _values(xn, yn, msg):
    if xn.dtype.kind in "fc":
        np.testing.assert_allclose(xn, yn, rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(xn, yn, err_msg=msg)


def _operand(draw, lib, shp, kind="float", seed=0):
    """An array of ``shp`` (maybe perturbed), sometimes a tensor factory (torch, numpy) instead."""
    if lib != "jax" and draw(st.integers(0, 15)) == 0:
        return factory(lib, kind, seed)
    return arr(lib, gr.perturb(draw, shp), kind, seed)


NAMES = list(gr.NAMES)


def _id(data, lib):
    draw = data.draw
    n_in = draw(st.sampled_from([1, 1, 1, 2]))
    w = draw(gr.world())
    if draw(st.integers(0, 9)) == 0:  # a system of several unknown sizes, one atom per input (else its pieces repeat
        # names), maybe beside another axis; the outputs keep the atoms whole (einx splits concatenations into pieces)
        ins = [[a] + draw(st.lists(st.sampled_from([("ax", "e"), ("num", 1)]), max_size=1)) for a in draw(gr.system(NAMES[:4]))]
        if n_in == 2:  # now and then two atoms in one input
            ins[:2] = [ins[0] + ins[1]]
        outs = [list(draw(st.permutations(e))) for e in ins]
        kw = gr.kw_for(draw, ins, w, p_extra=0.2) if draw(st.integers(0, 3)) == 0 else {}
    elif draw(st.integers(0, 9)) == 0:  # a concatenation inside a composition of the output: "a c, a d -> (a (c + d))"
        common = draw(st.lists(st.sampled_from([("ax", "a"), ("ax", "b"), ("num", 1)]), max_size=2, unique=True))
        cat = ("cat", [("ax", "c"), ("ax", "d")])
        ins = (
            [list(draw(st.permutations(common + [p]))) for p in cat[1]]
            if n_in == 2
            else [list(draw(st.permutations(common + [cat])))]
        )
        out = list(draw(st.permutations([a for a in common if a[0] == "ax"] + [cat])))
        i = out.index(cat)
        lo, hi = draw(st.integers(0, i)), draw(st.integers(i + 1, len(out)))
        outs = [out[:lo] + [("comp", out[lo:hi])] + out[hi:]]
        kw = {"c": w.sizes["c"]} if n_in == 1 else {}
    else:
        ins = [draw(gr.expression(NAMES[:4], cat=True)) for _ in range(n_in)]
        outs = [draw(gr.rearranged(e, extra_names=["f"])) for e in ins]
        if draw(st.integers(0, 4)) == 0 and ins[0] and outs[0]:  # a concatenation split apart on the output side
            outs[0][0] = ("cat", [outs[0][0], ("ax", "e")])
        kw = gr.kw_for(draw, ins + outs, w)
    if any(("ax", "f") in gr.flatten_atoms(o) for o in outs) and draw(st.integers(0, 3)):
        kw["f"] = w.sizes["f"]
    desc = ", ".join(gr.render(e) for e in ins) + " -> " + ", ".join(gr.render(e) for e in outs)
    args = [_operand(draw, lib, gr.shape(e, w), seed=i) for i, e in enumerate(ins)]
    if draw(st.integers(0, 9)) == 0:  # a Python scalar operand
        args[0] = 2.0
    if all(callable(a) or isinstance(a, float) for a in args):
        kw["backend"] = lib
    same(draw(st.sampled_from(["id", "rearrange"])), desc, *args, **kw)


ELEMENTWISE = [
    "add",
    "subtract",
    "multiply",
    "true_divide",
    "floor_divide",
    "divide",
    "logical_and",
    "logical_or",
    "maximum",
    "minimum",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "logaddexp",
    "where",
]


def _elementwise(data, op, lib):
    draw = data.draw
    w = draw(gr.world())
    x = draw(gr.expression(NAMES[:4], brackets=draw(st.integers(0, 9)) == 0))
    n = 3 if op == "where" else 2
    others = [draw(gr.rearranged(x, allow_new=False)) for _ in range(n - 1)]
    others = [[a for a in o if draw(st.integers(0, 3))] for o in others]
    exprs = list(draw(st.permutations([x] + others)))
    desc = ", ".join(gr.render(e) for e in exprs)
    if draw(st.booleans()):
        desc += " -> " + gr.render(draw(gr.rearranged(x, extra_names=["f"])))
    kw = gr.kw_for(draw, exprs, w)
    # now and then narrower dtypes: a Python scalar then promotes them as einx does (int32 + 2 -> int64 on torch)
    kind = draw(st.sampled_from(["float"] * 4 + ["int32", "float16"]))
    kinds = ["bool", kind, kind] if op == "where" else ["bool"] * 2 if op.startswith("logical") else [kind] * 2
    args = [_operand(draw, lib, gr.shape(e, w), k, seed=i) for i, (e, k) in enumerate(zip(exprs, kinds, strict=False))]
    if draw(st.integers(0, 5)) == 0:
        k = draw(st.integers(0, n - 1))
        args[k] = {"bool": True, "float": 0.5, "float16": 0.5, "int32": 2}[kinds[k]]
        desc = (
            ", ".join("" if i == k else gr.render(e) for i, e in enumerate(exprs))
            + desc[len(", ".join(gr.render(e) for e in exprs)) :]
        )
    if "f" in desc and draw(st.booleans()):
        kw["f"] = w.sizes["f"]
    same(op, desc, *args, **kw)


REDUCE = ["sum", "mean", "var", "std", "prod", "count_nonzero", "all", "any", "min", "max", "logsumexp"]


def _reduce(data, op, lib):
    draw = data.draw
    w = draw(gr.world())
    x = draw(gr.expression(NAMES[:4], brackets=True))
    desc = gr.render(x)
    mode = draw(st.integers(0, 3))
    kw = gr.kw_for(draw, [x], w)
    if mode == 1:  # explicit output: the unbracketed leaves, rearranged
        rest = [a for a in x if a[0] != "br" and not (a[0] == "ell" and a[1] and a[1][0] == "br")]
        desc += " -> " + gr.render(draw(gr.rearranged(rest, extra_names=["f"])))
    elif mode == 2:
        kw["keepdims"] = True
    elif mode == 3:  # no brackets at all: implicit brackets around the axes not in the output
        xs = gr.flatten_atoms(x)
        desc = gr.render(xs) + " -> " + gr.render([a for a in xs if draw(st.booleans())])
        x = xs
    kind = "bool" if op in ("all", "any") else "float"
    same(op, desc, _operand(draw, lib, gr.shape(x, w), kind), **kw)


def _dot(data, lib):
    draw = data.draw
    w = draw(gr.world())
    contracted = draw(st.lists(st.sampled_from(NAMES[:3]), min_size=0, max_size=2, unique=True))
    left = draw(gr.expression(NAMES[3:], max_size=2, ell=draw(st.booleans())))
    right = draw(gr.expression(NAMES[3:], max_size=2, ell=False))
    brackets = draw(st.booleans())
    c = [("br", [("ax", n)]) if brackets else ("ax", n) for n in contracted]
    tl = list(draw(st.permutations(left + c)))
    tr = list(draw(st.permutations(c + right)))
    out = draw(gr.rearranged(left + right, extra_names=["f"]))
    exprs = [tl, tr]
    if draw(st.integers(0, 4)) == 0:
        exprs.append(draw(gr.rearranged(tr, allow_new=False)))
    desc = ", ".join(gr.render(e) for e in exprs) + " -> " + gr.render(out)
    kw = gr.kw_for(draw, exprs + [out], w)
    args = [_operand(draw, lib, gr.shape(e, w), seed=i) for i, e in enumerate(exprs)]
    if draw(st.integers(0, 7)) == 0:  # a Python scalar operand
        k = draw(st.integers(0, len(exprs) - 1))
        args[k] = 1.5
        desc = ", ".join("" if i == k else gr.render(e) for i, e in enumerate(exprs)) + " -> " + gr.render(out)
    same("dot", desc, *args, **kw)


PRESERVE = ["softmax", "log_softmax", "flip", "roll", "sort", "argsort", "argmax", "argmin"]


def _preserve_and_argfind(data, op, lib):
    draw = data.draw
    w = draw(gr.world())
    x = draw(gr.expression(NAMES[:4], brackets=True, min_size=1))
    desc = gr.render(x)
    if draw(st.integers(0, 2)) == 0:
        if op in ("argmax", "argmin"):
            rest = [a for a in x if a[0] != "br"]
            out = (
                list(draw(st.permutations(rest + [("br", [("num", draw(st.sampled_from([1, 2])))])])))
                if draw(st.booleans())
                else rest
            )
        else:
            out = list(draw(st.permutations(x)))
        desc += " -> " + gr.render(out)
    kw = gr.kw_for(draw, [x], w)
    if op == "roll":
        kw["shift"] = draw(st.one_of(st.integers(-3, 3), st.tuples(st.integers(-2, 2), st.integers(-2, 2))))
    kind = "int" if op in ("sort", "argsort", "argmax", "argmin") else "float"
    same(op, desc, _operand(draw, lib, gr.shape(x, w), kind), **kw)


def _indexing(data, op, lib):
    draw = data.draw
    w = draw(gr.world())
    batch = draw(gr.expression(["a", "b"], max_size=2, nums=False, ell=draw(st.booleans())))
    indexed = draw(st.lists(st.sampled_from(["h", "v", "u"]), min_size=1, max_size=3, unique=True))
    x = list(draw(st.permutations(batch + [("br", [("ax", n) for n in indexed])])))
    p = draw(gr.expression(["c"], max_size=1, nums=False, ell=False))
    for n in ("h", "v", "u"):
        w.sizes[n] = draw(st.integers(1, 4))
    w.sizes["d"] = len(indexed)
    several = len(indexed) >= 2 and draw(st.integers(0, 2)) == 0
    if several:
        # the coordinates split over two inputs (``b [h v u], b p [n], p [2]``): each takes one or more; one alone
        # may be unbracketed, else its coordinate axis is a number or a name its dim sizes (two names: only the
        # shapes decide each one's share, checked against the count of indexed axes); each over all of the batch
        # axes or none; indexed axes of 2 or more, so that coordinates taken in the wrong order change the values
        k = draw(st.integers(1, len(indexed) - 1))
        coords = []
        for name, part in (("n", k), ("m", len(indexed) - k)):
            w.sizes[name] = part
            form = draw(st.integers(0 if part == 1 else 1, 2))
            coords.append(
                (batch if draw(st.booleans()) else []) + p + [[], [("br", [("num", part)])], [("br", [("ax", name)])]][form]
            )
        for n in indexed:
            w.sizes[n] = max(2, w.sizes[n])
    else:
        # the coordinate axis: a number, now and then a name its dim sizes (einx: its length must be the number of indexed axes)
        cax = ("num", len(indexed)) if draw(st.integers(0, 3)) else ("ax", "d")
        coords = [batch + p + ([("br", [cax])] if len(indexed) > 1 or draw(st.booleans()) else [])]
    rng = np.random.default_rng(draw(st.integers(0, 3)))
    bound = min(w.sizes[n] for n in indexed)
    exprs, args = [x, *coords], [_operand(draw, lib, gr.shape(x, w))]
    for coord in coords:  # several: each inconsistent less often, so that as many calls as with one can work
        cshape = gr.perturb(draw, gr.shape(coord, w)) if not several or draw(st.integers(0, 2)) == 0 else gr.shape(coord, w)
        ints = rng.integers(0, bound, cshape)
        args.append(
            arr(lib, (), "int") * 0 + (torch.from_numpy(ints) if lib == "torch" else jnp.asarray(ints) if lib == "jax" else ints)
        )
    if op != "get_at":
        upd = batch + p
        exprs.append(upd)
        args.append(_operand(draw, lib, gr.shape(upd, w), seed=2))
    out = batch + p
    desc = ", ".join(gr.render(e) for e in exprs)
    if op == "get_at" or draw(st.booleans()):
        desc += " -> " + gr.render(x if op != "get_at" else out)
    kw = gr.kw_for(draw, exprs, w)
    if draw(st.integers(0, 6)) == 0 and not args[1].shape:
        args[1] = 0  # a Python scalar index
    same(op, desc, *args, **kw)


def _family(body, *strategies):
    """The test items of one op family: ``SHARDS`` items ``test_<family>_<k>`` (seed ``SEED + k``, deterministic:
    no example database), ``EXAMPLES`` examples in all; a failure shrinks to a minimal description."""
    for k in range(SHARDS):
        globals()[f"test{body.__name__}_{k}"] = seed(SEED + k)(settings(GRAMMAR)(given(*strategies)(body)))


# the costliest family first: xdist hands items out in this order
_family(_indexing, st.data(), st.sampled_from(["get_at", "set_at", "add_at", "subtract_at"]), LIBS)
_family(_id, st.data(), LIBS)
_family(_preserve_and_argfind, st.data(), st.sampled_from(PRESERVE), LIBS)
_family(_dot, st.data(), LIBS)
_family(_reduce, st.data(), st.sampled_from(REDUCE), LIBS)
_family(_elementwise, st.data(), st.sampled_from(ELEMENTWISE), LIBS)
