"""``_fft_c2c`` and ``_fft_r2c``: the discrete Fourier transform over each dim of ``dim`` (FNet's token
mixing over the hidden and the sequence dims), as a product with the DFT matrix
``W[k, j] = exp(∓2πi kj / N)`` built from iotas of the dim's size ``N``.

``stablehlo.fft`` takes a static ``fft_length``: a dynamic (bounded) sequence has none,
and transforming the signal padded to its bound would transform another signal. The
product costs O(N²) a dim instead of O(N log N), which model sizes afford; the angles
are taken in f64 from ``kj mod N`` (exact integers) so the twiddles stay accurate."""

from __future__ import annotations

import math

import torch

from .. import types as T
from ..registry import lowers
from .complex import make_complex
from .linalg import dot

aten = torch.ops.aten


def dft_along(ctx, x, d: int, forward: bool):
    """``x`` (complex) transformed along dim ``d`` (unnormalised)."""
    n = x.sym_shape[d]
    sq = (n, n)
    kj = ctx.binary("stablehlo.multiply", ctx.iota(sq, 0, "i64"), ctx.iota(sq, 1, "i64"))
    size = ctx.broadcast_to(ctx.convert(ctx.dim(n), "i64"), sq)
    kj = ctx.convert(ctx.binary("stablehlo.remainder", kj, size), "f64")
    step = ctx.binary("stablehlo.divide", ctx.constant((-2 if forward else 2) * math.pi, "f64", sq), ctx.convert(size, "f64"))
    angle = ctx.binary("stablehlo.multiply", kj, step)
    w = make_complex(ctx, ctx.unary("stablehlo.cosine", angle), ctx.unary("stablehlo.sine", angle), x.dtype)
    y = dot(ctx, x, w, x.dtype, lhs_contract=(d,), rhs_contract=(0,))  # the new dim comes last
    r = x.rank
    return ctx.transpose(y, list(range(d)) + [r - 1] + list(range(d, r - 1)))


@lowers(aten._fft_c2c.default)
def _fft_c2c(ctx, node, x, dim, normalization, forward):
    return _fft(ctx, node, x, dim, normalization, bool(forward))


@lowers(aten._fft_r2c.default)
def _fft_r2c(ctx, node, x, dim, normalization, onesided):
    """A real signal's forward transform; ``onesided`` keeps the last dim's first n // 2 + 1."""
    y = _fft(ctx, node, x, dim, normalization, True)
    out = ctx.out_shape(node)
    if not ctx.same_shape(y.sym_shape, out):
        y = ctx.slice(y, [0] * y.rank, list(out), [1] * y.rank, out_shape=out)
    return y


def _fft(ctx, node, x, dim, normalization, forward: bool):
    dt = ctx.out_dtype(node)
    y = ctx.convert(x, dt)
    dims = [d % y.rank for d in dim]
    for d in dims:
        y = dft_along(ctx, y, d, forward)
    if normalization:  # torch's fft_norm_mode: 1 divides by sqrt(n), 2 by n (n: the transformed sizes' product)
        part = T.COMPLEX_PARTS[dt]
        n = ctx.numel([y.sym_shape[d] for d in dims], part)
        if normalization == 1:
            n = ctx.unary("stablehlo.sqrt", n)
        y = ctx.binary("stablehlo.divide", y, ctx.broadcast_to(ctx.convert(n, dt), y.sym_shape))
    return y
