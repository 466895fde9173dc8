"""Graph-neural-network cases: the edge count E (and node count N) change every batch."""

from __future__ import annotations

import numpy as np

from .model import Case, EinxForm, Input, Tolerance, bounded, static

# The einx report's loop: E = 1000..1049, 50 novel shapes.
EDGE_SWEEP = tuple({"e": e} for e in range(1000, 1050))


def _edge_divide_torch():
    def edge_divide(d, c):
        return d / c.unsqueeze(-1)

    return edge_divide


def _edge_divide_jax():
    def edge_divide(d, c):
        return d / c[:, None]

    return edge_divide


gnn_edge_divide = Case(
    name="gnn_edge_divide",
    tags=("gnn", "einx", "elementwise", "broadcast"),
    description='einx.divide("e d, e -> e d", d, c): per-edge features over a per-edge scalar',
    # E varies per batch; a data loader that caps edges per batch gives a bound
    dims=(bounded("e", max=2048, min=2), static("d", 8)),
    inputs=(
        Input("d", ("e", "d")),
        Input("c", ("e",), gen="uniform", low=0.5, high=1.5, pad=1.0),
    ),
    sweep=EDGE_SWEEP,
    oracle=lambda d, c: d / c[:, np.newaxis],
    out_shape=("e", "d"),
    einx=EinxForm("divide", "e d, e -> e d"),
    torch_fn=_edge_divide_torch,
    jax_fn=_edge_divide_jax,
)


def _rbf_torch():
    def rbf_subtract(dist, centers):
        return dist.unsqueeze(-1) - centers.unsqueeze(0)

    return rbf_subtract


def _rbf_jax():
    def rbf_subtract(dist, centers):
        return dist[:, None] - centers[None, :]

    return rbf_subtract


gnn_rbf_subtract = Case(
    name="gnn_rbf_subtract",
    tags=("gnn", "einx", "elementwise", "outer"),
    description='einx.subtract("e, r -> e r", dist, centers): radial-basis expansion of edge lengths',
    dims=(bounded("e", max=8192, min=2), static("r", 32)),
    inputs=(
        Input("dist", ("e",), gen="uniform", low=0.0, high=6.0),
        Input("centers", ("r",), gen="uniform", low=0.0, high=6.0),
    ),
    sweep=tuple({"e": 4096 + 37 * i} for i in range(20)),
    oracle=lambda dist, centers: dist[:, np.newaxis] - centers[np.newaxis, :],
    out_shape=("e", "r"),
    einx=EinxForm("subtract", "e, r -> e r"),
    torch_fn=_rbf_torch,
    jax_fn=_rbf_jax,
)


def _message_passing_torch():
    import torch

    def message_passing(x, src, dst, w):
        messages = x[src] * w.unsqueeze(-1)
        return torch.zeros_like(x).index_add(0, dst, messages)

    return message_passing


def _message_passing_jax():
    import jax.numpy as jnp

    def message_passing(x, src, dst, w):
        messages = x[src] * w[:, None]
        return jnp.zeros_like(x).at[dst].add(messages)

    return message_passing


def _message_passing_oracle(x, src, dst, w):
    out = np.zeros_like(x)
    np.add.at(out, dst, x[src] * w[:, np.newaxis])
    return out


gnn_message_passing = Case(
    name="gnn_message_passing",
    tags=("gnn", "scatter", "gather"),
    description="messages x[src] * w scatter-summed onto dst nodes (index_add); E and N dynamic",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=2), static("f", 16)),
    inputs=(
        Input("x", ("n", "f")),
        Input("src", ("e",), dtype="int64", gen="index", high="n"),
        Input("dst", ("e",), dtype="int64", gen="index", high="n"),
        Input("w", ("e",), gen="uniform", low=0.0, high=1.0),
    ),
    sweep=tuple({"n": 200 + 13 * i, "e": 1000 + 71 * i} for i in range(16)),
    oracle=_message_passing_oracle,
    out_shape=("n", "f"),
    torch_fn=_message_passing_torch,
    jax_fn=_message_passing_jax,
    # a sum of up to ~E/N float32 products per node: allow for summation order
    tolerance=Tolerance(1e-4, 1e-4),
)


