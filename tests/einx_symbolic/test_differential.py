"""Property-based differential tests: einx_symbolic vs real einx 0.4.3.

Random descriptions and shapes across the op set; identical values, shapes,
dtypes and the same decision to raise.  Sizes are >= 1 here because einx
0.4.3 rejects size-0 axes (einx_symbolic accepts them, see test_symbolic.test_zero_size_axes).
"""

import functools

import jax.numpy as jnp
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import arr as shared_arr
from conftest import compare

#: examples per test: half the profile's (at most 100): the grammar suite
#: (test_grammar.py) compares the same ops on generated descriptions, and each
#: example here costs einx a graph build (a sympy solve)
DIFF = settings(max_examples=min(settings().max_examples, 100))

NAMES = "abcde"
LIBS = ["torch", "numpy", "jax"]
# examples, deadline and health checks: the loaded Hypothesis profile (conftest.py at
# the repository root: ``ci``, 200 examples, by default; HYPOTHESIS_PROFILE=dev: 12)

ELEMENTWISE = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "maximum",
    "minimum",
    "logaddexp",
    "less",
    "greater_equal",
    "equal",
    "not_equal",
]
REDUCE = ["sum", "mean", "var", "std", "max", "min", "logsumexp", "prod", "any", "all", "count_nonzero"]


arr = functools.partial(shared_arr, ints=(1, 5))  # ints in [1, 5)


@st.composite
def axes_and_sizes(draw, min_n=1, max_n=4):
    n = draw(st.integers(min_n, max_n))
    names = draw(st.permutations(NAMES))[:n]
    sizes = {k: draw(st.integers(1, 4)) for k in names}
    return list(names), sizes


def _group(draw, names):
    """Randomly wrap a contiguous run of axes in a composition '(x y)'."""
    if len(names) >= 2 and draw(st.booleans()):
        i = draw(st.integers(0, len(names) - 2))
        j = draw(st.integers(i + 2, len(names)))
        return names[:i] + ["(" + " ".join(names[i:j]) + ")"] + names[j:]
    return list(names)


def _shape(tokens, sizes):
    out = []
    for t in tokens:
        t = t.strip("[]")
        if t.startswith("("):
            out.append(int(np.prod([sizes[x.strip("[]")] for x in t[1:-1].split()])))
        else:
            out.append(sizes[t])
    return tuple(out)


def _perturb(draw, shape):
    if shape and draw(st.integers(0, 5)) == 0:
        shape = list(shape)
        k = draw(st.integers(0, len(shape) - 1))
        shape[k] += 1
        return tuple(shape)
    return shape


@DIFF
@given(st.data(), st.sampled_from(LIBS + ["torch", "torch", "numpy"]))
def test_id(data, lib):
    names, sizes = data.draw(axes_and_sizes())
    tin = _group(data.draw, names)
    out = _group(data.draw, list(data.draw(st.permutations(names))))
    desc = f"{' '.join(tin)} -> {' '.join(out)}"
    shape = _perturb(data.draw, _shape(tin, sizes))
    kwargs = {}
    if any(t.startswith("(") for t in tin):  # composition in the input needs a constraint
        inner = next(t for t in tin if t.startswith("("))[1:-1].split()
        kwargs = {k: sizes[k] for k in inner[1:]}
    compare("id", desc, arr(lib, shape), **kwargs)


@DIFF
@given(st.data(), st.sampled_from(ELEMENTWISE), st.sampled_from(LIBS + ["torch", "torch", "numpy"]), st.booleans())
def test_elementwise(data, op, lib, explicit):
    names, sizes = data.draw(axes_and_sizes())
    sub = [n for n in names if data.draw(st.booleans())]
    sub = list(data.draw(st.permutations(sub)))
    x_tok = names if not explicit else list(data.draw(st.permutations(names)))
    desc = f"{' '.join(x_tok)}, {' '.join(sub)}" + (f" -> {' '.join(_group(data.draw, names))}" if explicit else "")
    sx = _perturb(data.draw, _shape(x_tok, sizes))
    sy = _shape(sub, sizes)
    compare(op, desc, arr(lib, sx, seed=1), arr(lib, sy, seed=2))


