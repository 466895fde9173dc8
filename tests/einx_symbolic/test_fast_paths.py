"""The fast paths (plain-axis recipe, closure graphs, inline call keys) must agree with the general ones."""

import random

import einx
import numpy as np
import pytest
import torch

from engines import einx_symbolic as ex
from engines import sizes
from engines.einx_symbolic import api
from engines.einx_symbolic import build as B
from engines.einx_symbolic import recipe as R
from engines.einx_symbolic.expand import leaves


def _dump(r):
    def ax(e):
        return [(a.name, a.value, a.marked, a.pos) for a in leaves(e)]

    return (
        [ax(e) for e in r.e_in],
        [ax(e) for e in r.e_out],
        {k: sizes.source(v) for k, v in r.sizes.items()},
        [(c.kind, c.lhs, c.rhs, sizes.source(c.lhs), sizes.source(c.rhs), c.what, c.where, c.pos) for c in r.checks],
    )


def _sig(op, desc, lib, ranks):
    dtype = {"torch": "torch.float32", "numpy": "float32", "jax": "float32"}[lib]
    return R.Signature(op, desc, lib, ranks, frozenset(), (lib,) * len(ranks), (dtype,) * len(ranks))


def _descs():
    rng = random.Random(0)
    names = ["a", "b", "c", "e", "d", "x1", "_y"]
    out = [
        "e d, e -> e d",
        "a b, b a -> b a",
        "e, r -> e r",
        "a,b->a b",
        "  a   b ,b->  b a  ",
        "a b -> a b",
        "a, a, a -> a",
        "a a, a -> a",
        "a b, b -> a a b",
        "a b, c -> a b",
        "a b, b -> a",
        "a, b -> a b c",
        "a b, b -> a b, b",
        "a (b), b -> a b",
        "a b, b -> a b ->",
        "1 a, a -> a",
        "a b, b",
        "a\tb, b -> a b",
    ]
    for _ in range(300):
        k = rng.randint(1, 3)
        ins = [rng.sample(names, rng.randint(1, 4)) for _ in range(k)]
        if rng.random() < 0.1:
            ins[0].append(ins[0][0])
        u = list(dict.fromkeys(n for e in ins for n in e))
        rng.shuffle(u)
        if rng.random() < 0.1:
            u = u[:-1]
        if rng.random() < 0.1:
            u.append("zz")
        sep = rng.choice([", ", ",", " , "])
        arrow = rng.choice([" -> ", "->", "  ->  "])
        out.append(sep.join(" ".join(e) for e in ins) + arrow + " ".join(u))
    return out


# fast-path graphs per test that are also checked against real einx 0.4.3 (an
# independent reference: the source-text comparisons below only compare our two paths)
EINX_CHECKS = 40


def _einx_agrees(op, desc, fn, args):
    """``fn`` (one of our graphs) and einx make the same decision to raise, and the same values."""
    if op == "where":
        if len(args) != 3:
            return  # the public ``where`` takes exactly (mask, x, y): such a graph is never built for a user
        args = [args[0] > 3, *args[1:]]  # einx (and torch) take a boolean condition
    want, got = _outcome(getattr(einx, op), [desc, *args]), _outcome(fn, args)
    assert want[0] == got[0], (op, desc, [tuple(a.shape) for a in args], want[:2], got[:2])
    if want[0] == "ok":
        assert (want[1], want[2]) == (got[1], got[2]), (op, desc)
        np.testing.assert_allclose(
            np.asarray(got[3], dtype=float), np.asarray(want[3], dtype=float), rtol=1e-6, err_msg=f"{op}({desc!r})"
        )


