"""NumPy float64 oracles the op samples share: written in NumPy, never torch."""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def d(x):
    """``x`` as float64."""
    return np.asarray(x, dtype=np.float64)


def np_softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


erf = np.vectorize(math.erf)


def var(x, axis, ddof):
    with np.errstate(divide="ignore", invalid="ignore"):  # n == ddof -> nan, as torch
        m = x.mean(axis, keepdims=True)
        return ((x - m) ** 2).sum(axis) / (x.shape[axis] - ddof)


def np_conv(x, w, b, stride=1, pad=0):
    """N-d cross-correlation, NC* layout, groups=1 (loops over kernel taps)."""
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * nsp)
    k = w.shape[2:]
    out_sp = [(x.shape[2 + i] - k[i]) // stride + 1 for i in range(nsp)]
    y = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for tap in np.ndindex(*k):
        sl = tuple(slice(tap[i], tap[i] + stride * (out_sp[i] - 1) + 1, stride) for i in range(nsp))
        patch = x[(slice(None), slice(None)) + sl]  # (N, C, *out)
        y += np.einsum("nc...,oc->no...", patch, w[(slice(None), slice(None)) + tap])
    return y + np.asarray(b).reshape((1, -1) + (1,) * nsp)


def conv1d_s2p1(x, w, b):
    """conv1d at stride 2, padding 1, one output position at a time."""
    x = np.pad(x, [(0, 0), (0, 0), (1, 1)])
    n_out = (x.shape[2] - w.shape[2]) // 2 + 1
    out = np.zeros((x.shape[0], w.shape[0], n_out))
    for t in range(n_out):
        out[:, :, t] = np.einsum("bck,ock->bo", x[:, :, 2 * t : 2 * t + w.shape[2]], w)
    return out + b[None, :, None]


def conv2d_direct(x, w, b, stride, pad):
    """Direct 2-d convolution (cross-correlation), one output pixel at a time."""
    n, _c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + np.asarray(b).reshape(-1, 1, 1) if np.ndim(b) else out


def sdpa_length_mask(q, k, last):
    s = q @ k.transpose(0, 2, 1) / 2.0  # 1 / sqrt(4)
    s = np.where(np.arange(k.shape[1])[None, None, :] <= last[:, None, None], s, -np.inf)
    return np_softmax(s, -1) @ k


def scatter_rows_mean(x, i):
    out = np.zeros((x.shape[0] + 1, x.shape[1]))
    np.add.at(out, i, x)
    return out.mean(-1)


def layer_norm(y):
    mu = y.mean(-1, keepdims=True)
    return (y - mu) / np.sqrt(((y - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def message_passing(x, src, dst, w):
    out = np.zeros_like(x)
    np.add.at(out, dst, x[src] * w[:, None])
    return out


def pad_rows(x):
    out = np.zeros((x.shape[0] + 2, x.shape[1]))
    out[1:-1] = x
    return out
