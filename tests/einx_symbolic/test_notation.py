"""One example per class the grammar-driven suite found (against einx 0.4.3), the deliberate
differences the README lists, and the new classes inside torch.compile / jax.jit."""

import einx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch._dynamo.testing
from test_grammar import same

from engines import einx_symbolic as ex

X = torch.arange(24.0).reshape(2, 3, 4)
SQ = torch.arange(18.0).reshape(2, 3, 3)


def ones(shape):
    return torch.ones(shape)


# (class, op, description, args, kwargs): each agreed with einx 0.4.3 only after its fix
CLASSES = [
    ("output-only number axis", "id", "a b c -> a b c 1", (X,), {}),
    ("output-only number axis", "add", "a b, a -> a b 2", (X[0], X[0, :, 0]), {}),
    ("tensor factory", "add", "a, b -> a b", (ones, torch.ones(3)), {"a": 2}),
    ("tensor factory", "set_at", "b [h], b c, b c", (torch.ones(2, 3), torch.zeros(2, 4, dtype=torch.long), ones), {}),
    ("tensor factory, no backend", "id", "a -> a b", (ones,), {"a": 2, "b": 3}),
    ("scalar with backend=", "id", "-> a", (1.0,), {"a": 3, "backend": "torch"}),
    ("scalar in dot", "dot", "a, -> a", (torch.ones(2), 2.0), {}),
    ("scalar in *_at", "set_at", "[a], , ", (torch.arange(5.0), 2, 7.0), {}),
    ("repeated name in brackets", "sum", "a [b b]", (SQ,), {}),
    ("repeated name in brackets", "flip", "a [b b]", (SQ,), {}),
    ("repeated name in brackets", "softmax", "a [b b]", (SQ,), {}),
    ("repeated name in brackets", "argmax", "a [b b]", (SQ,), {}),
    ("ellipsis inside a composition", "sum", "([s])...", (torch.ones(2, 3),), {}),
    ("ellipsis inside a composition", "sum", "[a]...", (torch.ones(2, 3),), {"keepdims": True}),
    (
        "ellipsis inside a composition",
        "dot",
        "(s t)... (...), e, e -> (t... ... e) s...",
        (torch.ones(6, 3, 2), torch.ones(2), torch.ones(2)),
        {"t": 3},
    ),
    ("one number for an ellipsis axis", "id", "s... c -> c s...", (torch.ones(2, 2, 4),), {"s": 2}),
    ("sizes einx never needs", "sum", "([a b]) c", (torch.ones(6, 4),), {}),
    ("sizes einx never needs", "id", "(a b) c -> (a b c)", (torch.ones(6, 4),), {}),
    ("concatenation order", "id", "(a + b) -> (b + a)", (torch.ones(5),), {"a": 2}),
    ("unused constraint", "all", "", (torch.tensor(True),), {"d": 1}),
    ("number in brackets of an implied output", "flip", "[1 d] b", (torch.ones(1, 2, 3),), {}),
    ("size error before semantic error", "dot", "[c] 3, [c] 3 -> ", (torch.ones(4, 3), torch.ones(3, 4)), {}),
    ("rank error before implied output", "logical_and", "3, ", (ones, torch.ones(2, dtype=torch.bool)), {}),
    ("tiny shapes", "argmax", "[a]", (torch.arange(5.0),), {}),
    ("tiny shapes", "var", "", (torch.tensor(3.0),), {}),
    ("a name repeated in a composition (solved at run time)", "id", "(d d) -> d", (torch.arange(4.0),), {}),
    ("a name repeated in a composition (solved at run time)", "id", "(d d) -> d", (torch.arange(5.0),), {}),
    ("a name repeated in a composition (solved at run time)", "id", "((d d) + (d)) -> d", (torch.arange(6.0),), {}),
    ("a name repeated in a composition (solved at run time)", "id", "(1 + (d d)) -> d", (torch.arange(2.0),), {}),
    ("a name repeated in a composition (solved at run time)", "id", "(... ...) -> ((...) + e) 1", (torch.ones(1),), {"e": 1}),
    ("NumPy scalar with size-1 axes", "add", ", a", (0.5, np.ones(1, np.float32)), {}),
    ("NumPy scalar with size-1 axes", "add", ", a", (0.5, np.ones(2, np.float32)), {}),
    ("NumPy scalar with size-1 axes", "maximum", ", d s... a", (0.5, np.ones((1, 1), np.float32)), {}),
    ("NumPy scalar with size-1 axes", "add", ", a -> a b", (0.5, np.ones(1, np.float32)), {"b": 2}),
    ("NumPy scalar with size-1 axes", "where", ", , -> b", (np.array(True), 0.5, np.array(0.3, np.float32)), {"b": 1}),
    ("NumPy scalar with size-1 axes", "where", "a, , a", (np.ones(3, bool), 0.5, np.ones(3, np.float32)), {}),
    ("common subexpressions are one axis (einx's CSE)", "id", "(c 2) -> (c 2)", (torch.arange(6.0),), {}),
    ("common subexpressions are one axis (einx's CSE)", "softmax", "a (c 2) -> a (c 2)", (torch.ones(2, 6),), {}),
    ("common subexpressions are one axis (einx's CSE)", "add", "(c 2), (c 2) -> (c 2)", (torch.ones(6), torch.ones(6)), {}),
    ("common subexpressions are one axis (einx's CSE)", "sum", "a [(c 2)]", (torch.ones(2, 6),), {}),
    ("common subexpressions are one axis (einx's CSE)", "argmax", "a [(c 2)]", (torch.arange(12.0).reshape(2, 6),), {}),
    (
        "common subexpressions are one axis (einx's CSE)",
        "get_at",
        "[(c 2)], i -> i",
        (torch.arange(6.0), torch.tensor([0, 5])),
        {},
    ),
    ("common subexpressions are one axis (einx's CSE)", "id", "(2 3 a) (2 3 b) -> (2 3 b) (2 3 a)", (torch.ones(12, 12),), {}),
    (
        "common subexpressions are one axis (einx's CSE)",
        "softmax",
        "([a] [b])",
        (torch.ones(6),),
        {},
    ),  # brackets inside: not merged
    ("an ellipsis nothing expands is one axis", "sum", "c ([s]...)", (torch.ones(2, 6),), {}),
    ("size error before prod's ValueError (torch)", "prod", "a [c b]", (torch.ones(2, 1, 1),), {"a": 1}),
    ("size error before prod's ValueError (torch)", "prod", "a [c b]", (torch.ones(2, 1, 3),), {}),
    ("Python scalar with a narrower torch dtype", "add", ", a", (1, torch.ones(3, dtype=torch.int32)), {}),
    ("Python scalar with a narrower torch dtype", "multiply", "a b, ", (torch.ones(2, 1, dtype=torch.float16), 0.5), {}),
    ("Python scalar with a narrower torch dtype", "maximum", ", a", (1.5, torch.ones(1, dtype=torch.float16)), {}),
    ("Python scalar with a narrower torch dtype", "add", ", a", (1, torch.ones(1, dtype=torch.int32)), {}),  # size 1: weak
    ("implied output: number axes of two inputs are different axes", "maximum", "(1), (1)", (torch.ones(1), torch.ones(1)), {}),
    ("implied output: number axes of two inputs are different axes", "add", "a 1, a 1", (torch.ones(3, 1), torch.ones(3, 1)), {}),
    *[
        ("a system of several unknown sizes", "id", d, a, kw)
        for d, a, kw in [
            (
                "(a + b) x, (a + b + b) -> x (a + b), (a + b + b)",
                (torch.arange(10.0).reshape(5, 2), torch.arange(7.0)),
                {},
            ),  # linear
            ("(a + b + b), (a + a + b) -> (a + b + b), (a + a + b)", (torch.ones(7), torch.ones(9)), {}),  # no integer solution
            ("(a + b), (a + b + b) -> (a + b), (a + b + b)", (torch.ones(5), torch.ones(4)), {}),  # a negative size
            ("(a + b), (b + a) -> (a + b), (b + a)", (torch.ones(3), torch.ones(3)), {}),  # singular: no unique solution
            ("(a + b), (a + (b c)) -> (b + a), (a + (b c))", (torch.ones(5), torch.ones(8)), {"c": 2}),  # a coefficient given
            ("(a b), (a + b) -> (b a), (a + b)", (torch.arange(9.0), torch.ones(6)), {}),  # nonlinear: solved at run time
            ("(a b), (a + b) -> (b a), (a + b)", (torch.arange(6.0), torch.ones(5)), {}),  # two solutions: einx's error
            ("(1 + (a d)), (d + a) -> (1 + (d a)), (d + a)", (torch.arange(10.0), torch.arange(6.0)), {}),
            ("(a b c), (a + b), (b + c) -> (c b a), (a + b), (b + c)", (torch.arange(6.0), torch.ones(3), torch.ones(5)), {}),
        ]
    ],
    (
        "a concatenation inside an output composition",
        "id",
        "a b d, a c d -> a (d (b + c))",
        (torch.arange(24.0).reshape(2, 3, 4), torch.arange(8.0).reshape(2, 1, 4)),
        {},
    ),
    (
        "a concatenation inside an output composition",
        "id",
        "(a + b) c -> (c (a + b))",
        (torch.arange(15.0).reshape(5, 3),),
        {"a": 2},
    ),
    (
        "a concatenation inside an output composition",
        "id",
        "a b, c b, e b -> (b (a + c + e))",
        (torch.ones(2, 3), torch.zeros(4, 3), torch.ones(1, 3)),
        {},
    ),
    ("a concatenation inside an output composition", "id", "(a + b) c -> (c (b + a))", (torch.ones(5, 3),), {"a": 2}),  # order
    ("a named coordinate axis", "get_at", "b [h v], b p [n] -> b p", (X, torch.tensor([[[0, 1], [2, 3]], [[1, 0], [2, 2]]])), {}),
    ("a named coordinate axis", "get_at", "b [h v], b p [n] -> b p", (X, torch.zeros(2, 2, 3, dtype=torch.long)), {}),  # n != 2
    (
        "a named coordinate axis",
        "set_at",
        "b [h v], b [n] p, b p",
        (X, torch.zeros(2, 2, 3, dtype=torch.long), torch.ones(2, 3)),
        {},
    ),
    ("a named coordinate axis", "get_at", "[h v], p [n], p [m] -> p", (X[0], torch.tensor([[1]]), torch.tensor([[2]])), {}),
    (
        "named coordinate axes the shapes split",
        "get_at",
        "[h v w], p [n], q [m] -> p q",
        (torch.arange(60.0).reshape(3, 4, 5), torch.tensor([[1], [2]]), torch.tensor([[2, 3], [1, 1], [0, 4]])),
        {},
    ),
    (
        "named coordinate axes the shapes split",
        "get_at",
        "[h v w], [n] p, q -> p q",
        (np.arange(60.0).reshape(3, 4, 5), np.array([[1, 2], [0, 3]]), np.array([3, 1, 2])),
        {},
    ),
    (
        "named coordinate axes the shapes split",
        "add_at",
        "b [v w], b p [n], p [m], b p",
        (jnp.arange(60.0).reshape(3, 4, 5), jnp.array([[[1]], [[2]], [[0]]]), jnp.array([[3]]), jnp.ones((3, 1))),
        {},
    ),
    (
        "named coordinate axes the shapes split",
        "get_at",
        "[h v w], p [n], p [m] -> p",
        (torch.ones(3, 4, 5), torch.tensor([[1]]), torch.tensor([[2]])),
        {},
    ),  # n + m != 3
]