@pytest.mark.parametrize("op", ["divide", "add", "where"])
def test_simple_build_matches_general_path(op):
    rng = np.random.default_rng(0)
    fast = 0
    for desc in _descs():
        ranks = tuple(len(e.split()) for e in desc.split("->")[0].split(","))
        for rk in {ranks, tuple(r + 1 for r in ranks)}:
            sig = _sig(op, desc, "torch", rk)
            simple = R._simple(sig)
            try:
                general = R._analyse_solve(sig)
            except Exception as e:
                assert simple is None, (desc, rk, e)
                continue
            if simple is not None:
                fast += 1
                assert _dump(R.recipe(sig)) == _dump(simple)  # recipe() takes the plain path here
                assert _dump(simple) == _dump(general), (desc, rk)
                assert general.params == {} == simple.params
                g_fast = B.generated(simple)
                assert g_fast.source == B.source(general)
                if fast <= EINX_CHECKS:
                    _einx_agrees(op, desc, g_fast.fn, _arrays("torch", desc, rk, rng))
    assert fast == 216  # the seeded corpus's (description, rank) pairs the fast path takes: a change is deliberate


def test_report_graph_is_lean():
    code = ex.divide("e d, e -> e d", torch.zeros(3, 8), torch.ones(3), graph=True)
    assert "return t0 / t1.unsqueeze(1)" in code and "if t0.shape[0] != t1.shape[0]: _fail(0" in code
    d, c = torch.randn(3, 8), torch.rand(3) + 1  # and the graph computes what its text says
    assert torch.equal(ex.divide("e d, e -> e d", d, c), d / c[:, None])


def test_fast_call_key_respects_signature():
    ex.clear_cache()
    n0 = ex.compile_count()
    d = torch.randn(4, 8)
    c = torch.rand(4) + 1
    ex.divide("e d, e -> e d", d, c)
    ex.divide("e d, e -> e d", d, c)
    # dtype, rank and library changes are new signatures, found through both key kinds
    ex.divide("e d, e -> e d", d.double(), c.double())
    np.testing.assert_allclose(ex.divide("e d, e -> e d", d.numpy(), c.numpy()), (d / c[:, None]).numpy(), rtol=1e-6)
    assert ex.compile_count() - n0 == 3  # float32, float64 and numpy: each a new signature, each built once
    # python scalars, constraints, backend and graph still take the general path
    assert torch.equal(ex.divide("e d, -> e d", d, 2.0), d / 2.0)
    assert torch.equal(ex.divide("e d, e -> e d", d, c, e=4), d / c[:, None])
    with pytest.raises(einx.errors.AxisSizeError):
        ex.divide("e d, e -> e d", d, c, e=5)
    assert torch.equal(ex.divide("e d, e -> e d", d, c, backend="torch"), d / c[:, None])
    assert "def op" in ex.divide("e d, e -> e d", d, c, graph=True)
    assert torch.equal(ex.sum("a [b]", d), d.sum(1))
    assert torch.equal(ex.sum("a [b]", d, keepdims=True), d.sum(1, keepdim=True))
    assert torch.equal(ex.flip("a [b]", d), d.flip(1))
    with pytest.raises(einx.errors.AxisSizeError):
        ex.divide("e d, e -> e d", d, torch.ones(5))
    with pytest.raises(Exception):  # noqa: B017 (einx's own error type for a bad constraint differs by call path)
        ex.softmax("a [b]", d, keepdims=False)  # not a keyword of softmax: a (non-integer) constraint value


def _outcome(fn, args):
    try:
        r = fn(*args)
    except Exception as e:
        return ("raise", type(e), str(e))
    r = np.asarray(r)
    return ("ok", r.dtype, r.shape, r.tolist())


def _arrays(lib, desc, rk, rng, perturb=None):
    ins = [e.split() for e in desc.split("->")[0].split(",")]
    size = {n: 2 + (sum(map(ord, n)) % 3) for e in ins for n in e}
    arrs = []
    for i, (e, r) in enumerate(zip(ins, rk, strict=False)):
        shape = [size[n] for n in e][:r] + [1] * (r - len(e))
        if perturb == i and shape:
            shape[-1] += 1
        a = rng.standard_normal(shape).astype(np.float32) + 3
        arrs.append(a)
    if lib == "torch":
        return [torch.from_numpy(a) for a in arrs]
    if lib == "jax":
        import jax.numpy as jnp

        return [jnp.asarray(a) for a in arrs]
    return arrs


CLOSURES = {"torch": 912, "numpy": 912, "jax": 114}