# -- degree, segment and pooling cases: N and E both change per batch --------
# A data loader that caps a batch at 512 nodes and 4096 edges gives the bounds.
NODE_EDGE_SWEEP = tuple({"n": 120 + 17 * i, "e": 600 + 97 * i} for i in range(20))


def _index(name: str, high: str = "n") -> Input:
    """An int64 index into dim ``high``; padded entries point at a dummy slot."""
    return Input(name, ("e",) if high == "n" else ("n",), dtype="int64", gen="index", high=high, pad="dummy")


def _degree_oracle(dst, n):
    """In-degree of every node, 0 included (float64)."""
    return np.bincount(dst, minlength=n).astype(np.float64)


def _degree_norm_torch():
    import torch

    def degree_norm(x, src, dst):
        deg = torch.zeros_like(x[:, 0]).index_add(0, dst, torch.ones_like(dst, dtype=x.dtype))
        return x[src] / deg.clamp(min=1)[dst].unsqueeze(1)

    return degree_norm


def _degree_norm_jax():
    import jax.numpy as jnp

    def degree_norm(x, src, dst):
        deg = jnp.zeros(x.shape[0], x.dtype).at[dst].add(1.0)
        return x[src] / jnp.maximum(deg, 1.0)[dst][:, None]

    return degree_norm


def _degree_norm_oracle(x, src, dst):
    deg = np.maximum(_degree_oracle(dst, x.shape[0]), 1.0)
    return x[src] / deg[dst][:, np.newaxis]


gnn_degree_norm = Case(
    name="gnn_degree_norm",
    tags=("gnn", "scatter", "gather", "degree"),
    description="x[src] / deg.clamp(min=1)[dst], deg = zeros(N).index_add(0, dst, ones(E)): in-degree normalised messages",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=2), static("f", 16)),
    # padded edges point at the dummy node: real degrees and real messages are unchanged
    inputs=(Input("x", ("n", "f")), _index("src"), _index("dst")),
    sweep=NODE_EDGE_SWEEP,
    oracle=_degree_norm_oracle,
    out_shape=("e", "f"),
    torch_fn=_degree_norm_torch,
    jax_fn=_degree_norm_jax,
)


def _segment_softmax_torch():
    import torch
    import torch.nn.functional as F

    def segment_softmax(a_src, a_dst, src, dst):
        s = F.leaky_relu(a_src[src] + a_dst[dst], 0.2)
        idx = dst.unsqueeze(1).expand_as(s)
        m = torch.full_like(a_dst, float("-inf")).scatter_reduce(0, idx, s, "amax", include_self=True)
        ex = torch.exp(s - m[dst])
        return ex / torch.zeros_like(a_dst).index_add(0, dst, ex)[dst]

    return segment_softmax


def _segment_softmax_jax():
    import jax
    import jax.numpy as jnp

    def segment_softmax(a_src, a_dst, src, dst):
        s = jax.nn.leaky_relu(a_src[src] + a_dst[dst], 0.2)
        m = jnp.full_like(a_dst, -jnp.inf).at[dst].max(s)
        ex = jnp.exp(s - m[dst])
        return ex / jnp.zeros_like(a_dst).at[dst].add(ex)[dst]

    return segment_softmax


def _segment_softmax_oracle(a_src, a_dst, src, dst):
    s = a_src[src] + a_dst[dst]
    s = np.where(s > 0, s, 0.2 * s)
    m = np.full(a_dst.shape, -np.inf)
    np.maximum.at(m, dst, s)
    ex = np.exp(s - m[dst])
    den = np.zeros(a_dst.shape)
    np.add.at(den, dst, ex)
    return ex / den[dst]