@pytest.mark.parametrize("cls, op, desc, args, kw", CLASSES, ids=[f"{c[0]}: {c[1]}('{c[2]}')" for c in CLASSES])
def test_class_agrees_with_einx(cls, op, desc, args, kw):
    same(op, desc, *args, **kw)


# -- deliberate differences (README) ------------------------------------------------------


def test_difference_size_zero_axes_are_valid():
    with pytest.raises(einx.errors.AxisSizeError):
        einx.sum("a [b]", torch.zeros(3, 0))
    assert ex.sum("a [b]", torch.zeros(3, 0)).tolist() == [0.0, 0.0, 0.0]
    # no axis to search (t... repeats 0 times): coordinates of length 0, where einx finds a size 0
    with pytest.raises(einx.errors.AxisSizeError):
        einx.argmin("1 [t...] b d", torch.ones(1, 3, 1))
    y = ex.argmin("1 [t...] b d", torch.ones(1, 3, 1))
    assert y.shape == (1, 0, 3, 1) and y.dtype == torch.int64


def test_difference_size_zero_axes_before_semantic_errors():
    # c = 0 here: einx's AxisSizeError; for us the sizes are valid, and the pieces' count then fails as einx's would
    with pytest.raises(einx.errors.AxisSizeError):
        einx.id("b (b + c) -> c b", torch.ones(4, 4))
    with pytest.raises(einx.errors.SemanticError):
        ex.id("b (b + c) -> c b", torch.ones(4, 4))


