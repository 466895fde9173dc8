"""Sequence cases, first half: the sequence length T changes every batch.

T is bounded by a model's maximum sequence length (``MAX_T``); the other
axes are static. Each case pads T neutrally (``-inf`` softmax scores, zeros
past the end of a prefix sum or a valid convolution) unless its Case says why
it cannot (``bucket_unsupported``).
"""

from __future__ import annotations

import math

import numpy as np

from .model import Case, EinxForm, Input, Tolerance, bounded, static

MAX_T = 512  # a model's maximum sequence length (BERT-base's position table)

# 22 novel lengths from 17 to 500; the quick profile takes three short ones
T_SWEEP = tuple({"t": 17 + 23 * i} for i in range(22))
QUICK = (0, 3, 7)  # t = 17, 86, 178


def _seq_dims(*static_dims, min_t: int = 1):
    return (bounded("t", max=MAX_T, min=min_t),) + static_dims


# -- 1. softmax over T ---------------------------------------------------------
def _softmax_torch():
    import torch

    def seq_softmax(x):
        return torch.softmax(x, dim=1)

    return seq_softmax


def _softmax_jax():
    import jax

    def seq_softmax(x):
        return jax.nn.softmax(x, axis=1)

    return seq_softmax


def _softmax_oracle(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


seq_softmax = Case(
    name="seq_softmax",
    tags=("sequence", "einx", "softmax", "reduce"),
    description='einx.softmax("b [t] f", x): attention-style scores normalised over the sequence axis',
    dims=_seq_dims(static("b", 4), static("f", 32)),
    inputs=(Input("x", ("b", "t", "f"), pad=-math.inf),),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_softmax_oracle,
    out_shape=("b", "t", "f"),
    einx=EinxForm("softmax", "b [t] f"),
    torch_fn=_softmax_torch,
    jax_fn=_softmax_jax,
)


# -- 2. scaled dot-product attention with a key-length mask --------------------
def _sdpa_torch():
    import torch
    import torch.nn.functional as F

    def seq_sdpa_mask(q, k, v, last):
        keep = torch.arange(k.shape[2], device=k.device).unsqueeze(0) <= last.unsqueeze(1)  # (B, T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])

    return seq_sdpa_mask


def _sdpa_jax():
    import jax
    import jax.numpy as jnp

    def seq_sdpa_mask(q, k, v, last):
        keep = jnp.arange(k.shape[2])[None, :] <= last[:, None]  # (B, T)
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
        s = jnp.where(keep[:, None, None, :], s, -jnp.inf)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    return seq_sdpa_mask


def _sdpa_oracle(q, k, v, last):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    keep = np.arange(k.shape[2])[np.newaxis, :] <= last[:, np.newaxis]
    s = np.where(keep[:, np.newaxis, np.newaxis, :], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", p / p.sum(axis=-1, keepdims=True), v)


seq_sdpa_mask = Case(
    name="seq_sdpa_mask",
    tags=("sequence", "attention", "mask", "arange", "softmax", "matmul"),
    description="F.scaled_dot_product_attention(q, k, v, attn_mask=arange(T) <= last[:, None]): per-row key lengths",
    dims=_seq_dims(static("b", 2), static("h", 4), static("d", 16)),
    inputs=(
        Input("q", ("b", "h", "t", "d")),
        Input("k", ("b", "h", "t", "d")),
        Input("v", ("b", "h", "t", "d")),
        # each row's last real key (its length - 1): at least one key is kept,
        # and keys past T (a bucket's padding) are masked out whatever they hold
        Input("last", ("b",), dtype="int64", gen="index", high="t"),
    ),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_sdpa_oracle,
    out_shape=("b", "h", "t", "d"),
    torch_fn=_sdpa_torch,
    jax_fn=_sdpa_jax,
)


# -- 3. layer norm over features, T dynamic ------------------------------------
LN_EPS = 1e-5


def _layer_norm_torch():
    import torch.nn.functional as F

    def seq_layer_norm(x, weight, bias):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=LN_EPS)

    return seq_layer_norm


def _layer_norm_jax():
    import jax.numpy as jnp

    def seq_layer_norm(x, weight, bias):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + LN_EPS) * weight + bias

    return seq_layer_norm


