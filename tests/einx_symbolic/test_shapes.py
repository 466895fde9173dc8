"""``solve_shapes``, ``solve_axes``, ``matches``, ``check`` (``shapes.py``) against einx 0.4.3.

Differential: descriptions drawn from the grammar strategies (``grammar.py``: compositions,
concatenations, number axes, brackets, ellipses at every level einx allows), without ``->``;
an expression is now and then a rearrangement of another (so unknown shapes can be derived);
each tensor has the shape its expression has, perturbed now and then, or is ``None``, a tensor
factory or a Python scalar; constraints as the op suites draw them. All four functions run on
einx and ours: the same value (and types: ints, int32 arrays, tuples) or the same error class.
Examples: ``EXAMPLES`` in all (two items, seeds ``SEED``, ``SEED + 1``), 12 per item in the
``dev`` profile.
"""

import os
import warnings

import einx
import grammar as gr
import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from test_grammar import error_class

from engines import einx_symbolic as ex

#: examples in all, over two test items (see the README for their cost)
EXAMPLES = int(os.environ.get("EINX_SHAPES_EXAMPLES", "600"))
SEED = int(os.environ.get("EINX_GRAMMAR_SEED", "0"))
_DEV = os.environ.get("HYPOTHESIS_PROFILE") == "dev"
SHAPES = settings(
    max_examples=12 if _DEV else -(-EXAMPLES // 2), deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
FUNCTIONS = ["solve_shapes", "solve_axes", "matches", "check"]

#: where einx 0.4.3 fails inside itself (README, "Deliberate differences"): an internal assertion anywhere;
#: ``solve_axes`` reading the index of a number axis ("unnamed.<id>": an array of that many entries) or of
#: ``...``/an unexpanded ellipsis (``int("")``, ``int("anonymous_ellipsis_axis")``) from its name
EINX_BUGS = [
    (None, AssertionError, ""),
    ("solve_axes", ValueError, "Maximum allowed dimension exceeded"),
    ("solve_axes", ValueError, "invalid literal for int() with base 10"),
]


def _call(fn, desc, args, kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", fn(desc, *args, **kw))
        except Exception as e:
            r = ("err", e)
    return r, [(x.category, str(x.message)) for x in w if x.category is DeprecationWarning]


def _zero(desc, args, kw):
    """Whether our solution has a size 0 (valid for us; einx raises ``AxisSizeError``)."""
    try:
        return any(0 in s for s in ex.solve_shapes(desc, *args, **kw))
    except Exception:
        return False


def same(name, desc, *args, **kw):
    """Assert einx 0.4.3 and ours agree on ``name(desc, *args, **kw)``."""
    (r1, w1), (r2, w2) = _call(getattr(einx, name), desc, args, kw), _call(getattr(ex, name), desc, args, kw)
    call = f"{name}({desc!r}, {[getattr(a, 'shape', a if a is None or isinstance(a, float) else 'factory') for a in args]}, {kw})"
    assert w1 == w2, (call, w1, w2)
    if r1[0] == "err" and any((f is None or f == name) and type(r1[1]) is t and m in str(r1[1]) for f, t, m in EINX_BUGS):
        return
    if r2[0] == "err" and isinstance(r2[1], ex.errors.NotSupportedError):
        return
    if (
        ((r1[0] == "err" and isinstance(r1[1], einx.errors.AxisSizeError)) or r1 == ("ok", False))
        and r2[0] == "ok"
        and _zero(desc, args, kw)
    ):
        return
    assert r1[0] == r2[0], f"{call}: einx {r1[0]} {r1[1]!r:.300} / ours {r2[0]} {r2[1]!r:.300}"
    if r1[0] == "err":
        assert error_class(r1[1]) == error_class(r2[1]), (
            f"{call}: einx raised {error_class(r1[1])}: {r1[1]}\n\nours {error_class(r2[1])}: {r2[1]}"
        )
        return
    v1, v2 = r1[1], r2[1]
    assert type(v1) is type(v2), (call, v1, v2)
    if isinstance(v1, dict):
        assert list(v1) == list(v2), (call, v1, v2)
        for k in v1:
            assert type(v1[k]) is type(v2[k]), (call, k, v1[k], v2[k])
            assert getattr(v1[k], "dtype", None) == getattr(v2[k], "dtype", None), (call, k, v1[k], v2[k])
            np.testing.assert_array_equal(v1[k], v2[k], err_msg=call)
    else:
        assert v1 == v2, (call, v1, v2)
        if isinstance(v1, tuple):
            assert [type(d) for s in v1 for d in s] == [type(d) for s in v2 for d in s] == [int] * sum(map(len, v1)), call
            assert all(type(s) is tuple for s in v1 + v2), call


def _tensor(draw, shp):
    """An array of ``shp`` (perturbed now and then), or an unknown shape: ``None``, a factory; now and then a Python scalar."""
    r = draw(st.integers(0, 11))
    if r < 3:
        return None
    if r == 3:
        return lambda shape: np.zeros(shape)
    if r == 4:
        return 2.0
    return np.zeros(gr.perturb(draw, shp), dtype=np.int8)


NAMES = list(gr.NAMES)


def _shapes(data, name):
    draw = data.draw
    w = draw(gr.world())
    # brackets now and then (a name bracketed in one expression only is einx's SyntaxError); number axes
    # rarely in solve_axes (einx fails inside itself on them there: EINX_BUGS)
    brackets, cat = draw(st.integers(0, 3)) == 0, draw(st.booleans())
    nums = name != "solve_axes" or draw(st.integers(0, 3)) == 0
    exprs = [draw(gr.expression(NAMES[:4], brackets=brackets, cat=cat, nums=nums))]
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):  # a rearrangement of an earlier expression: its sizes can be derived from it
            exprs.append(draw(gr.rearranged(draw(st.sampled_from(exprs)), extra_names=["f"], allow_new=nums)))
        else:
            exprs.append(draw(gr.expression(NAMES[:4], brackets=brackets, cat=cat, nums=nums)))
    exprs = list(draw(st.permutations(exprs)))
    kw = gr.kw_for(draw, exprs, w)
    if "f" in {n for e in exprs for n in gr.names_of(e)} and draw(st.integers(0, 3)):
        kw["f"] = w.sizes["f"]
    args = [_tensor(draw, gr.shape(e, w)) for e in exprs]
    same(name, ", ".join(gr.render(e) for e in exprs), *args, **kw)


for _k in range(2):
    globals()[f"test_shapes_{_k}"] = seed(SEED + _k)(SHAPES(given(st.data(), st.sampled_from(FUNCTIONS))(_shapes)))


# einx's docstring examples, and the cases its docs name
X = np.zeros((3, 4))


@pytest.mark.parametrize(
    "name, desc, args, kw",
    [
        ("solve_shapes", "a b, c b a", (X, None), {"c": 3}),
        ("solve_axes", "a b, c b a", (X, None), {"c": 3}),
        ("solve_axes", "a..., c a...", (X, None), {"c": 3}),
        ("matches", "a b", (X,), {}),
        ("matches", "a b c", (X,), {}),
        ("check", "a b", (X,), {}),
        ("check", "a b c", (X,), {}),
        ("solve_shapes", "(a b), (a b)", (np.zeros(6), None), {}),  # one axis after einx's common-subexpression elimination
        ("solve_axes", "(a b), (a b)", (np.zeros(6), None), {}),  # none in solve_axes: a, b undetermined
        ("solve_shapes", "a b, c", (X, lambda shape: None), {"c": 2}),  # a factory's shape is unknown
        ("solve_shapes", "a b, ", (X, 2.0), {}),  # a Python scalar has shape ()
        ("solve_shapes", "a b -> a", (X,), {}),  # SyntaxError
        ("solve_shapes", "a b", (X, X), {}),  # ValueError: two tensors for one expression
        ("solve_axes", "a", (np.zeros(3),), {"a": 3.0}),  # ValueError: not an integral constraint
        ("solve_shapes", "a", ("x",), {}),  # ValueError: not a tensor
        ("solve_axes", "s... (b s...)", (np.zeros((2, 3, 12)),), {"b": 2}),
        ("solve_axes", "(a a)", (np.zeros(9),), {}),  # a polynomial (einx: sympy; ours at run time)
        ("matches", "(a a)", (np.zeros(8),), {}),
        # a system in several unknowns: linear (elimination), and one whose equations share a left side (einx: undetermined)
        ("solve_axes", "(a + b) (a + (2 b))", (np.zeros((13, 10)),), {}),
        ("solve_axes", "(s t)... (s t)...", (np.zeros((1, 1)),), {}),
        ("solve_shapes", "(s t)... (s t)...", (np.zeros((1, 1)),), {}),
    ],
)
def test_documented(name, desc, args, kw):
    same(name, desc, *args, **kw)


def test_docstring_values():
    assert ex.solve_shapes("a b, c b a", X, None, c=3) == ((3, 4), (3, 4, 3))
    axes = ex.solve_axes("a..., c a...", X, None, c=3)
    assert list(axes) == ["a", "c"] and axes["a"].dtype == np.int32 and axes["a"].tolist() == [3, 4] and type(axes["c"]) is int
    assert ex.solve is not None and ex.solve("a b", X) == {"a": 3, "b": 4}
    with pytest.warns(DeprecationWarning, match="einx.check is deprecated"):
        assert ex.check("a b", X) is None
    with pytest.raises(einx.errors.AxisSizeError), pytest.warns(DeprecationWarning):
        ex.check("a a", X)


def test_deliberate_differences():
    """Size-0 axes are valid; unnamed axes (number axes, ``...``) have no entry in ``solve_axes``,
    where einx fails inside itself (README)."""
    assert ex.solve_shapes("a b, b", np.zeros((2, 0)), None) == ((2, 0), (0,))
    with pytest.raises(einx.errors.AxisSizeError):
        einx.solve_shapes("a b, b", np.zeros((2, 0)), None)
    assert ex.solve_axes("a 2 ...", np.zeros((3, 2, 5))) == {"a": 3}
    for desc in ("a 2", "a ..."):
        with pytest.raises(ValueError):
            einx.solve_axes(desc, np.zeros((3, 2)))
    with pytest.raises(einx.errors.RankError):  # an ellipsis nothing expands: its axes' sizes are not determined
        ex.solve_axes("(b...)", np.zeros(6))
    assert ex.solve_shapes("(b...)", np.zeros(6)) == ((6,),)


def test_cached_per_signature():
    from engines.einx_symbolic.shapes import _solution

    _solution.cache_clear()
    for n in range(2, 7):
        assert ex.solve_shapes("a (b c), b", np.zeros((n, 6)), None, c=3) == ((n, 6), (2,))
    assert _solution.cache_info().misses == 1
