"""The distribution oracle: how a random entry's outputs are judged where its values cannot
equal eager's (XLA's generator draws other numbers than torch's).

Used only for the entries ``op_db`` marks random -- their op wrapped in ``wrapper_set_seed``,
its way of saying the op draws from torch's generator (:func:`is_random`) -- and only where the
lowered module draws random numbers itself (``rng_bit_generator``): a pass through it is
recorded with route ``distribution``, never as value equality. Each output is compared with a
*reference*: eager's outputs pooled over :func:`reference` seeds (at least :data:`REFERENCE`
values), which are draws of the same distribution (position by position: the pooled test
statistics below are conservative for positions of unlike parameters).

* shapes and dtypes exactly eager's;
* support: each property every reference value has -- finite, >= 0, integral, 0 or 1 -- ours
  has too (a property the support lacks shows in ``REFERENCE`` draws but with the chance of a
  value it excludes, ``(1 - p)^REFERENCE``);
* over the values of both sizes' calls, at least :data:`MIN_SAMPLE` of them (fewer say too
  little; a constant at the median fails from 30 on): the two-sample
  Kolmogorov-Smirnov distance within its critical value at level :data:`ALPHA`, and the mean
  and variance within :data:`Z` standard errors of the reference's (the errors from the
  reference's second and fourth moments; no bound where those are not finite)."""

from __future__ import annotations

import contextlib
import functools
import math
import warnings

import numpy as np
import torch
from torch.utils import _pytree as pytree

REFERENCE = 20_000  # reference values pooled per output, at least
MAX_SEEDS = 400
MIN_SAMPLE = 30
ALPHA = 1e-6  # each test's false-alarm rate
Z = 6.0  # standard errors a moment may be off (two-sided, ~2e-9 for a normal statistic)


class Mismatch(AssertionError):
    pass


@functools.cache
def _random_entries() -> frozenset[str]:
    from .samples import entry_name, op_db

    def seeded(f) -> bool:
        code = getattr(f, "__code__", None)
        return code is not None and "wrapper_set_seed" in code.co_names

    return frozenset(entry_name(o) for o in op_db() if seeded(o.op) or seeded(getattr(o, "method_variant", None)))


def is_random(entry: str) -> bool:
    """Whether ``op_db`` marks ``entry`` random (its op called through ``wrapper_set_seed``)."""
    return entry in _random_entries()


@contextlib.contextmanager
def unseeded(op):
    """Within it, ``op``'s calls draw from the generator as it stands: ``wrapper_set_seed``
    (which seeds 42 before each call, so every call draws the same numbers) passes through."""
    spaces = {id(g): g for f in (op.op, getattr(op, "method_variant", None)) if (g := getattr(f, "__globals__", None))}
    saved = {k: g.get("wrapper_set_seed") for k, g in spaces.items()}
    try:
        for g in spaces.values():
            g["wrapper_set_seed"] = lambda f, *a, **kw: f(*a, **kw)
        yield
    finally:
        for k, g in spaces.items():
            g["wrapper_set_seed"] = saved[k]


def reference(op, call, leaves, n_values: int) -> list[np.ndarray]:
    """Each output of ``call(leaves)`` (an entry of ``op``) pooled (flattened) over enough seeds
    for :data:`REFERENCE` values."""
    seeds = min(MAX_SEEDS, max(1, math.ceil(REFERENCE / max(n_values, 1))))
    pooled: list[list[np.ndarray]] = []
    with warnings.catch_warnings(), unseeded(op):
        warnings.simplefilter("ignore")
        for seed in range(1, seeds + 1):
            torch.manual_seed(seed)
            outs = pytree.tree_flatten(call([t.clone() for t in leaves]))[0]
            if not pooled:
                pooled = [[] for _ in outs]
            for acc, o in zip(pooled, outs, strict=True):
                acc.append(np.asarray(o.detach().double() if isinstance(o, torch.Tensor) else o, np.float64).reshape(-1))
    return [np.concatenate(a) for a in pooled]


def _support(i: int, ours: np.ndarray, ref: np.ndarray) -> None:
    checks = (
        ("finite", np.isfinite),
        ("non-negative", lambda v: v >= 0),
        ("integral", lambda v: v == np.round(v)),
        ("0 or 1", lambda v: (v == 0) | (v == 1)),
    )
    for name, holds in checks:
        if ref.size and holds(ref).all() and not holds(ours).all():
            bad = ours[~holds(ours)][:3]
            raise Mismatch(f"output {i}: values off the support ({name} in {ref.size} reference draws): {bad}")


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_critical(n: int, m: int, alpha: float = ALPHA) -> float:
    """The asymptotic critical distance at level ``alpha`` (conservative for discrete laws)."""
    return math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n + m) / (n * m))


def _statistics(i: int, ours: np.ndarray, ref: np.ndarray) -> None:
    n, m = ours.size, ref.size
    d, crit = ks_distance(ours, ref), ks_critical(n, m)
    if d > crit:
        raise Mismatch(f"output {i}: Kolmogorov-Smirnov distance {d:.3g} to eager's draws above {crit:.3g} (alpha {ALPHA})")
    with np.errstate(all="ignore"):
        mu, var = ref.mean(), ref.var()
        mu4 = np.mean((ref - mu) ** 4)
    if not np.isfinite([mu, var, mu4]).all():
        return
    bound = Z * math.sqrt(var / n + var / m)
    if abs(ours.mean() - mu) > bound:
        raise Mismatch(f"output {i}: mean {ours.mean():.4g}, eager's {mu:.4g} (bound {bound:.3g})")
    vbound = Z * math.sqrt(max(mu4 - var**2, 0.0) * (1 / n + 1 / m))
    if abs(ours.var() - var) > vbound:
        raise Mismatch(f"output {i}: variance {ours.var():.4g}, eager's {var:.4g} (bound {vbound:.3g})")


def judge(got: list, want: list, ref: list[np.ndarray]) -> None:
    """Raise :class:`Mismatch` where one call's ``got`` is not shaped as eager's ``want`` or has a
    value off the support ``ref`` (pooled reference values) shows."""
    if len(got) != len(want):
        raise Mismatch(f"{len(got)} outputs, eager gives {len(want)}")
    for i, (a, b, r) in enumerate(zip(got, want, ref, strict=True)):
        a = torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            raise Mismatch(f"output {i}: {a.dtype}{tuple(a.shape)}, eager {b.dtype}{tuple(b.shape)}")
        _support(i, _values(a), r)


def judge_pooled(calls: list[tuple[list, list[np.ndarray]]]) -> None:
    """The statistical tests over every call's values at once (``calls``: (got, ref) each; the
    calls of one sample, whose second size tiles the first: one law at a random position)."""
    for i in range(len(calls[0][0])):
        ours = np.concatenate([_values(got[i]) for got, _ in calls])
        if ours.size >= MIN_SAMPLE:
            _statistics(i, ours, np.concatenate([ref[i] for _, ref in calls]))


def _values(a) -> np.ndarray:
    a = torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
    return a.detach().double().numpy().reshape(-1)