gnn_segment_softmax = Case(
    name="gnn_segment_softmax",
    tags=("gnn", "scatter", "gather", "softmax", "segment"),
    description="GAT attention: softmax of leaky_relu(a_src[src] + a_dst[dst]) over the edges into each dst node "
    "(scatter_reduce amax, exp, index_add, divide)",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=2), static("h", 4)),
    # padded edges score into the dummy node only: every real node's softmax is unchanged
    inputs=(Input("a_src", ("n", "h")), Input("a_dst", ("n", "h")), _index("src"), _index("dst")),
    sweep=NODE_EDGE_SWEEP,
    oracle=_segment_softmax_oracle,
    out_shape=("e", "h"),
    torch_fn=_segment_softmax_torch,
    jax_fn=_segment_softmax_jax,
)


def _gcn_torch():
    import torch

    def gcn_layer(x, w, src, dst):
        h = x @ w
        deg = torch.zeros_like(x[:, 0]).index_add(0, dst, torch.ones_like(dst, dtype=x.dtype))
        norm = deg.clamp(min=1).rsqrt()
        return torch.zeros_like(h).index_add(0, dst, h[src] * (norm[src] * norm[dst]).unsqueeze(1))

    return gcn_layer


def _gcn_jax():
    import jax
    import jax.numpy as jnp

    def gcn_layer(x, w, src, dst):
        h = x @ w
        deg = jnp.zeros(x.shape[0], x.dtype).at[dst].add(1.0)
        norm = jax.lax.rsqrt(jnp.maximum(deg, 1.0))
        return jnp.zeros_like(h).at[dst].add(h[src] * (norm[src] * norm[dst])[:, None])

    return gcn_layer


def _gcn_oracle(x, w, src, dst):
    h = x @ w
    norm = 1.0 / np.sqrt(np.maximum(_degree_oracle(dst, x.shape[0]), 1.0))
    out = np.zeros_like(h)
    np.add.at(out, dst, h[src] * (norm[src] * norm[dst])[:, np.newaxis])
    return out


gnn_gcn_layer = Case(
    name="gnn_gcn_layer",
    tags=("gnn", "linear", "scatter", "gather", "degree"),
    description="GCN layer: h = x @ w, then index_add of h[src] * deg^-1/2[src] * deg^-1/2[dst] onto dst "
    "(PyG gcn_norm, in-degrees clamped to 1)",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=2), static("fi", 16), static("fo", 8)),
    inputs=(Input("x", ("n", "fi")), Input("w", ("fi", "fo")), _index("src"), _index("dst")),
    sweep=NODE_EDGE_SWEEP,
    oracle=_gcn_oracle,
    out_shape=("n", "fo"),
    torch_fn=_gcn_torch,
    jax_fn=_gcn_jax,
    # a 16-term float32 matmul, then a sum of up to ~E/N messages per node
    tolerance=Tolerance(1e-4, 1e-4),
)


def _mean_pool_torch():
    import torch

    def mean_pool(x, batch, u):
        total = torch.zeros_like(u).index_add(0, batch, x)
        count = torch.zeros_like(u[:, 0]).index_add(0, batch, torch.ones_like(batch, dtype=x.dtype))
        return u + total / count.clamp(min=1).unsqueeze(1)

    return mean_pool


def _mean_pool_jax():
    import jax
    import jax.numpy as jnp

    def mean_pool(x, batch, u):
        g = u.shape[0]
        total = jax.ops.segment_sum(x, batch, num_segments=g)
        count = jax.ops.segment_sum(jnp.ones(x.shape[0], x.dtype), batch, num_segments=g)
        return u + total / jnp.maximum(count, 1.0)[:, None]

    return mean_pool


def _mean_pool_oracle(x, batch, u):
    out = u.copy()
    for g in range(u.shape[0]):
        rows = x[batch == g]
        if len(rows):
            out[g] += rows.mean(axis=0)
    return out


