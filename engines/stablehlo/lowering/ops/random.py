"""Random draws with StableHLO's generator (``rng_bit_generator``, Philox): uniform bits made
``U[0, 1)`` floats (the mantissa filled, exponent of 1, minus 1), then each distribution by
its inverse CDF (exponential, Cauchy, geometric), Box-Muller (normal, log-normal), a compare
(Bernoulli), a floor (randint). XLA's generator cannot draw torch's numbers: these ops are
right in distribution, not in value (the OpInfo suite judges them with its distribution oracle,
``conformance/opinfo/distribution.py``). Each draw in a module gets its own stream (the
generator's state: a fixed key and the draw's ordinal), so a module draws the same numbers on
every call."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..registry import lowers
from .special import _add, _c, _mul, _sub

aten = torch.ops.aten

SEED = 0x5EED


def _at_bound(ctx, shape):
    """``shape`` with each dynamic dim at its bound (the generator draws static shapes)."""
    out = []
    for d in shape:
        b = d if isinstance(d, int) else ctx.bound_of(d)
        if b is None:
            raise NotImplementedError(f"a random draw of dim {d}, which has no bound (the generator's shapes are static)")
        out.append(int(b))
    return tuple(out)


def uniform01(ctx, shape, dtype: str):
    """``U[0, 1)`` of ``shape`` in float ``dtype`` (f16/bf16 drawn in f32): drawn at the shape's
    bound, its live part sliced."""
    fdt = "f64" if dtype == "f64" else "f32"
    bits_t, width, mant = ("ui64", 64, 52) if fdt == "f64" else ("ui32", 32, 23)
    k = ctx.__dict__.setdefault("_rng_draws", 0)
    ctx._rng_draws = k + 1
    state = ctx.dense_constant(np.array([SEED, k], np.uint64), "ui64")
    full = _at_bound(ctx, shape)
    _, bits = ctx.op(
        "stablehlo.rng_bit_generator",
        [state],
        [((2,), "ui64"), (full, bits_t)],
        attrs={"rng_algorithm": "#stablehlo<rng_algorithm PHILOX>"},
    )
    shifted = ctx.binary("stablehlo.shift_right_logical", bits, ctx.constant(width - mant, bits_t, full))
    one_bits = ctx.constant((1023 << 52) if fdt == "f64" else (127 << 23), bits_t, full)
    f = ctx.op("stablehlo.bitcast_convert", [ctx.binary("stablehlo.or", shifted, one_bits)], (full, fdt))
    u = _sub(ctx, f, _c(ctx, f, 1.0))
    if full != tuple(shape):
        u = ctx.slice(u, [0] * len(full), list(shape), [1] * len(full), out_shape=tuple(shape))
    return ctx.convert(u, dtype)


def normal01(ctx, shape, dtype: str):
    """N(0, 1) by Box-Muller: ``sqrt(-2 log(1 - u1)) cos(2 pi u2)`` (1 - u1 > 0)."""
    cdt = "f64" if dtype == "f64" else "f32"
    u1, u2 = uniform01(ctx, shape, cdt), uniform01(ctx, shape, cdt)
    r = ctx.unary("stablehlo.sqrt", _mul(ctx, _c(ctx, u1, -2.0), ctx.unary("stablehlo.log", _sub(ctx, _c(ctx, u1, 1.0), u1))))
    return ctx.convert(_mul(ctx, r, ctx.unary("stablehlo.cosine", _mul(ctx, _c(ctx, u2, 2 * math.pi), u2))), dtype)


def _affine(ctx, z, loc, scale):
    """``loc + scale * z`` (numbers or tensors broadcast to ``z``)."""
    return _add(ctx, ctx.tensor(loc, z.dtype, z.sym_shape), _mul(ctx, ctx.tensor(scale, z.dtype, z.sym_shape), z))


def _spec(ctx, node):
    return ctx.out_shape(node), ctx.out_dtype(node)


def _wide(dt):
    return "f64" if dt == "f64" else "f32"


@lowers(aten.rand.default, aten.rand_like.default)
def _rand(ctx, node, *args, **kw):
    shape, dt = _spec(ctx, node)
    return uniform01(ctx, shape, dt)


@lowers(aten.randn.default, aten.randn_like.default)
def _randn(ctx, node, *args, **kw):
    shape, dt = _spec(ctx, node)
    return normal01(ctx, shape, dt)


@lowers(aten.uniform.default)
def _uniform(ctx, node, x, low=0.0, high=1.0, generator=None):
    shape, dt = _spec(ctx, node)
    u = uniform01(ctx, shape, _wide(dt))
    return ctx.convert(_affine(ctx, u, low, high - low), dt)


@lowers(aten.normal.Tensor_Tensor, aten.normal.Tensor_float, aten.normal.float_Tensor)
def _normal(ctx, node, mean, std=1.0, generator=None):
    shape, dt = _spec(ctx, node)
    return ctx.convert(_affine(ctx, normal01(ctx, shape, _wide(dt)), mean, std), dt)


@lowers(aten.normal.float_float)
def _normal_sized(ctx, node, mean, std, size, *, generator=None, **kw):
    shape, dt = _spec(ctx, node)
    return ctx.convert(_affine(ctx, normal01(ctx, shape, _wide(dt)), mean, std), dt)


@lowers(aten.normal_functional.default)
def _normal_like(ctx, node, x, mean=0.0, std=1.0, generator=None):
    shape, dt = _spec(ctx, node)
    return ctx.convert(_affine(ctx, normal01(ctx, shape, _wide(dt)), mean, std), dt)


@lowers(aten.log_normal.default)
def _log_normal(ctx, node, x, mean=1.0, std=2.0, generator=None):
    shape, dt = _spec(ctx, node)
    return ctx.convert(ctx.unary("stablehlo.exponential", _affine(ctx, normal01(ctx, shape, _wide(dt)), mean, std)), dt)


def _log1m(ctx, u):
    """log(1 - u), finite for u in [0, 1)."""
    return ctx.unary("stablehlo.log_plus_one", ctx.unary("stablehlo.negate", u))


@lowers(aten.exponential.default)
def _exponential(ctx, node, x, lambd=1.0, generator=None):
    """``-log(1 - u) / lambda``."""
    shape, dt = _spec(ctx, node)
    u = uniform01(ctx, shape, _wide(dt))
    return ctx.convert(_mul(ctx, _log1m(ctx, u), _c(ctx, u, -1.0 / lambd)), dt)


@lowers(aten.cauchy.default)
def _cauchy(ctx, node, x, median=0.0, sigma=1.0, generator=None):
    """``median + sigma tan(pi (u - 1/2))``."""
    shape, dt = _spec(ctx, node)
    u = uniform01(ctx, shape, _wide(dt))
    t = _mul(ctx, _c(ctx, u, math.pi), _sub(ctx, u, _c(ctx, u, 0.5)))
    tan = ctx.binary("stablehlo.divide", ctx.unary("stablehlo.sine", t), ctx.unary("stablehlo.cosine", t))
    return ctx.convert(_affine(ctx, tan, median, sigma), dt)


@lowers(aten.geometric.default)
def _geometric(ctx, node, x, p, generator=None):
    """Trials to the first success: ``ceil(log(1 - u) / log(1 - p))``, at least 1."""
    shape, dt = _spec(ctx, node)
    u = uniform01(ctx, shape, "f64")
    k = ctx.unary("stablehlo.ceil", _mul(ctx, _log1m(ctx, u), _c(ctx, u, 1.0 / math.log1p(-p))))
    return ctx.convert(ctx.binary("stablehlo.maximum", k, _c(ctx, k, 1.0)), dt)


@lowers(aten.randint.default, aten.randint.low)
def _randint(ctx, node, *args, **kw):
    """``low + floor(u (high - low))``: ``randint(high, size)`` or ``randint(low, high, size)``."""
    shape, dt = _spec(ctx, node)
    low, high = (0, args[0]) if len(args) == 2 else (args[0], args[1])
    u = uniform01(ctx, shape, "f64")
    span = ctx.tensor(high, "f64", shape) if not isinstance(high, (int, float)) else _c(ctx, u, float(high))
    lo = ctx.tensor(low, "f64", shape) if not isinstance(low, (int, float)) else _c(ctx, u, float(low))
    return ctx.convert(_add(ctx, lo, ctx.unary("stablehlo.floor", _mul(ctx, u, _sub(ctx, span, lo)))), dt)


@lowers(aten.rrelu_with_noise_functional.default)
def _rrelu(ctx, node, x, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """(``x`` where positive, else ``x * a``; the noise: ``a``, or 1) with ``a ~ U[lower, upper)``
    in training, ``(lower + upper) / 2`` otherwise."""
    dt, shape = ctx.out_dtype(node, 0), ctx.out_shape(node, 0)
    if training:
        a = ctx.convert(_affine(ctx, uniform01(ctx, shape, _wide(dt)), lower, upper - lower), dt)
    else:
        a = ctx.constant((lower + upper) / 2, dt, shape)
    neg = ctx.compare(x, ctx.constant(0, dt, shape), "LE")
    one = ctx.constant(1, dt, shape)
    noise_out = ctx.select(neg, a, one) if training else ctx.tensor(noise, ctx.out_dtype(node, 1), ctx.out_shape(node, 1))
    return ctx.select(neg, _mul(ctx, x, a), x), noise_out


@lowers(aten.multinomial.default)
def _multinomial(ctx, node, probs, num_samples, replacement=False, generator=None):
    """Without replacement: the top ``num_samples`` of ``log p + Gumbel`` (the Gumbel-top-k trick)."""
    from .sort import sort_with_indices

    shape, dt = _spec(ctx, node)
    p = ctx.convert(probs, "f64")
    if not replacement:
        u = uniform01(ctx, p.sym_shape, "f64")
        gumbel = ctx.unary("stablehlo.negate", ctx.unary("stablehlo.log", ctx.unary("stablehlo.negate", _log1m(ctx, u))))
        keys = _add(ctx, ctx.unary("stablehlo.log", p), gumbel)
        _, order = sort_with_indices(ctx, keys, p.rank - 1, True)
        lead = list(shape[:-1])
        return ctx.convert(ctx.slice(order, [0] * p.rank, lead + [num_samples], [1] * p.rank, out_shape=shape), dt)
    # with replacement, by the inverse CDF, is not built: its values were not checked
    raise NotImplementedError("multinomial with replacement")
