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

CASES = (gnn_edge_divide, gnn_rbf_subtract, gnn_message_passing)
