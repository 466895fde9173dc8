"""Batch cases: the batch size B changes from call to call (a serving queue, the last
short batch of an epoch); every other size is fixed by the model."""

from __future__ import annotations

import numpy as np

from .model import Case, EinxForm, Input, Tolerance, bounded, static, unbounded

# 24 novel batch sizes, 2..199. From 2: the exporting paths (torch.export under
# stablehlo_*, lazy_stablehlo, torch_xla) trace on the first shape, and torch.export
# specialises an example size of 0 or 1 to a constant, so B=1 first would pin the program
B_SWEEP = (2, 3, 5, 7, 10, 12, 17, 20, 23, 29, 31, 37, 41, 48, 53, 61, 64, 71, 80, 97, 113, 127, 150, 199)
# a serving stack's max batch (e.g. TorchServe/Triton `max_batch_size`) bounds B
SERVE_MAX = 256


def _sweep(values=B_SWEEP) -> tuple[dict[str, int], ...]:
    return tuple({"b": b} for b in values)


# -- 1. size arithmetic feeding view ------------------------------------------
def _view_torch():
    def view_arith(x):
        return x.view(x.shape[0] * x.shape[1], -1)

    return view_arith


def _view_jax():
    def view_arith(x):
        return x.reshape(x.shape[0] * x.shape[1], -1)

    return view_arith


def _view_oracle(x):
    b, s, f = x.shape
    out = np.empty((b * s, f), dtype=x.dtype)
    for i in range(b):
        for j in range(s):
            out[i * s + j] = x[i, j]
    return out


batch_view_arith = Case(
    name="batch_view_arith",
    tags=("batch", "view", "size-arithmetic", "reshape", "einx"),
    description="x.view(x.shape[0] * x.shape[1], -1): flatten batch and sequence, the sym_size -> mul -> view graph",
    dims=(unbounded("b", min=2), static("s", 8), static("f", 16)),
    inputs=(Input("x", ("b", "s", "f")),),
    sweep=_sweep(),
    oracle=_view_oracle,
    out_shape=("b*s", "f"),
    einx=EinxForm("id", "b s f -> (b s) f"),
    torch_fn=_view_torch,
    jax_fn=_view_jax,
    exact=True,  # a view copies x
)


# -- 2. conv2d over a dynamic batch ------------------------------------------
def _conv_torch():
    import torch.nn.functional as F

    def conv2d_batch(x, w, bias):
        return F.conv2d(x, w, bias, padding=1)

    return conv2d_batch


