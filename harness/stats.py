"""Is a latency change real? The Mann-Whitney U rank test, as asv decides it.

asv (``asv._stats.is_different``) calls two sets of samples different when a
two-sided Mann-Whitney U test gives ``p < 0.002``. The smallest two-sided p of
``m`` against ``n`` samples is ``2 / C(m + n, m)`` (every sample of one side
beyond every sample of the other): 2/924 = 0.00216 at six a side, which can
never pass, and 2/3432 = 0.00058 at seven. asv itself gates the test on the
one-sided bound ``1 / C(m + n, m)``, so at six a side it runs a test that
cannot fire and silently says "not different"; :func:`testable` uses the
two-sided bound, so here six a side is "too few to tell" (``None``), and
:data:`MIN_SAMPLES` (seven) is the fewest a side that can fire. Ties are
broken conservatively (the least significant way), as asv does.
"""

from __future__ import annotations

import functools
import math

#: asv's threshold
P_THRESHOLD = 0.002


def min_p(m: int, n: int) -> float:
    """The smallest two-sided p-value samples of sizes ``m`` and ``n`` can give."""
    return min(1.0, 2 / math.comb(m + n, min(m, n)))


def testable(m: int, n: int, p_threshold: float = P_THRESHOLD) -> bool:
    """Whether samples of sizes ``m`` and ``n`` can reach a two-sided ``p < p_threshold``."""
    return m > 0 and n > 0 and min_p(m, n) < p_threshold


def fewest_samples(p_threshold: float = P_THRESHOLD) -> int:
    """The fewest samples a side (equal sides) that can reach ``p < p_threshold``."""
    n = 1
    while not testable(n, n, p_threshold):
        n += 1
    return n


#: the fewest samples a side with which a change can be called significant at
#: :data:`P_THRESHOLD` (7): what ``run --processes`` and ``compare`` advise for
#: the novel sweep, and the asv suite's rounds
MIN_SAMPLES = fewest_samples()


def mann_whitney_u(x, y) -> tuple[float, float]:
    """``(U, p)``: the U statistic of ``x`` against ``y`` and the two-sided
    p-value (exact up to 20 samples a side, the normal approximation beyond)."""
    m, n = len(x), len(y)
    u = sum(1.0 for a in x for b in y if a > b)
    ties = sum(1 for a in x for b in y if a == b)
    half = m * n / 2
    # conservative tie-breaking: count ties on the side that brings U nearest the middle
    lo, hi = u, u + ties
    ux = min(max(half, lo), hi) if lo <= half <= hi else (hi if abs(hi - half) < abs(lo - half) else lo)
    ux = min(ux, m * n - ux)
    if max(m, n) <= 20:
        k = math.floor(ux)
        p = 2 * _cdf(m, n, k) if ux < half else 1.0
    else:
        z = (ux - half) / math.sqrt(m * n * (m + n + 1) / 12)
        p = 2 * 0.5 * math.erfc(-z / math.sqrt(2))
    return u, min(1.0, p)


def _cdf(m: int, n: int, u: int) -> float:
    """P(U <= u) under the null hypothesis."""
    total = math.comb(m + n, m)
    return sum(_count(m, n, k) for k in range(u + 1)) / total


@functools.cache
def _count(m: int, n: int, u: int) -> int:
    """Arrangements of ``m`` and ``n`` samples with U statistic ``u``."""
    if u < 0:
        return 0
    if m == 0 or n == 0:
        return int(u == 0)
    return _count(m - 1, n, u - n) + _count(m, n - 1, u)


def is_different(a, b, p_threshold: float = P_THRESHOLD) -> bool | None:
    """``True``/``False``: whether ``a`` and ``b`` differ at ``p_threshold``;
    ``None`` when there are too few samples to tell."""
    a = [float(v) for v in a if v is not None and not math.isnan(v)]
    b = [float(v) for v in b if v is not None and not math.isnan(v)]
    if not testable(len(a), len(b), p_threshold):
        return None
    return mann_whitney_u(a, b)[1] < p_threshold
