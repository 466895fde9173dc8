"""Elementwise ops: arithmetic, comparisons, unary math, gelu, where, casts.

Operands (tensors, Python scalars, SymInt values) are converted to the
computation dtype and broadcast to the node's output shape; for dynamic output
shapes that is a ``dynamic_broadcast_in_dim`` fed by the shape arithmetic.
"""

from __future__ import annotations

import math

import torch

from .. import types as T
from ..builder import Value
from ..registry import lowers

aten = torch.ops.aten


def _torch_dtype(mlir: str) -> torch.dtype:
    return {v: k for k, v in T.TORCH_TO_MLIR.items()}[mlir]


def promote(a, b) -> str:
    """torch type promotion of two operands (lowered Values or Python scalars)."""

    def dummy(x):
        if isinstance(x, Value):
            if x.is_sym:  # a Python number
                return True if x.dtype == "i1" else 1.0 if T.is_float(x.dtype) else 1
            return torch.empty((1,) * x.rank if x.rank else (), dtype=_torch_dtype(x.dtype))
        return x

    return T.mlir_dtype(torch.result_type(dummy(a), dummy(b)))


def _operands(ctx, node, xs, dtype):
    shape = ctx.out_shape(node)
    return [ctx.tensor(x, dtype, shape) for x in xs]


def _binary(opname):
    def fn(ctx, node, a, b, alpha=1, **kw):
        dt = ctx.out_dtype(node)
        x, y = _operands(ctx, node, [a, b], dt)
        if alpha != 1:
            y = ctx.binary("stablehlo.multiply", y, ctx.tensor(alpha, dt, y.sym_shape))
        return ctx.binary(opname, x, y)

    return fn


lowers(aten.add.Tensor, aten.add.Scalar)(_binary("stablehlo.add"))
lowers(aten.sub.Tensor, aten.sub.Scalar)(_binary("stablehlo.subtract"))
lowers(aten.mul.Tensor, aten.mul.Scalar)(_binary("stablehlo.multiply"))
lowers(aten.maximum.default)(_binary("stablehlo.maximum"))
lowers(aten.minimum.default)(_binary("stablehlo.minimum"))
lowers(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar)(_binary("stablehlo.power"))
lowers(aten.bitwise_and.Tensor, aten.logical_and.default)(_binary("stablehlo.and"))
lowers(aten.bitwise_or.Tensor, aten.logical_or.default)(_binary("stablehlo.or"))
lowers(aten.bitwise_xor.Tensor, aten.logical_xor.default)(_binary("stablehlo.xor"))


