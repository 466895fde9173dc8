"""Lazy-path samples with NumPy float64 references (once ``tests/lazy/test_lazy_numeric.py``):
every axis of every input symbolic, over sizes including 1 and 0, one compile per form
unless a size-0/1 guard flips."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .oracles import (
    conv1d_s2p1,
    conv2d_direct,
    layer_norm,
    message_passing,
    np_softmax,
    pad_rows,
    scatter_rows_mean,
    sdpa_length_mask,
)
from .sample import Lazy, LazyHlo, Sample

#: the lazy trace lowered to StableHLO on these forms (a few: an XLA compile a size; one module
#: per lazy graph), and the failures it has today, each with its reason
LAZY_HLO = {
    **dict.fromkeys(
        ["gnn_rbf_subtract", "view_size_arithmetic", "reductions", "gather_select", "where_clamp", "arange_scale"]
        + ["scatter_add_mean"],
        LazyHlo(),
    ),
    "setitem_new_zeros": LazyHlo(modules=2),
    # every axis symbolic, an axis of constant size too (d's 8 columns): torch.export specialises it
    "gnn_edge_divide": LazyHlo(fails=r"could not keep the graph's sizes symbolic: Constraints violated"),
    # a size-0 first shape: XLA's shape refinement rejects the module
    "roll_cat_slice": LazyHlo(fails=r"shape refinement failed for argument shapes \(0, 3\)"),
    # a defect: the exported expand of the (1, 1, 16) operand to 2 * batch rows
    "expand_over_batch": LazyHlo(fails=r"expand: attempting to expand a dimension of length s\d+ -> 2\*s\d+"),
}
#: forms whose size-0/1 guard (a slice or broadcast clamp) flips once over their sizes: 2 compiles
GUARD_FLIPS = {"roll_cat_slice", "setitem_new_zeros"}  # (arange(n) of a size n needs no guard)


def normal(g, *shape):
    return g.standard_normal(shape).astype(np.float32)


def index(g, high, n):
    return g.integers(0, max(high, 1), n).astype(np.int64)


def _mp_zeros(x, src, dst, w):
    return torch.zeros(x.shape[0], x.shape[1]).index_add(0, dst, x[src] * w.unsqueeze(-1))


def _pad_rows(x):
    out = x.new_zeros(x.shape[0] + 2, x.shape[1])
    out[1:-1] = x
    return out


# name: (torch form, numpy reference, inputs for size n, sizes)
_TABLE = {
    "gnn_edge_divide": (
        lambda d, c: d / c.unsqueeze(-1),
        lambda d, c: d / c[:, None],
        lambda n, g: [normal(g, n, 8), g.uniform(0.5, 1.5, n).astype(np.float32)],
        [0, 1, 2, 7, 33],
    ),
    "gnn_rbf_subtract": (
        lambda dist, centers: dist.unsqueeze(-1) - centers.unsqueeze(0),
        lambda dist, centers: dist[:, None] - centers[None, :],
        lambda n, g: [normal(g, n), normal(g, 32)],
        [0, 1, 5, 40],
    ),
    "expand_over_batch": (
        lambda x, emb: emb.expand(x.shape[0] * 2, -1, -1),
        lambda x, emb: np.broadcast_to(emb, (2 * x.shape[0], 1, emb.shape[2])),
        lambda n, g: [normal(g, n, 3, 4, 4), normal(g, 1, 1, 16)],
        [0, 1, 2, 5, 13],
    ),
    "gnn_message_passing": (
        lambda x, src, dst, w: torch.zeros_like(x).index_add(0, dst, x[src] * w.unsqueeze(-1)),
        message_passing,
        lambda n, g: [normal(g, n + 1, 16), index(g, n + 1, 3 * n), index(g, n + 1, 3 * n), normal(g, 3 * n)],
        [0, 1, 4, 20],
    ),
    "message_passing_zeros": (
        _mp_zeros,
        message_passing,
        lambda n, g: [normal(g, n + 1, 6), index(g, n + 1, 2 * n), index(g, n + 1, 2 * n), normal(g, 2 * n)],
        [0, 1, 9],
    ),
    "softmax_matmul": (
        lambda q, k: torch.softmax(q @ k.transpose(-1, -2) / 4.0, dim=-1) @ k,
        lambda q, k: np_softmax(q @ k.T / 4.0, -1) @ k,
        lambda n, g: [normal(g, n, 8), normal(g, n + 1, 8)],
        [0, 1, 6],
    ),
    "view_size_arithmetic": (
        lambda x: x.view(x.shape[0] // 2, 2 * x.shape[1]).sum(1),
        lambda x: x.reshape(x.shape[0] // 2, 2 * x.shape[1]).sum(1),
        lambda n, g: [normal(g, 2 * n, 3)],
        [0, 1, 4],
    ),
    "reductions": (
        lambda x: x.sum(0) + x.mean(1, keepdim=True).amax(0) - x.max(dim=0).values,
        lambda x: x.sum(0) + x.mean(1, keepdims=True).max(0) - x.max(0),
        lambda n, g: [normal(g, n, 5)],
        [1, 2, 11],
    ),
    "roll_cat_slice": (
        lambda x: torch.cat([x[1:], x[:1]], 0) * 2,
        lambda x: np.concatenate([x[1:], x[:1]]) * 2,
        lambda n, g: [normal(g, n, 3)],
        [0, 1, 2, 9],
    ),
    "gather_select": (
        lambda x, i: torch.gather(x, 1, i.unsqueeze(-1).expand(-1, 2)) + x.index_select(0, i)[:, :2],
        lambda x, i: np.take_along_axis(x, np.repeat(i[:, None], 2, 1), 1) + x[i][:, :2],
        lambda n, g: [normal(g, n + 3, n + 3), index(g, n + 3, n + 3)],
        [0, 1, 5],
    ),
    "where_clamp": (
        lambda x: torch.where(x > 0, x, x * 0.1).clamp(-0.5, 2.0) + F.relu(x),
        lambda x: np.clip(np.where(x > 0, x, x * 0.1), -0.5, 2.0) + np.maximum(x, 0),
        lambda n, g: [normal(g, n, 4)],
        [0, 1, 7],
    ),
    "arange_scale": (
        lambda x: x * torch.arange(x.shape[0]).unsqueeze(-1),
        lambda x: x * np.arange(x.shape[0])[:, None],
        lambda n, g: [normal(g, n, 3)],
        [0, 1, 6],
    ),
    "batched_matmul": (
        lambda a, b: torch.matmul(a, b).sum(-1),
        lambda a, b: (a @ b).sum(-1),
        lambda n, g: [normal(g, 2, n, 4), normal(g, 2, 4, n + 1)],
        [0, 1, 3],
    ),
    "addmm": (
        lambda b, x, w: torch.addmm(b, x, w) - torch.addmm(b, x, w, beta=0.5, alpha=2.0),
        lambda b, x, w: (b + x @ w) - (0.5 * b + 2.0 * (x @ w)),
        lambda n, g: [normal(g, 4), normal(g, n, 5), normal(g, 5, 4)],
        [0, 1, 6],
    ),
    "conv2d_batch": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        lambda x, w, b: conv2d_direct(x, w, b, 1, 1),
        lambda n, g: [normal(g, n, 3, 6, 6), normal(g, 4, 3, 3, 3), normal(g, 4)],
        [0, 1, 5],
    ),
    "conv2d_stride_spatial": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        lambda x, w: conv2d_direct(x, w, 0, 2, 1),
        lambda n, g: [normal(g, 2, 3, n + 5, n + 6), normal(g, 4, 3, 3, 3)],
        [0, 1, 4],
    ),
    "batch_norm_eval": (
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-3),
        lambda x, m, v, w, b: (x - m[:, None]) / np.sqrt(v[:, None] + 1e-3) * w[:, None] + b[:, None],
        lambda n, g: [normal(g, n, 4, 5), normal(g, 4), g.uniform(0.5, 2, 4).astype(np.float32), normal(g, 4), normal(g, 4)],
        [0, 1, 6],
    ),
    "einsum": (
        lambda a, b: torch.einsum("ij,jk->ik", a, b),
        lambda a, b: a @ b,
        lambda n, g: [normal(g, n, 3), normal(g, 3, n + 2)],
        [0, 1, 4],
    ),
    "setitem_new_zeros": (_pad_rows, pad_rows, lambda n, g: [normal(g, n, 3)], [0, 1, 5]),
    "scatter_add_mean": (
        lambda x, i: torch.zeros(x.shape[0] + 1, x.shape[1]).scatter_add(0, i.unsqueeze(-1).expand(-1, x.shape[1]), x).mean(-1),
        lambda x, i: scatter_rows_mean(x, i),
        lambda n, g: [normal(g, n, 4), index(g, n + 1, n)],
        [0, 1, 8],
    ),
    "layernorm_linear": (
        lambda x, w: F.layer_norm(F.linear(x, w), (w.shape[0],)),
        lambda x, w: layer_norm(x @ w.T),
        lambda n, g: [normal(g, n, 6), normal(g, 5, 6)],
        [1, 4],
    ),
    "conv1d_stride_pad": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
        lambda x, w, b: conv1d_s2p1(x, w, b),
        lambda n, g: [normal(g, 2, 3, n + 3), normal(g, 4, 3, 3), normal(g, 4)],
        [0, 1, 6],
    ),
    "sdpa_length_mask": (
        lambda q, k, last: F.scaled_dot_product_attention(
            q, k, k, attn_mask=(torch.arange(k.shape[1]).unsqueeze(0) <= last.unsqueeze(1))[:, None]
        ),
        lambda q, k, last: sdpa_length_mask(q, k, last),
        lambda n, g: [normal(g, 2, n + 1, 4), normal(g, 2, n + 2, 4), index(g, n + 2, 2)],
        [0, 1, 6],
    ),
}


def build() -> list[Sample]:
    return [
        Sample(
            name,
            form,
            make,
            None,
            lambda p, *xs, ref=ref: ref(*xs),
            tuple(sizes),
            1e-4,
            1e-5,
            lazy=Lazy(compiles=2 if name in GUARD_FLIPS else 1),
            lazy_hlo=LAZY_HLO.get(name),
            origin="lazy_numeric",
        )
        for name, (form, ref, make, sizes) in _TABLE.items()
    ]