def _conv_jax():
    import jax

    def conv2d_batch(x, w, bias):
        y = jax.lax.conv_general_dilated(
            x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        return y + bias[None, :, None, None]

    return conv2d_batch


def _conv_oracle(x, w, bias):
    b, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.zeros((b, c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, :, 1:-1, 1:-1] = x
    out = np.zeros((b, o, h, wd), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + h, j : j + wd]  # (b, c, h, w)
            out += np.tensordot(patch, w[:, :, i, j], axes=([1], [1])).transpose(0, 3, 1, 2)
    return out + bias[np.newaxis, :, np.newaxis, np.newaxis]


batch_conv2d = Case(
    name="batch_conv2d",
    tags=("batch", "conv", "conv2d"),
    description="F.conv2d(x, w, bias, padding=1): 3->8 channels, 3x3 kernel, 16x16 images, B images per call",
    # a vision server batches up to 64 images per request
    dims=(bounded("b", max=64, min=2), static("c", 3), static("o", 8), static("h", 16), static("w", 16), static("k", 3)),
    inputs=(Input("x", ("b", "c", "h", "w")), Input("w", ("o", "c", "k", "k")), Input("bias", ("o",))),
    sweep=_sweep(tuple(b for b in B_SWEEP if b <= 64) + (4, 6, 9, 15, 33, 47, 58)),
    quick=(1, 7, 13),
    oracle=_conv_oracle,
    out_shape=("b", "o", "h", "w"),
    torch_fn=_conv_torch,
    jax_fn=_conv_jax,
    # 27 float32 products per output in the backend's order
    tolerance=Tolerance(1e-4, 1e-4),
)


# -- 3. linear / addmm over a dynamic batch ----------------------------------
def _linear_torch():
    import torch

    def linear_batch(x, w, bias):
        return torch.addmm(bias, x, w)

    return linear_batch


def _linear_jax():
    def linear_batch(x, w, bias):
        return x @ w + bias

    return linear_batch


def _linear_oracle(x, w, bias):
    b, k = x.shape
    out = np.tile(bias, (b, 1))
    for i in range(k):
        out += np.outer(x[:, i], w[i])
    return out


batch_linear = Case(
    name="batch_linear",
    tags=("batch", "linalg", "addmm", "linear"),
    description="torch.addmm(bias, x, w): a linear layer (64 -> 32) over B rows",
    dims=(bounded("b", max=SERVE_MAX, min=2), static("k", 64), static("n", 32)),
    inputs=(Input("x", ("b", "k")), Input("w", ("k", "n")), Input("bias", ("n",))),
    sweep=_sweep(),
    quick=(2, 10, 18),
    oracle=_linear_oracle,
    out_shape=("b", "n"),
    torch_fn=_linear_torch,
    jax_fn=_linear_jax,
    # a 64-term float32 dot product per output, summed in the backend's order
    tolerance=Tolerance(1e-4, 1e-4),
)


# -- 4. bmm ------------------------------------------------------------------
def _bmm_torch():
    import torch

    def bmm_batch(a, b):
        return torch.bmm(a, b)

    return bmm_batch


def _bmm_jax():
    import jax.numpy as jnp

    def bmm_batch(a, b):
        return jnp.matmul(a, b)

    return bmm_batch


def _bmm_oracle(a, b):
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
    for i in range(a.shape[0]):
        out[i] = a[i] @ b[i]
    return out


batch_bmm = Case(
    name="batch_bmm",
    tags=("batch", "linalg", "bmm", "einx"),
    description="torch.bmm(a, b): (B, 8, 16) @ (B, 16, 12), one matmul per batch entry",
    dims=(unbounded("b", min=2), static("m", 8), static("k", 16), static("n", 12)),
    inputs=(Input("a", ("b", "m", "k")), Input("b", ("b", "k", "n"))),
    sweep=_sweep(),
    quick=(3, 11, 19),
    oracle=_bmm_oracle,
    out_shape=("b", "m", "n"),
    einx=EinxForm("dot", "b m k, b k n -> b m n"),
    torch_fn=_bmm_torch,
    jax_fn=_bmm_jax,
    # a 16-term float32 dot product per output
    tolerance=Tolerance(1e-4, 1e-4),
)


# -- 5. batch-norm in eval mode ----------------------------------------------
EPS = 1e-5


def _bn_torch():
    import torch.nn.functional as F

    def batch_norm_eval(x, mean, var, weight, bias):
        return F.batch_norm(x, mean, var, weight, bias, training=False, eps=EPS)

    return batch_norm_eval


def _bn_jax():
    import jax.numpy as jnp

    def batch_norm_eval(x, mean, var, weight, bias):
        scale = weight / jnp.sqrt(var + EPS)
        return (x - mean[:, None]) * scale[:, None] + bias[:, None]

    return batch_norm_eval


def _bn_oracle(x, mean, var, weight, bias):
    out = np.empty_like(x)
    for c in range(x.shape[1]):
        out[:, c, :] = (x[:, c, :] - mean[c]) / np.sqrt(var[c] + EPS) * weight[c] + bias[c]
    return out


batch_norm_eval = Case(
    name="batch_norm_eval",
    tags=("batch", "norm", "batch_norm"),
    description="F.batch_norm(x, mean, var, weight, bias, training=False) over (B, 8, 32) with running stats",
    dims=(bounded("b", max=128, min=2), static("c", 8), static("l", 32)),
    inputs=(
        Input("x", ("b", "c", "l")),
        Input("mean", ("c",)),
        Input("var", ("c",), gen="uniform", low=0.5, high=2.0, pad=1.0),
        Input("weight", ("c",), gen="uniform", low=0.5, high=1.5, pad=1.0),
        Input("bias", ("c",)),
    ),
    sweep=_sweep(tuple(b for b in B_SWEEP if b <= 128) + (4, 6, 126)),
    quick=(4, 12, 20),
    oracle=_bn_oracle,
    out_shape=("b", "c", "l"),
    torch_fn=_bn_torch,
    jax_fn=_bn_jax,
)


# -- 6. repeat / tile over the batch -----------------------------------------
def _repeat_torch():
    def repeat_batch(x):
        return x.repeat(2, 1)

    return repeat_batch


def _repeat_jax():
    import jax.numpy as jnp

    def repeat_batch(x):
        return jnp.tile(x, (2, 1))

    return repeat_batch


def _repeat_oracle(x):
    b = x.shape[0]
    out = np.empty((2 * b, x.shape[1]), dtype=x.dtype)
    out[:b] = x
    out[b:] = x
    return out


batch_repeat = Case(
    name="batch_repeat",
    tags=("batch", "repeat", "tile", "size-arithmetic"),
    description="x.repeat(2, 1): two copies of the batch stacked (jnp.tile), the output has 2*B rows",
    dims=(unbounded("b", min=2), static("f", 16)),
    inputs=(Input("x", ("b", "f")),),
    sweep=_sweep(),
    quick=(5, 13, 21),
    oracle=_repeat_oracle,
    out_shape=("2*b", "f"),
    torch_fn=_repeat_torch,
    jax_fn=_repeat_jax,
    exact=True,  # copies of x
    bucket_unsupported="x.repeat(2, 1) of a batch padded to its bucket puts the padded rows between the two "
    "copies: the first 2*b rows of the output are not the two copies of x",
)

CASES = (batch_view_arith, batch_linear, batch_bmm, batch_conv2d, batch_norm_eval, batch_repeat)