@lowers(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(ctx, node, a, b, alpha=1):
    return _binary("stablehlo.subtract")(ctx, node, b, a * alpha if not isinstance(a, Value) else a)


def _floor_div_int(ctx, x, y):
    q = ctx.binary("stablehlo.divide", x, y)
    r = ctx.binary("stablehlo.remainder", x, y)
    zero = ctx.constant(0, x.dtype, x.sym_shape)
    fix = ctx.binary(
        "stablehlo.and", ctx.compare(r, zero, "NE"), ctx.compare(ctx.compare(r, zero, "LT"), ctx.compare(y, zero, "LT"), "NE")
    )
    return ctx.select(fix, ctx.binary("stablehlo.subtract", q, ctx.constant(1, x.dtype, x.sym_shape)), q)


@lowers(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div(ctx, node, a, b, rounding_mode=None):
    dt = ctx.out_dtype(node)
    x, y = _operands(ctx, node, [a, b], dt)
    if T.is_float(dt):
        q = ctx.binary("stablehlo.divide", x, y)
        if rounding_mode == "floor":
            q = ctx.unary("stablehlo.floor", q)
        elif rounding_mode == "trunc":
            q = ctx.select(
                ctx.compare(q, ctx.constant(0, dt, q.sym_shape), "LT"),
                ctx.unary("stablehlo.ceil", q),
                ctx.unary("stablehlo.floor", q),
            )
        return q
    if rounding_mode == "floor":
        return _floor_div_int(ctx, x, y)
    return ctx.binary("stablehlo.divide", x, y)  # trunc


@lowers(aten.floor_divide.default)
def _floor_divide(ctx, node, a, b):
    return _div(ctx, node, a, b, rounding_mode="floor")


@lowers(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(ctx, node, a, b):
    dt = ctx.out_dtype(node)
    x, y = _operands(ctx, node, [a, b], dt)
    r = ctx.binary("stablehlo.remainder", x, y)
    zero = ctx.constant(0, dt, r.sym_shape)
    fix = ctx.binary(
        "stablehlo.and", ctx.compare(r, zero, "NE"), ctx.compare(ctx.compare(r, zero, "LT"), ctx.compare(y, zero, "LT"), "NE")
    )
    return ctx.select(fix, ctx.binary("stablehlo.add", r, y), r)


def _compare(direction):
    def fn(ctx, node, a, b):
        dt = promote(a, b)
        x, y = _operands(ctx, node, [a, b], dt)
        return ctx.compare(x, y, direction)

    return fn


for _d, _ops in {
    "EQ": (aten.eq.Tensor, aten.eq.Scalar),
    "NE": (aten.ne.Tensor, aten.ne.Scalar),
    "LT": (aten.lt.Tensor, aten.lt.Scalar),
    "LE": (aten.le.Tensor, aten.le.Scalar),
    "GT": (aten.gt.Tensor, aten.gt.Scalar),
    "GE": (aten.ge.Tensor, aten.ge.Scalar),
}.items():
    lowers(*_ops)(_compare(_d))


def _unary(opname, float_only=False):
    def fn(ctx, node, a, *rest, **kw):
        dt = ctx.out_dtype(node)
        return ctx.unary(opname, ctx.tensor(a, dt))

    return fn


for _name, _ops in {
    "stablehlo.negate": (aten.neg.default,),
    "stablehlo.exponential": (aten.exp.default,),
    "stablehlo.exponential_minus_one": (aten.expm1.default,),
    "stablehlo.log": (aten.log.default,),
    "stablehlo.log_plus_one": (aten.log1p.default,),
    "stablehlo.sqrt": (aten.sqrt.default,),
    "stablehlo.rsqrt": (aten.rsqrt.default,),
    "stablehlo.tanh": (aten.tanh.default,),
    "stablehlo.abs": (aten.abs.default,),
    "stablehlo.sine": (aten.sin.default,),
    "stablehlo.cosine": (aten.cos.default,),
    "stablehlo.logistic": (aten.sigmoid.default,),
    "stablehlo.floor": (aten.floor.default,),
    "stablehlo.ceil": (aten.ceil.default,),
    "stablehlo.round_nearest_even": (aten.round.default,),
    "stablehlo.sign": (aten.sign.default,),
    "stablehlo.not": (aten.logical_not.default, aten.bitwise_not.default),
}.items():
    lowers(*_ops)(_unary(_name))


@lowers(aten.reciprocal.default)
def _reciprocal(ctx, node, a):
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    return ctx.binary("stablehlo.divide", ctx.constant(1, dt, x.sym_shape), x)


@lowers(aten.relu.default)
def _relu(ctx, node, a):
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    return ctx.binary("stablehlo.maximum", x, ctx.constant(0, dt, x.sym_shape))


@lowers(aten.clamp.default, aten.clamp.Tensor)
def _clamp(ctx, node, a, min=None, max=None):
    dt = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    x = ctx.tensor(a, dt, shape)
    if min is not None:
        x = ctx.binary("stablehlo.maximum", x, ctx.tensor(min, dt, shape))
    if max is not None:
        x = ctx.binary("stablehlo.minimum", x, ctx.tensor(max, dt, shape))
    return x


@lowers(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx, node, cond, a, b):
    dt = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    c = ctx.tensor(cond, "i1", shape)
    return ctx.select(c, ctx.tensor(a, dt, shape), ctx.tensor(b, dt, shape))


# erf has no StableHLO op (only chlo.erf, which the reference interpreter does
# not run), so it is the rational approximation XLA/Eigen use for f32
# (clamp to [-4, 4], odd degree-13 / even degree-8 polynomials), computed in f32
# or wider.
_ERF_ALPHA = [
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
]
_ERF_BETA = [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02]


def erf(ctx, x: Value) -> Value:
    dt = x.dtype
    sh = x.sym_shape
    c = lambda v: ctx.constant(v, dt, sh)  # noqa: E731
    x = ctx.op("stablehlo.clamp", [ctx.constant(-4.0, dt), x, ctx.constant(4.0, dt)], (sh, dt))
    x2 = ctx.binary("stablehlo.multiply", x, x)

    def poly(coeffs):
        acc = c(coeffs[0])
        for k in coeffs[1:]:
            acc = ctx.binary("stablehlo.add", ctx.binary("stablehlo.multiply", acc, x2), c(k))
        return acc

    p = ctx.binary("stablehlo.multiply", x, poly(_ERF_ALPHA))
    return ctx.binary("stablehlo.divide", p, poly(_ERF_BETA))


@lowers(aten.erf.default)
def _erf(ctx, node, a):
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    return ctx.convert(erf(ctx, ctx.tensor(a, cdt)), dt)


@lowers(aten.gelu.default)
def _gelu(ctx, node, a, approximate="none"):
    dt = ctx.out_dtype(node)
    cdt = "f32" if dt in ("f16", "bf16") else dt
    x = ctx.tensor(a, cdt)
    sh = x.sym_shape
    c = lambda v: ctx.constant(v, cdt, sh)  # noqa: E731
    if approximate == "tanh":
        inner = ctx.binary(
            "stablehlo.add",
            x,
            ctx.binary(
                "stablehlo.multiply", c(0.044715), ctx.binary("stablehlo.multiply", x, ctx.binary("stablehlo.multiply", x, x))
            ),
        )
        t = ctx.unary("stablehlo.tanh", ctx.binary("stablehlo.multiply", c(math.sqrt(2.0 / math.pi)), inner))
    else:
        t = erf(ctx, ctx.binary("stablehlo.multiply", x, c(1.0 / math.sqrt(2.0))))
    y = ctx.binary("stablehlo.multiply", ctx.binary("stablehlo.multiply", c(0.5), x), ctx.binary("stablehlo.add", c(1.0), t))
    return ctx.convert(y, dt)


@lowers(
    aten._to_copy.default,
    aten.clone.default,
    aten.alias.default,
    aten.lift_fresh_copy.default,
    aten.detach.default,
    aten.contiguous.default,
    aten.to.dtype_layout,
    aten.to.dtype,
    aten.to.device,
)
def _copy(ctx, node, a, *args, **kw):
    dt = ctx.out_dtype(node)
    return ctx.tensor(a, dt)


@lowers(aten.copy.default)
def _copy2(ctx, node, dst, src, non_blocking=False):
    return ctx.tensor(src, ctx.out_dtype(node), ctx.out_shape(node))


# ------------------------------------------------ more core ATen elementwise
def _float_unary(fn):
    def lowering(ctx, node, a, *rest, **kw):
        dt = ctx.out_dtype(node)
        cdt = "f32" if dt in ("f16", "bf16") else dt
        return ctx.convert(fn(ctx, ctx.tensor(a, cdt), *rest), dt)

    return lowering


def _scaled_log(base):
    return lambda ctx, x: ctx.binary(
        "stablehlo.divide", ctx.unary("stablehlo.log", x), ctx.constant(math.log(base), x.dtype, x.sym_shape)
    )


def _asin(ctx, x):  # atan2(x, sqrt(1 - x^2))
    one = ctx.constant(1.0, x.dtype, x.sym_shape)
    root = ctx.unary("stablehlo.sqrt", ctx.binary("stablehlo.subtract", one, ctx.binary("stablehlo.multiply", x, x)))
    return ctx.binary("stablehlo.atan2", x, root)


def _acos(ctx, x):  # atan2(sqrt(1 - x^2), x)
    one = ctx.constant(1.0, x.dtype, x.sym_shape)
    root = ctx.unary("stablehlo.sqrt", ctx.binary("stablehlo.subtract", one, ctx.binary("stablehlo.multiply", x, x)))
    return ctx.binary("stablehlo.atan2", root, x)


def _hyperbolic(sign):  # (exp(x) +- exp(-x)) / 2
    def fn(ctx, x):
        e, en = ctx.unary("stablehlo.exponential", x), ctx.unary("stablehlo.exponential", ctx.unary("stablehlo.negate", x))
        s = ctx.binary("stablehlo.subtract" if sign < 0 else "stablehlo.add", e, en)
        return ctx.binary("stablehlo.multiply", s, ctx.constant(0.5, x.dtype, x.sym_shape))

    return fn


for _ops, _fn in {
    (aten.log2.default,): _scaled_log(2.0),
    (aten.log10.default,): _scaled_log(10.0),
    (aten.tan.default,): lambda ctx, x: ctx.unary("stablehlo.tan", x),
    (aten.atan.default,): lambda ctx, x: ctx.binary("stablehlo.atan2", x, ctx.constant(1.0, x.dtype, x.sym_shape)),
    (aten.asin.default,): _asin,
    (aten.acos.default,): _acos,
    (aten.sinh.default,): _hyperbolic(-1),
    (aten.cosh.default,): _hyperbolic(1),
}.items():
    lowers(*_ops)(_float_unary(_fn))


@lowers(aten.trunc.default)
def _trunc(ctx, node, a):
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    if not T.is_float(dt):
        return x
    return ctx.select(
        ctx.compare(x, ctx.constant(0, dt, x.sym_shape), "LT"), ctx.unary("stablehlo.ceil", x), ctx.unary("stablehlo.floor", x)
    )


@lowers(aten.isnan.default)
def _isnan(ctx, node, a):
    return ctx.compare(a, a, "NE") if T.is_float(a.dtype) else ctx.constant(False, "i1", a.sym_shape)


@lowers(aten.isinf.default)
def _isinf(ctx, node, a):
    if not T.is_float(a.dtype):
        return ctx.constant(False, "i1", a.sym_shape)
    return ctx.compare(ctx.unary("stablehlo.abs", a), ctx.constant(math.inf, a.dtype, a.sym_shape), "EQ")


lowers(aten.atan2.default)(_binary("stablehlo.atan2"))
lowers(aten.fmod.Tensor, aten.fmod.Scalar)(_binary("stablehlo.remainder"))  # truncated, like C fmod


@lowers(aten.hardtanh.default)
def _hardtanh(ctx, node, a, min_val=-1.0, max_val=1.0):
    return _clamp(ctx, node, a, min_val, max_val)


@lowers(aten.leaky_relu.default)
def _leaky_relu(ctx, node, a, negative_slope=0.01):
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    neg = ctx.binary("stablehlo.multiply", x, ctx.constant(negative_slope, dt, x.sym_shape))
    return ctx.select(ctx.compare(x, ctx.constant(0, dt, x.sym_shape), "GT"), x, neg)


@lowers(aten.elu.default)
def _elu(ctx, node, a, alpha=1.0, scale=1.0, input_scale=1.0):
    dt = ctx.out_dtype(node)
    x = ctx.tensor(a, dt)
    c = lambda v: ctx.constant(v, dt, x.sym_shape)  # noqa: E731
    neg = ctx.binary(
        "stablehlo.multiply",
        c(alpha),
        ctx.unary("stablehlo.exponential_minus_one", ctx.binary("stablehlo.multiply", x, c(input_scale))),
    )
    y = ctx.select(ctx.compare(x, c(0), "GT"), x, neg)
    return ctx.binary("stablehlo.multiply", y, c(scale)) if scale != 1.0 else y