@DIFF
@given(st.data(), st.sampled_from(REDUCE), st.sampled_from(LIBS + ["torch", "torch", "numpy"]), st.booleans())
def test_reduce(data, op, lib, explicit):
    names, sizes = data.draw(axes_and_sizes())
    marked = [n for n in names if data.draw(st.booleans())] or names[-1:]
    rest = [n for n in names if n not in marked]
    kind = "bool" if op in ("any", "all") else "float"
    if explicit:
        desc = f"{' '.join(names)} -> {' '.join(data.draw(st.permutations(rest)))}"
    else:
        desc = " ".join(f"[{n}]" if n in marked else n for n in names)
    compare(op, desc, arr(lib, _perturb(data.draw, _shape(names, sizes)), kind))


@DIFF
@given(st.data(), st.sampled_from(["torch", "numpy", "jax", "torch"]))
def test_dot(data, lib):
    names, sizes = data.draw(axes_and_sizes(3, 5))
    k = data.draw(st.integers(1, len(names) - 2))
    contracted, rest = names[:k], names[k:]
    left = [n for n in rest if data.draw(st.booleans())]
    right = [n for n in rest if n not in left or data.draw(st.booleans())]
    out = list(data.draw(st.permutations(sorted(set(left) | set(right)))))
    brackets = data.draw(st.booleans())
    c = [f"[{n}]" if brackets else n for n in contracted]
    tl = list(data.draw(st.permutations(left + c)))
    tr = list(data.draw(st.permutations(c + right)))
    desc = f"{' '.join(tl)}, {' '.join(tr)} -> {' '.join(out)}"
    compare("dot", desc, arr(lib, _shape(tl, sizes), seed=1), arr(lib, _perturb(data.draw, _shape(tr, sizes)), seed=2))


@DIFF
@given(
    st.data(),
    st.sampled_from(["softmax", "log_softmax", "sort", "argsort", "flip", "roll", "argmax", "argmin"]),
    st.sampled_from(["torch", "numpy", "jax", "torch"]),
)
def test_preserve_and_argfind(data, op, lib):
    names, sizes = data.draw(axes_and_sizes())
    one = op in ("sort", "argsort") or data.draw(st.booleans())
    marked = [data.draw(st.sampled_from(names))] if one else ([n for n in names if data.draw(st.booleans())] or names[:1])
    desc = " ".join(f"[{n}]" if n in marked else n for n in names)
    kwargs = {"shift": data.draw(st.integers(-3, 3))} if op == "roll" else {}
    x = arr(lib, _shape(names, sizes), "int" if op in ("sort", "argsort", "argmax", "argmin") else "float")
    compare(op, desc, x, **kwargs)


@DIFF
@given(
    st.data(), st.sampled_from(["get_at", "set_at", "add_at", "subtract_at"]), st.sampled_from(["torch", "numpy", "jax", "torch"])
)
def test_indexing(data, op, lib):
    h, w, b, p = (data.draw(st.integers(1, 4)) for _ in range(4))
    two = data.draw(st.booleans())
    rng = np.random.default_rng(0)
    if two:
        x = arr(lib, (b, h, w))
        idx = np.stack([rng.integers(0, h, (b, p)), rng.integers(0, w, (b, p))], -1)
        tdesc, cdesc = "b [h w]", "b p [2]"
    else:
        x = arr(lib, (b, h))
        idx = rng.integers(0, h, (b, p))
        tdesc, cdesc = "b [h]", "b p"
    idx = arr(lib, idx.shape, "int") * 0 + (
        torch.from_numpy(idx) if lib == "torch" else jnp.asarray(idx) if lib == "jax" else idx
    )
    if op == "get_at":
        compare(op, f"{tdesc}, {cdesc} -> b p", x, idx)
    else:
        upd = arr(lib, (b, p), seed=3)
        compare(op, f"{tdesc}, {cdesc}, b p", x, idx, upd)


@DIFF
@given(st.data(), st.sampled_from(["torch", "numpy"]))
def test_ellipsis_and_concat(data, lib):
    names, sizes = data.draw(axes_and_sizes(2, 4))
    form = data.draw(st.integers(0, 3))
    if form == 0:
        desc, shape, kw = f"b... {names[0]} -> {names[0]} (b...)", (2, 3, sizes[names[0]]), {}
    elif form == 1:
        desc, shape, kw = f"... {names[0]} -> {names[0]} ...", (2,) * data.draw(st.integers(0, 3)) + (sizes[names[0]],), {}
    elif form == 2:
        a, c = names[0], names[1]
        desc, shape, kw = f"x ({a} + {c}) -> x {a}, x {c}", (3, sizes[a] + sizes[c]), {a: sizes[a]}
    else:
        desc, shape, kw = "b... c -> c b...", (2, 3, 4), {"b": (2, 3)}
    compare("id", desc, arr(lib, _perturb(data.draw, shape)), **kw)