def test_systems_of_several_unknown_sizes_are_answered():
    # as many equations as unknowns, none with one unknown alone (einx: sympy): linear ones solved symbolically
    # (no solver call in the graph, only its checks), nonlinear ones at run time; never NotSupportedError
    src = ex.id("(a + b) x, (a + b + b) -> x (a + b), (a + b + b)", torch.ones(5, 2), torch.ones(7), graph=True)
    assert "_ssolve" not in src and "< 0" in src
    assert "_ssolve" in ex.id("(a b), (a + b) -> (b a), (a + b)", torch.ones(9), torch.ones(6), graph=True)
    y = ex.id("(a b), (a + b) -> (b a), (a + b)", torch.arange(9.0), torch.ones(6))
    assert y[0].tolist() == torch.arange(9.0).reshape(3, 3).T.reshape(9).tolist()
    with pytest.raises(einx.errors.AxisSizeError, match="no unique solution"):
        ex.id("(a b), (a + b) -> (b a), (a + b)", torch.ones(6), torch.ones(5))
    with pytest.raises(einx.errors.AxisSizeError):  # fewer equations than unknowns: einx's error, as einx
        ex.id("(a b) -> a b", torch.ones(6))


def test_difference_einx_internal_failures_are_answered():
    # einx 0.4.3 fails on its own diagonal here ("Cannot take diagonal over axes of different length")
    x = torch.arange(4.0).reshape(1, 1, 1, 4)
    with pytest.raises(ValueError, match="diagonal"):
        einx.id("t... () t... (b b 1) -> (b t...)", x, b=2)
    np.testing.assert_array_equal(ex.id("t... () t... (b b 1) -> (b t...)", x, b=2).numpy(), [0.0, 3.0])


