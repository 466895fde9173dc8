"""Floor, ceil, round (half to even) and trunc of size quotients (:mod:`engines.sizes.rational`):
against Python's own arithmetic, from text and from torch.export's sympy."""

import math
from fractions import Fraction

import pytest

from engines import sizes as S
from engines.sizes.rational import ROUNDINGS, Ratio, fraction

PY = {"floor": math.floor, "ceil": math.ceil, "round": round, "trunc": math.trunc}
#: numerators over n (negative ones included: a size expression may be) and divisors
NUMS = {"n": lambda n: n, "2n+1": lambda n: 2 * n + 1, "-n": lambda n: -n, "n-7": lambda n: n - 7}
DIVS = (1, 2, 3, 4, -3, 6)


@pytest.mark.parametrize("how", sorted(ROUNDINGS))
@pytest.mark.parametrize("num", sorted(NUMS))
@pytest.mark.parametrize("d", DIVS)
def test_roundings_of_a_quotient_are_pythons(how, num, d):
    """Every (rounding, numerator, divisor): the normal form evaluates to Python's
    ``how(Fraction(num, d))`` at every n in -40..80 (ties included: half to even)."""
    f = NUMS[num]
    e = ROUNDINGS[how](f(S.var("n")), d)
    for n in range(-40, 81):
        assert S.evaluate(e, {"n": n}) == PY[how](Fraction(f(n), d)), (how, num, d, n, str(e))


@pytest.mark.parametrize("how", sorted(ROUNDINGS))
def test_symbolic_divisor_positive(how):
    e = ROUNDINGS[how](S.var("n") + 1, S.var("m"))
    for n in range(0, 30):
        for m in range(1, 9):
            assert S.evaluate(e, {"n": n, "m": m}) == PY[how](Fraction(n + 1, m)), (how, n, m)


@pytest.mark.parametrize(
    ("text", "fn"),
    [
        ("round(n / 3)", lambda n: round(n / 3)),
        ("ceil((n + 1) / 4) + n // 2", lambda n: math.ceil((n + 1) / 4) + n // 2),
        ("floor(n / 5) - round(2*n / 4)", lambda n: math.floor(n / 5) - round(2 * n / 4)),
        ("trunc((n - 9) / 2)", lambda n: math.trunc((n - 9) / 2)),
    ],
)
def test_text_roundings(text, fn):
    e = S.parse(text)
    assert S.parse(str(e)) == e
    for n in range(0, 40):
        assert S.evaluate(e, {"n": n}) == fn(n), (text, n)


def test_float_constants_are_exact_dyadic_fractions_or_refused():
    """Dyadic floats are taken and agree with double arithmetic at every size; 0.7
    (torch's ``int(90 * 0.7)`` is 62 in double) is refused, naming the float."""
    assert fraction(0.5) == Fraction(1, 2) and fraction(1.25) == Fraction(5, 4) and fraction(3) == 3
    for bad, match in ((0.7, r"0\.7"), (math.pi, r"3\.14"), (math.inf, "float inf")):
        with pytest.raises(S.SizeError, match=match):
            fraction(bad)
    for c in (0.5, 1.5, 0.25, 2.5, 0.125):
        r = Ratio(S.var("n")) * c
        for how, fn in PY.items():
            e = r.round(how)
            for n in range(0, 500):
                assert S.evaluate(e, {"n": n}) == fn(n * c), (c, how, n)
    q = Ratio(S.var("n")) / 3  # one true division of sizes: the double's rounding never crosses an integer
    for how, fn in PY.items():
        e = q.round(how)
        for n in range(0, 1500):
            assert S.evaluate(e, {"n": n}) == fn(n / 3), (how, n)


def test_from_sympy_reads_torchs_float_functions():
    sympy = pytest.importorskip("sympy")
    F = pytest.importorskip("torch.utils._sympy.functions")
    s = sympy.Symbol("s0", integer=True, positive=True)
    cases = {
        F.RoundToInt(F.IntTrueDiv(s, 3)): lambda n: round(n / 3),
        F.CeilToInt(F.IntTrueDiv(s, 4)): lambda n: math.ceil(n / 4),
        F.FloorToInt(F.IntTrueDiv(s, 3)): lambda n: n // 3,
        F.TruncToInt(sympy.Float(0.5) * F.ToFloat(s)): lambda n: math.trunc(n * 0.5),
        F.RoundToInt(sympy.Float(2.5) * F.ToFloat(s) + 1): lambda n: round(n * 2.5 + 1),
        F.CeilToInt(F.FloatTrueDiv(F.ToFloat(s), sympy.Float(2.0))): lambda n: math.ceil(n / 2.0),
        F.Min(s, F.RoundToInt(F.IntTrueDiv(2 * s, 5))): lambda n: min(n, round(2 * n / 5)),
    }
    for sx, fn in cases.items():
        e = S.from_sympy(sx)
        for n in range(1, 60):
            assert S.evaluate(e, {"s0": n}) == fn(n), (sx, n, str(e))
    with pytest.raises(S.SizeError, match=r"0\.7"):
        S.from_sympy(F.TruncToInt(sympy.Float(0.7) * F.ToFloat(s)))
    with pytest.raises(S.SizeError, match="RoundDecimal"):
        S.from_sympy(F.RoundToInt(F.RoundDecimal(F.ToFloat(s), 1)))