@pytest.mark.parametrize("lib", ["torch", "numpy", "jax"])
def test_closure_graph_matches_generated_graph(lib):
    """The plain-axis path builds closures instead of exec'd source: same source text, results and errors."""
    rng = np.random.default_rng(0)
    descs = _descs() if lib != "jax" else _descs()[:80]
    closures = 0
    for desc in descs:
        nin = desc.split("->")[0].count(",") + 1
        ranks = tuple(len(e.split()) for e in desc.split("->")[0].split(","))
        for rk in {ranks, tuple(r + 1 for r in ranks)}:
            if R._simple(_sig("add", desc, lib, rk)) is None:
                continue
            for op in ["divide", "add", "subtract", "maximum", "less", "where"] if lib != "jax" else ["divide", "add", "where"]:
                sig = _sig(op, desc, lib, rk)
                ex.clear_cache()
                n0 = ex.compile_count()
                g = api.graph_of(sig)  # through the one cache: one build, logged
                assert ex.compile_count() == n0 + 1 and api.BUILD_LOG[-1] == sig.reason()
                if g.text is not None:  # an exec'd graph (its source generated to build it)
                    assert nin < 2
                    continue
                closures += 1
                gen = B.generated(R._simple(sig))
                assert g.text is None and g.source == gen.source, (op, desc, rk)  # source generated on first use only
                for perturb in (None, 0, nin - 1):
                    args = _arrays(lib, desc, rk, rng, perturb)
                    assert _outcome(g.fn, args) == _outcome(gen.fn, args), (op, desc, rk, perturb)
                if closures <= EINX_CHECKS:
                    _einx_agrees(op, desc, g.fn, _arrays(lib, desc, rk, rng))
    assert closures == CLOSURES[lib]  # graphs the closure path built for the seeded corpus: a change is deliberate


def test_closure_graph_public_api_errors_and_source():
    d, c = torch.randn(4, 8), torch.rand(4) + 1
    ex.clear_cache()
    with pytest.raises(einx.errors.AxisSizeError) as ei:
        ex.divide("e d, e -> e d", d, torch.ones(5))
    assert str(ei.value) == (
        "Failed to determine the size of all axes in the expression under the given constraints: "
        'e = args[0].shape[0] = 4, but args[1].shape[0] = 5.\nExpression: "e d, e -> e d"\n' + " " * 13 + "     ^       "
    )
    # a library error inside the graph: CallOperationError quoting the (lazily generated) source
    ex.clear_cache()
    with pytest.raises(einx.errors.CallOperationError) as ei:
        ex.logaddexp("a b, a -> a b", d.long(), c.long())  # not implemented for integers
    assert "return torch.logaddexp(t0, t1.unsqueeze(1))" in str(ei.value)
    ex.clear_cache()
    assert ex.divide("e d, e -> e d", d, c, graph=True) == (
        "def op(t0, t1):\n    if t0.shape[0] != t1.shape[0]: _fail(0, t0.shape[0], t1.shape[0])\n    return t0 / t1.unsqueeze(1)\n"
    )


@pytest.mark.parametrize(
    "desc,shapes",
    [
        ("... d, ... -> ... d", [(3, 4, 5), (3, 4)]),
        ("b... d, d -> d b...", [(2, 3, 5), (5,)]),
        ("a ..., ... -> ... a", [(2, 3), (3,)]),
    ],
)
def test_closure_graph_of_a_general_recipe(desc, shapes):
    """Closures are derived from the recipe, whichever path made it: ellipses expanded to plain axes qualify."""
    rng = np.random.default_rng(0)
    sig = _sig("divide", desc, "torch", tuple(len(s) for s in shapes))
    assert R._simple(sig) is None
    r = R.recipe(sig)
    g, gen = B.build(sig), B.generated(r)
    assert g.text is None and g.source == gen.source
    for perturb in (None, 0, 1):
        args = [torch.from_numpy(rng.standard_normal(s).astype(np.float32) + 3) for s in shapes]
        if perturb is not None:
            args[perturb] = torch.ones(*(n + 1 for n in shapes[perturb]))
        assert _outcome(g.fn, args) == _outcome(gen.fn, args), (desc, perturb)
        _einx_agrees("divide", desc, g.fn, args)