def test_difference_diagonal_axis_order():
    # einx 0.4.3 permutes the other axes of a diagonal wrongly when the repeated axes are not trailing
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 4)).astype(np.float32)
    ref = np.einsum("cbcs->cbs", x)
    assert np.abs(einx.id("c b c s -> c b s", x) - ref).max() > 0.1
    np.testing.assert_array_equal(ex.id("c b c s -> c b s", x), ref)
    np.testing.assert_array_equal(ex.id("c c -> c", x[:, 0, :, 0]), np.diagonal(x[:, 0, :, 0]))


def test_difference_reduction_without_reduced_axis_not_supported():
    # einx reduces *everything* with torch here (its result does not match its own output expression)
    assert einx.count_nonzero("(s t)...", torch.ones(2), s=(1,)).shape == ()
    with pytest.raises(ex.errors.NotSupportedError):
        ex.count_nonzero("(s t)...", torch.ones(2), s=(1,))


def test_difference_factory_check_message():
    def bad(shape):
        return torch.ones(1)

    with pytest.raises(einx.errors.CallOperationError):
        einx.add("a, b -> a b", bad, torch.ones(3), a=2)
    with pytest.raises(einx.errors.CallOperationError, match="expected an array of shape"):
        ex.add("a, b -> a b", bad, torch.ones(3), a=2)


# -- the new classes are still one graph, inside torch.compile and jax.jit -----------------

DYNAMIC = [
    ("sum", "a [b b]", lambda n: torch.randn(n, 3, 3)),
    ("id", "(a b) c -> (a b c) 1", lambda n: torch.randn(2 * n, 4)),
    ("sum", "([s])...", lambda n: torch.randn(n, 3)),
    ("argmax", "a [(c 2)]", lambda n: torch.randn(3, 2 * n)),
]


