"""Sequence cases where the length T feeds shape arithmetic: slices, transposes,
concatenation, padding to a multiple, positional encodings and length masks.

T is bounded by a model's maximum sequence length (``MAX_T``) except where a
case says otherwise; the batch and feature sizes are static.
"""

from __future__ import annotations

import numpy as np

from .model import Case, Input, Tolerance, bounded, static

MAX_T = 512  # the model's maximum sequence length (its positional table's size)
B, F = 4, 16

# 24 novel lengths: odd and even, multiples of 8 and not, across several
# power-of-two buckets; quick takes three of them in different buckets
T_SWEEP = tuple(
    {"t": t} for t in (5, 13, 40, 2, 3, 7, 8, 9, 16, 17, 23, 31, 33, 48, 63, 64, 65, 97, 128, 129, 200, 255, 257, 511)
)


def _seq_dims(min_t: int = 1):
    return (static("b", B), bounded("t", max=MAX_T, min=min_t), static("f", F))


# -- 1. a slice whose end is arithmetic on a size ------------------------------
def _slice_half_torch():
    def slice_half(x):
        return x[:, : x.shape[1] // 2]

    return slice_half


def _slice_half_jax():
    def slice_half(x):
        return x[:, : x.shape[1] // 2]

    return slice_half


seq_slice_half = Case(
    name="seq_slice_half",
    tags=("sequence", "slice", "size-arithmetic"),
    description="x[:, : x.shape[1] // 2]: the first half of the sequence (slice end t // 2)",
    dims=_seq_dims(min_t=2),
    inputs=(Input("x", ("b", "t", "f")),),
    sweep=T_SWEEP,
    oracle=lambda x: x[:, : x.shape[1] // 2].copy(),
    out_shape=("b", "t//2", "f"),
    torch_fn=_slice_half_torch,
    jax_fn=_slice_half_jax,
    exact=True,
)


# -- 2. transpose of the dynamic dim, then a matmul that uses the layout --------
G = 8


def _transpose_torch():
    import torch

    def transpose_project(x, w):
        return torch.matmul(w, x.transpose(1, 2))

    return transpose_project


def _transpose_jax():
    import jax.numpy as jnp

    def transpose_project(x, w):
        return jnp.matmul(w, jnp.swapaxes(x, 1, 2))

    return transpose_project


def _transpose_oracle(x, w):
    xt = np.transpose(x, (0, 2, 1))  # (b, f, t)
    out = np.zeros((x.shape[0], w.shape[0], x.shape[1]))
    for b in range(x.shape[0]):
        out[b] = w @ xt[b]
    return out


seq_transpose = Case(
    name="seq_transpose",
    tags=("sequence", "transpose", "matmul"),
    description="torch.matmul(w, x.transpose(1, 2)): (B, T, F) -> (B, F, T), then a static (G, F) projection",
    dims=_seq_dims() + (static("g", G),),
    inputs=(Input("x", ("b", "t", "f")), Input("w", ("g", "f"))),
    sweep=T_SWEEP,
    oracle=_transpose_oracle,
    out_shape=("b", "g", "t"),
    torch_fn=_transpose_torch,
    jax_fn=_transpose_jax,
)


# -- 3. cat of two dynamic tensors: the output size is a sum of symbols --------
def _cat_torch():
    import torch

    def cat_sequences(x1, x2):
        return torch.cat([x1, x2], dim=1)

    return cat_sequences


def _cat_jax():
    import jax.numpy as jnp

    def cat_sequences(x1, x2):
        return jnp.concatenate([x1, x2], axis=1)

    return cat_sequences


# prompt and continuation lengths, each up to half the model's max length
_HALF_T = MAX_T // 2
seq_cat = Case(
    name="seq_cat",
    tags=("sequence", "cat", "size-arithmetic"),
    description="torch.cat([x1, x2], dim=1): two sequences of lengths t1 and t2 joined (output t1 + t2)",
    dims=(static("b", B), bounded("t1", max=_HALF_T, min=1), bounded("t2", max=_HALF_T, min=1), static("f", F)),
    inputs=(Input("x1", ("b", "t1", "f")), Input("x2", ("b", "t2", "f"))),
    sweep=tuple(
        {"t1": t1, "t2": t2}
        for t1, t2 in (
            (5, 11),
            (40, 3),
            (100, 77),
            (1, 1),
            (1, 2),
            (2, 1),
            (3, 7),
            (8, 8),
            (9, 16),
            (16, 9),
            (17, 30),
            (31, 1),
            (33, 64),
            (64, 33),
            (48, 48),
            (65, 2),
            (97, 128),
            (128, 97),
            (200, 5),
            (255, 256),
            (256, 256),
        )
    ),
    oracle=lambda x1, x2: np.concatenate([x1, x2], axis=1),
    out_shape=("b", "t1+t2", "f"),
    torch_fn=_cat_torch,
    jax_fn=_cat_jax,
    exact=True,
    bucket_unsupported="padding t1 puts pad rows between x1's and x2's rows, so the real output is not a "
    "prefix of the padded one (x2 starts at the bucket, not at t1)",
)


# -- 4. pad T up to a multiple of 8: size arithmetic with a remainder -----------
def _pad_multiple_torch():
    import torch.nn.functional as fn

    def pad_to_multiple(x):
        return fn.pad(x, (0, 0, 0, (-x.shape[1]) % 8))

    return pad_to_multiple


def _pad_multiple_jax():
    import jax.numpy as jnp

    def pad_to_multiple(x):
        return jnp.pad(x, ((0, 0), (0, (-x.shape[1]) % 8), (0, 0)))

    return pad_to_multiple


def _pad_multiple_oracle(x):
    t = x.shape[1]
    out = np.zeros((x.shape[0], (t + 7) // 8 * 8, x.shape[2]))
    out[:, :t] = x
    return out


seq_pad_multiple = Case(
    name="seq_pad_multiple",
    tags=("sequence", "pad", "size-arithmetic"),
    description="F.pad(x, (0, 0, 0, (-x.shape[1]) % 8)): zero-pad T up to a multiple of 8",
    dims=_seq_dims(),
    inputs=(Input("x", ("b", "t", "f")),),
    sweep=T_SWEEP,
    oracle=_pad_multiple_oracle,
    out_shape=("b", "(t+7)//8*8", "f"),
    # t = 5, 40, 9: three different pad widths (3, 0, 7), in buckets 16 and 64
    quick=(0, 2, 7),
    torch_fn=_pad_multiple_torch,
    jax_fn=_pad_multiple_jax,
    exact=True,
)


# -- 5. arange(T) positional encoding: the size feeds arange --------------------
D = 16  # model width (even: sin and cos halves)


def _positional_torch():
    import torch

    def add_positional(x):
        pos = torch.arange(x.shape[1], dtype=x.dtype, device=x.device).unsqueeze(1)  # (t, 1)
        freq = torch.exp(torch.arange(0, D, 2, dtype=x.dtype, device=x.device) * (-np.log(10000.0) / D))  # (d/2,)
        angles = pos * freq
        return x + torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)

    return add_positional


def _positional_jax():
    import jax.numpy as jnp

    def add_positional(x):
        pos = jnp.arange(x.shape[1], dtype=jnp.float32)[:, None]
        freq = jnp.exp(jnp.arange(0, D, 2, dtype=jnp.float32) * (-np.log(10000.0) / D))
        angles = pos * freq
        return x + jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=1)

    return add_positional


def _positional_oracle(x):
    t = x.shape[1]
    pe = np.zeros((t, D))
    for p in range(t):
        for i in range(D // 2):
            angle = p / 10000.0 ** (2 * i / D)
            pe[p, i] = np.sin(angle)
            pe[p, D // 2 + i] = np.cos(angle)
    return x + pe[np.newaxis]


seq_positional = Case(
    name="seq_positional",
    tags=("sequence", "arange", "elementwise", "size-arithmetic"),
    description="x + sinusoidal(torch.arange(x.shape[1])): positional encoding whose table size is T",
    dims=(static("b", B), bounded("t", max=MAX_T, min=1), static("d", D)),
    inputs=(Input("x", ("b", "t", "d")),),
    sweep=T_SWEEP,
    oracle=_positional_oracle,
    out_shape=("b", "t", "d"),
    torch_fn=_positional_torch,
    jax_fn=_positional_jax,
    # float32 angles up to 511 rad: pos * freq rounds by up to ~3e-5 rad, which
    # sin/cos carry into the sum (torch eager measured 8.5e-6 on the full sweep)
    tolerance=Tolerance(1e-4, 5e-5),
)


# -- 6. masked mean over T with per-row lengths ---------------------------------
def _masked_mean_torch():
    import torch

    def masked_mean(x, lengths):
        mask = torch.arange(x.shape[1], device=x.device).unsqueeze(0) < lengths.unsqueeze(1)  # (b, t)
        total = (x * mask.unsqueeze(2).to(x.dtype)).sum(dim=1)
        return total / lengths.clamp(min=1).unsqueeze(1).to(x.dtype)

    return masked_mean


def _masked_mean_jax():
    import jax.numpy as jnp

    def masked_mean(x, lengths):
        mask = jnp.arange(x.shape[1])[None, :] < lengths[:, None]
        total = (x * mask[:, :, None].astype(x.dtype)).sum(axis=1)
        return total / jnp.maximum(lengths, 1)[:, None].astype(x.dtype)

    return masked_mean


def _masked_mean_oracle(x, lengths):
    out = np.zeros((x.shape[0], x.shape[2]))
    for b in range(x.shape[0]):
        n = int(lengths[b])
        if n > 0:
            out[b] = x[b, :n].mean(axis=0)
    return out


seq_masked_mean = Case(
    name="seq_masked_mean",
    tags=("sequence", "mask", "reduce", "arange"),
    description="(x * (arange(T) < lengths[:, None])[..., None]).sum(1) / lengths.clamp(min=1): mean of "
    "x[b, :lengths[b]] (an empty row gives 0)",
    dims=_seq_dims(),
    inputs=(
        Input("x", ("b", "t", "f")),
        # lengths in [0, t): the mask, not T, is the divisor, so zero-padding T is neutral
        Input("lengths", ("b",), dtype="int64", gen="index", high="t"),
    ),
    sweep=T_SWEEP,
    oracle=_masked_mean_oracle,
    out_shape=("b", "f"),
    torch_fn=_masked_mean_torch,
    jax_fn=_masked_mean_jax,
)

CASES = (seq_slice_half, seq_cat, seq_pad_multiple, seq_positional, seq_transpose, seq_masked_mean)
