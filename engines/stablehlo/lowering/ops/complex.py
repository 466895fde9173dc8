"""Complex tensors: StableHLO's ``complex<f32>``/``complex<f64>`` element types, built with
``stablehlo.complex`` from two real tensors (``complex``, ``polar``, ``view_as_complex``) or by
``convert`` from a real one (``cfloat``/``cdouble``: imaginary part 0), taken apart with
``stablehlo.real``/``imag``."""

from __future__ import annotations

import torch

from .. import types as T
from ..registry import lowers

aten = torch.ops.aten
prims = torch.ops.prims


def make_complex(ctx, re, im, dtype: str):
    """``re + i im`` of complex ``dtype`` (both parts converted to its component type)."""
    part = T.COMPLEX_PARTS[dtype]
    re, im = ctx.convert(re, part), ctx.convert(im, part)
    return ctx.op("stablehlo.complex", [re, im], (re.sym_shape, dtype))


@lowers(aten.complex.default)
def _complex(ctx, node, real, imag):
    dt, shape = ctx.out_dtype(node), ctx.out_shape(node)
    part = T.COMPLEX_PARTS[dt]
    return make_complex(ctx, ctx.tensor(real, part, shape), ctx.tensor(imag, part, shape), dt)


@lowers(aten.polar.default)
def _polar(ctx, node, abs_, angle):
    """``abs (cos(angle) + i sin(angle))``."""
    dt, shape = ctx.out_dtype(node), ctx.out_shape(node)
    part = T.COMPLEX_PARTS[dt]
    r, t = ctx.tensor(abs_, part, shape), ctx.tensor(angle, part, shape)
    re = ctx.binary("stablehlo.multiply", r, ctx.unary("stablehlo.cosine", t))
    im = ctx.binary("stablehlo.multiply", r, ctx.unary("stablehlo.sine", t))
    return make_complex(ctx, re, im, dt)


@lowers(aten.view_as_complex.default)
def _view_as_complex(ctx, node, x):
    """``[..., 2]`` real pairs -> ``[...]`` complex."""
    dt, shape = ctx.out_dtype(node), ctx.out_shape(node)
    n = x.rank
    parts = []
    for k in (0, 1):
        s = ctx.slice(x, [0] * (n - 1) + [k], list(x.sym_shape[:-1]) + [k + 1], [1] * n, tuple(shape) + (1,))
        parts.append(ctx.reshape(s, shape))
    return make_complex(ctx, parts[0], parts[1], dt)


def _part(name):
    def fn(ctx, node, x):
        dt = ctx.out_dtype(node)
        if x.dtype not in T.COMPLEX_PARTS:  # (a real tensor's real part is itself)
            return ctx.convert(x, dt)
        return ctx.op(f"stablehlo.{name}", [x], (x.sym_shape, dt))

    return fn


lowers(aten.real.default, prims.real.default)(_part("real"))
lowers(aten.imag.default, prims.imag.default)(_part("imag"))


@lowers(aten.view_as_real.default)
def _view_as_real(ctx, node, x):
    """``[...]`` complex -> ``[..., 2]`` (real, imaginary) pairs."""
    dt = ctx.out_dtype(node)
    pair = tuple(x.sym_shape) + (1,)
    parts = [ctx.reshape(ctx.op(f"stablehlo.{p}", [x], (x.sym_shape, dt)), pair) for p in ("real", "imag")]
    return ctx.op("stablehlo.concatenate", parts, (ctx.out_shape(node), dt), attrs={"dimension": f"{x.rank} : i64"})