@pytest.mark.parametrize("op, desc, make", DYNAMIC, ids=[d[1] for d in DYNAMIC])
def test_torch_compile_dynamic_one_frame(op, desc, make):
    torch._dynamo.reset()
    ex.clear_cache()
    getattr(ex, op)(desc, make(2))  # the graph is built before dynamo sees the call
    n0 = ex.compile_count()
    counter = torch._dynamo.testing.CompileCounter()
    f = torch.compile(lambda x: getattr(ex, op)(desc, x), backend=counter, dynamic=True)
    for n in (5, 7, 11, 13):  # none equal to a fixed size (3, 4): no duck-sizing guard
        x = make(n)
        torch.testing.assert_close(f(x), getattr(einx, op)(desc, x))
    assert counter.frame_count == 1
    assert ex.compile_count() == n0


@pytest.mark.parametrize("op, desc, make", DYNAMIC, ids=[d[1] for d in DYNAMIC])
def test_jax_jit_traces_per_shape_only(op, desc, make):
    traces = []

    @jax.jit
    def f(x):
        traces.append(x.shape)
        return getattr(ex, op)(desc, x)

    ex.clear_cache()
    n0 = ex.compile_count()
    for n in (3, 4, 3):
        x = jnp.asarray(make(n).numpy())
        np.testing.assert_allclose(np.asarray(f(x)), np.asarray(getattr(einx, op)(desc, x)), rtol=1e-5, atol=1e-5)
    assert len(traces) == 2  # jax's own retrace per new shape, nothing more
    assert ex.compile_count() - n0 == 1


def _system(n):
    return torch.randn(n + 3, 2), torch.randn(n + 6)  # (a + b) x, (a + b + b): a = n, b = 3


@pytest.mark.parametrize(
    "op, desc, make",
    [
        ("id", "(a + b) x, (a + b + b) -> x (a + b), (a + b + b)", _system),
        ("id", "a b d, a c d -> a (d (b + c))", lambda n: (torch.randn(2, n, 4), torch.randn(2, n + 1, 4))),
        ("get_at", "b [h v], b p [n] -> b p", lambda n: (torch.randn(n, 3, n + 1), torch.zeros(n, n + 2, 2, dtype=torch.long))),
    ],
)
def test_torch_compile_dynamic_two_inputs_one_frame(op, desc, make):
    torch._dynamo.reset()
    ex.clear_cache()
    getattr(ex, op)(desc, *make(2))
    n0 = ex.compile_count()
    counter = torch._dynamo.testing.CompileCounter()
    f = torch.compile(lambda x, y: getattr(ex, op)(desc, x, y), backend=counter, dynamic=True)
    for n in (5, 7, 11, 13):
        x, y = make(n)
        torch.testing.assert_close(f(x, y), getattr(einx, op)(desc, x, y))
    assert counter.frame_count == 1
    assert ex.compile_count() == n0


@pytest.mark.parametrize(
    "desc, make",
    [
        ("(a + b) x, (a + b + b) -> x (a + b), (a + b + b)", _system),
        ("(a b), (a + b) -> (b a), (a + b)", lambda n: (torch.randn(n * n), torch.randn(2 * n))),
        ("a b d, a c d -> a (d (b + c))", lambda n: (torch.randn(2, n, 4), torch.randn(2, n + 1, 4))),
    ],
)
def test_jax_jit_system_traces_per_shape_only(desc, make):
    traces = []

    @jax.jit
    def f(x, y):
        traces.append(x.shape)
        return ex.id(desc, x, y)

    ex.clear_cache()
    n0 = ex.compile_count()
    for n in (3, 4, 3):
        x, y = (jnp.asarray(t.numpy()) for t in make(n))
        for u, v in zip(*(r if isinstance(r, tuple) else (r,) for r in (f(x, y), einx.id(desc, x, y))), strict=False):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v))
    assert len(traces) == 2
    assert ex.compile_count() - n0 == 1


@pytest.mark.parametrize("name", ["vmap", "vmap_with_axis", "reduce", "elementwise", "arange"])
def test_removed_operations_raise_like_einx(name):
    with pytest.raises(Exception) as theirs:
        getattr(einx, name)("a -> a", torch.ones(2))
    with pytest.raises(type(theirs.value)):
        getattr(ex, name)("a -> a", torch.ones(2))