gnn_mean_pool = Case(
    name="gnn_mean_pool",
    tags=("gnn", "scatter", "segment", "pooling", "readout"),
    description="graph readout u + global_mean_pool(x, batch): per-graph segment mean (index_add sum / count "
    "clamped to 1) over a batch of G graphs; N and G dynamic",
    # a loader batching up to 64 graphs of up to 2048 nodes in all
    dims=(bounded("n", max=2048, min=2), bounded("g", max=64, min=1), static("f", 16)),
    # padded nodes belong to the dummy graph: every real graph's sum and count are unchanged
    inputs=(Input("x", ("n", "f")), _index("batch", high="g"), Input("u", ("g", "f"))),
    sweep=tuple({"n": 300 + 71 * i, "g": 4 + 3 * i} for i in range(20)),
    oracle=_mean_pool_oracle,
    out_shape=("g", "f"),
    torch_fn=_mean_pool_torch,
    jax_fn=_mean_pool_jax,
    # a float32 sum of up to ~N/G rows per graph
    tolerance=Tolerance(1e-4, 1e-4),
)


gnn_zero_edges = Case(
    name="gnn_zero_edges",
    tags=("gnn", "scatter", "gather", "empty"),
    description="message passing (x[src] * w scatter-summed onto dst) on batches where E = 0: a size-0 dim",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=0), static("f", 16)),
    inputs=(Input("x", ("n", "f")), _index("src"), _index("dst"), Input("w", ("e",), gen="uniform")),
    # every fourth batch, from the second on, has no edges at all (isolated nodes only): a program
    # prepared on a batch with edges meets an empty one
    sweep=tuple({"n": 64 + 19 * i, "e": 0 if i % 4 == 1 else 200 + 53 * i} for i in range(20)),
    oracle=_message_passing_oracle,
    out_shape=("n", "f"),
    torch_fn=_message_passing_torch,
    jax_fn=_message_passing_jax,
    tolerance=Tolerance(1e-4, 1e-4),
)


def _edge_attention_einx(einx):
    def edge_attention(q, k, src, dst):
        scores = einx.dot(
            "e h d, e h d -> e h", einx.get_at("[n] h d, e -> e h d", q, dst), einx.get_at("[n] h d, e -> e h d", k, src)
        )
        return einx.softmax("[e] h", scores)

    return edge_attention


def _edge_attention_torch():
    import torch

    def edge_attention(q, k, src, dst):
        return torch.softmax((q[dst] * k[src]).sum(2), dim=0)

    return edge_attention


def _edge_attention_jax():
    import jax

    def edge_attention(q, k, src, dst):
        return jax.nn.softmax((q[dst] * k[src]).sum(2), axis=0)

    return edge_attention


def _edge_attention_oracle(q, k, src, dst):
    s = np.einsum("ehd,ehd->eh", q[dst], k[src])
    ex = np.exp(s - s.max(axis=0))
    return ex / ex.sum(axis=0)


gnn_edge_attention = Case(
    name="gnn_edge_attention",
    tags=("gnn", "einx", "gather", "dot", "softmax"),
    description='einx.softmax("[e] h", einx.dot("e h d, e h d -> e h", q[dst], k[src])): per-edge attention scores '
    "(q pre-scaled by 1/sqrt(d)), softmax over the dynamic edge axis per head",
    dims=(bounded("n", max=512, min=2), bounded("e", max=4096, min=2), static("h", 4), static("d", 16)),
    inputs=(Input("q", ("n", "h", "d")), Input("k", ("n", "h", "d")), _index("src"), _index("dst")),
    sweep=NODE_EDGE_SWEEP,
    oracle=_edge_attention_oracle,
    out_shape=("e", "h"),
    # three einx calls (two get_at, a dot) and a softmax: an einx program, not one op
    einx=EinxForm("get_at, dot, softmax", "[n] h d, e -> e h d; e h d, e h d -> e h; [e] h", program=_edge_attention_einx),
    torch_fn=_edge_attention_torch,
    jax_fn=_edge_attention_jax,
    bucket_unsupported="softmax over the padded edge axis: a padded edge scores q[dummy] . k[dummy] = 0, not -inf, "
    "and takes a share of every head's softmax",
)

CASES = (
    gnn_edge_divide,
    gnn_rbf_subtract,
    gnn_message_passing,
    gnn_degree_norm,
    gnn_segment_softmax,
    gnn_gcn_layer,
    gnn_mean_pool,
    gnn_zero_edges,
    gnn_edge_attention,
)
