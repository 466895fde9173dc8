"""from_sympy against sympy's own evaluation, with the torch.export functions."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sizes_trees import VARS, envs, outcome, trees

from engines import sizes as S

sympy = pytest.importorskip("sympy")
F = pytest.importorskip("torch.utils._sympy.functions")

SYMS = {v: sympy.Symbol(v, integer=True) for v in VARS}


def to_sympy(t):
    """The tree as torch.export would write it (FloorDiv, PythonMod, Max, Min)."""
    k = t[0]
    if k == "const":
        return sympy.Integer(t[1])
    if k == "var":
        return SYMS[t[1]]
    if k == "neg":
        return -to_sympy(t[1])
    if k in ("max", "min"):
        args = [to_sympy(x) for x in t[1]]
        return args[0] if len(args) == 1 else (F.Max if k == "max" else F.Min)(*args)
    left, right = to_sympy(t[1]), to_sympy(t[2])
    return {
        "+": lambda: left + right,
        "-": lambda: left - right,
        "*": lambda: left * right,
        "//": lambda: F.FloorDiv(left, right),
        "%": lambda: F.PythonMod(left, right),
    }[k]()


def sympy_value(x, env):
    v = x.subs({SYMS[n]: sympy.Integer(val) for n, val in env.items()})
    assert v.is_Integer, v
    return int(v)


@settings(deadline=None)
@given(trees, st.lists(envs, min_size=1, max_size=3))
def test_from_sympy_agrees_with_sympy(t, environments):
    x = outcome(lambda: to_sympy(t))
    assume(x[0] == "ok")  # sympy itself refuses a constant zero divisor
    x = x[1]
    e = outcome(lambda: S.from_sympy(x))
    if e[0] == "zero":  # sympy kept a division our normal form sees is by 0
        assert all(outcome(lambda: sympy_value(x, env))[0] == "zero" for env in environments)
        return
    for env in environments:
        want, got = outcome(lambda: sympy_value(x, env)), outcome(lambda: S.evaluate(e[1], env))
        if want[0] == got[0] == "ok":  # (with a zero divisor either side may raise: sympy folds 0 // b to 0)
            assert got == want, (x, str(e[1]), env)


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.sampled_from(VARS)), min_size=1, max_size=4),
    st.integers(1, 7),
    st.fixed_dictionaries({v: st.integers(0, 40) for v in VARS}),
)
def test_torch_mod_and_powers(terms, c, env):
    """torch's ``Mod`` (non-negative operands only) and ``Pow``."""
    poly = sum((k * SYMS[v] ** 2 + SYMS[v] for k, v in terms), sympy.Integer(0))
    for x in (F.Mod(poly, c), F.Mod(poly, SYMS["a"] + 1), F.FloorDiv(poly, c) + F.CleanDiv(c * poly, c)):
        assert S.evaluate(S.from_sympy(x), env) == sympy_value(x, env), x


def test_torch_export_expressions():
    s77, s17 = SYMS["a"], SYMS["b"]
    assert S.from_sympy(F.FloorDiv(s77, 2) + F.Mod(s77, 3) + 2) == S.parse("a // 2 + a % 3 + 2")
    assert S.from_sympy(F.FloorDiv(s17 + s77, s17) + 2) == S.parse("a // b + 3")
    assert S.from_sympy(s17 * s77 - 1) == S.parse("a*b - 1")
    assert S.from_sympy(F.Max(s17, s77)) == S.parse("max(b, a)") and S.from_sympy(7) == 7
    assert S.from_sympy(F.CeilDiv(s77, 2)) == S.parse("(a + 1) // 2")  # torch rewrites it to FloorDiv
    with pytest.raises(S.SizeError, match="unsupported size function IntTrueDiv"):
        S.from_sympy(F.IntTrueDiv(s77, 2) + 1)
    assert S.from_sympy(F.TruncToInt(F.ToFloat(s77))) == S.parse("trunc(a / 1)")  # engines.sizes.rational
    with pytest.raises(S.SizeError, match="unsupported float size function OpaqueUnaryFn_sqrt"):
        S.from_sympy(F.TruncToInt(F.OpaqueUnaryFn_sqrt(F.ToFloat(s77))))
    # an upsample by a float scale: floor(1.5 * a), exact for short binary fractions only
    up = S.from_sympy(F.TruncToInt(1.5 * F.ToFloat(s77)))
    assert [S.evaluate(up, {"a": a}) for a in (0, 5, 7)] == [0, 7, 10]
    two = S.from_sympy(F.TruncToInt(2.0 * F.ToFloat(s17 + 1)))
    assert [S.evaluate(two, {"b": b}) for b in (0, 3)] == [2, 8]
    with pytest.raises(S.SizeError, match=r"1\.1"):
        S.from_sympy(F.TruncToInt(1.1 * F.ToFloat(s77)))
    with pytest.raises(S.SizeError, match="non-integer coefficient 1/2"):
        S.from_sympy(s77 / 2)
    with pytest.raises(S.SizeError, match=r"size variable 'c' has no value in the environment \(known: a, b\)"):
        S.from_sympy(s77 + SYMS["c"], names=["a", "b"])


def test_from_a_torch_symint():
    torch = pytest.importorskip("torch")
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    shape_env = ShapeEnv()
    n = shape_env.create_unbacked_symint()
    e = S.from_sympy(n * 2 + 1)
    (name,) = e.vars
    assert isinstance(n, torch.SymInt) and e == 2 * S.var(name) + 1