def _layer_norm_oracle(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * weight + bias


seq_layer_norm = Case(
    name="seq_layer_norm",
    tags=("sequence", "norm", "reduce"),
    description="F.layer_norm(x, (F,), weight, bias) on (B, T, F) activations",
    dims=_seq_dims(static("b", 2), static("f", 64)),
    inputs=(
        Input("x", ("b", "t", "f")),
        Input("weight", ("f",), gen="uniform", low=0.5, high=1.5),
        Input("bias", ("f",)),
    ),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_layer_norm_oracle,
    out_shape=("b", "t", "f"),
    torch_fn=_layer_norm_torch,
    jax_fn=_layer_norm_jax,
)


# -- 4. conv1d over T, 'valid' ---------------------------------------------------
KERNEL = 5


def _conv1d_torch():
    import torch.nn.functional as F

    def seq_conv1d(x, weight, bias):
        return F.conv1d(x, weight, bias)

    return seq_conv1d


def _conv1d_jax():
    import jax

    def seq_conv1d(x, weight, bias):
        y = jax.lax.conv_general_dilated(x, weight, window_strides=(1,), padding="VALID", dimension_numbers=("NCH", "OIH", "NCH"))
        return y + bias[None, :, None]

    return seq_conv1d


def _conv1d_oracle(x, weight, bias):
    t_out = x.shape[2] - weight.shape[2] + 1
    out = np.zeros((x.shape[0], weight.shape[0], t_out))
    for j in range(weight.shape[2]):  # cross-correlation, one kernel tap at a time
        out += np.einsum("bct,oc->bot", x[:, :, j : j + t_out], weight[:, :, j])
    return out + bias[np.newaxis, :, np.newaxis]


seq_conv1d = Case(
    name="seq_conv1d",
    tags=("sequence", "conv", "conv1d", "size-arithmetic"),
    description=f"F.conv1d(x, weight, bias) with kernel {KERNEL}, no padding: output length T - {KERNEL - 1}",
    # min k + 1: an output of length >= 2 (torch specialises a size of 0 or 1)
    dims=_seq_dims(static("b", 2), static("c", 8), static("o", 16), static("k", KERNEL), min_t=KERNEL + 1),
    inputs=(
        Input("x", ("b", "c", "t")),  # zeros past T only reach outputs past T - k + 1
        Input("weight", ("o", "c", "k")),
        Input("bias", ("o",)),
    ),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_conv1d_oracle,
    out_shape=("b", "o", f"t-{KERNEL - 1}"),
    torch_fn=_conv1d_torch,
    jax_fn=_conv1d_jax,
    # sums of c*k = 40 float32 products
    tolerance=Tolerance(1e-4, 1e-4),
)


# -- 5. cumsum along T ---------------------------------------------------------
def _cumsum_torch():
    import torch

    def seq_cumsum(x):
        return torch.cumsum(x, dim=1)

    return seq_cumsum


def _cumsum_jax():
    import jax.numpy as jnp

    def seq_cumsum(x):
        return jnp.cumsum(x, axis=1)

    return seq_cumsum


def _cumsum_oracle(x):
    out = np.empty_like(x)
    acc = np.zeros_like(x[:, 0])
    for i in range(x.shape[1]):  # a running sum, step by step
        acc = acc + x[:, i]
        out[:, i] = acc
    return out


seq_cumsum = Case(
    name="seq_cumsum",
    tags=("sequence", "scan", "cumsum"),
    description="torch.cumsum(x, dim=1) along the sequence axis",
    dims=_seq_dims(static("b", 2), static("f", 16)),
    inputs=(Input("x", ("b", "t", "f")),),  # zeros past T leave the first T prefix sums alone
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_cumsum_oracle,
    out_shape=("b", "t", "f"),
    torch_fn=_cumsum_torch,
    jax_fn=_cumsum_jax,
    # prefix sums of up to 500 float32 normals (|sum| ~ 22), in whatever
    # association order the backend's scan picks
    tolerance=Tolerance(1e-4, 2e-4),
)


# -- 6. embedding of a variable token count --------------------------------------
def _embedding_torch():
    import torch.nn.functional as F

    def seq_embedding(table, ids):
        return F.embedding(ids, table)

    return seq_embedding


def _embedding_jax():
    def seq_embedding(table, ids):
        return table[ids]

    return seq_embedding


def _embedding_oracle(table, ids):
    out = np.empty(ids.shape + table.shape[1:], dtype=table.dtype)
    for idx in np.ndindex(*ids.shape):
        out[idx] = table[ids[idx]]
    return out


seq_embedding = Case(
    name="seq_embedding",
    tags=("sequence", "einx", "embedding", "gather"),
    description='einx.get_at("[v] f, b t -> b t f", table, ids): token ids looked up in a static table',
    dims=_seq_dims(static("b", 2), static("v", 1000), static("f", 32)),
    inputs=(
        Input("table", ("v", "f")),
        # padded ids look up row 0, a real row; their outputs are sliced off
        Input("ids", ("b", "t"), dtype="int64", gen="index", high="v"),
    ),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_embedding_oracle,
    out_shape=("b", "t", "f"),
    einx=EinxForm("get_at", "[v] f, b t -> b t f"),
    torch_fn=_embedding_torch,
    jax_fn=_embedding_jax,
    exact=True,  # rows of the table, copied
)


# -- 7. split_with_sizes with sizes arithmetic on T ---------------------------
def _split_torch():
    import torch

    def seq_split_sizes(x):
        t = x.shape[1]
        first, second = torch.split(x, [t // 2, t - t // 2], dim=1)
        return torch.stack([first.sum(1), second.sum(1)])

    return seq_split_sizes


def _split_jax():
    import jax.numpy as jnp

    def seq_split_sizes(x):
        h = x.shape[1] // 2
        return jnp.stack([x[:, :h].sum(1), x[:, h:].sum(1)])

    return seq_split_sizes


def _split_oracle(x):
    h = x.shape[1] // 2
    out = np.zeros((2, x.shape[0], x.shape[2]))
    for i in range(x.shape[1]):
        out[int(i >= h)] += x[:, i]
    return out


seq_split_sizes = Case(
    name="seq_split_sizes",
    tags=("sequence", "split", "split_with_sizes", "size-arithmetic", "reduce"),
    description="a, c = torch.split(x, [T // 2, T - T // 2], dim=1); torch.stack([a.sum(1), c.sum(1)])",
    dims=_seq_dims(static("b", 2), static("f", 16), min_t=2),
    inputs=(Input("x", ("b", "t", "f")),),
    sweep=T_SWEEP,
    quick=QUICK,
    oracle=_split_oracle,
    out_shape=(2, "b", "f"),
    torch_fn=_split_torch,
    jax_fn=_split_jax,
    # sums of up to 250 float32 normals per half
    tolerance=Tolerance(1e-4, 1e-4),
    bucket_unsupported="the split point T // 2 moves with T: padding T to a bucket moves real rows into the second part",
)

CASES = (seq_softmax, seq_sdpa_mask, seq_layer_norm, seq_conv1d, seq_cumsum, seq_embedding, seq_split_sizes)
