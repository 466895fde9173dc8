"""Graph neural networks of torch_geometric: the node count N and the edge count E change per call.

Builders (:func:`gcn`, :func:`gat`, :func:`sage`) return torch_geometric's
two-layer model classes (``torch_geometric.nn.models.GCN``, ``GAT``,
``GraphSAGE``) with seeded random weights (:data:`cases.models_base.SEED`),
eval mode, parameters frozen. Their convolutions keep their default self-loop
handling (GCNConv and GATConv: ``add_remaining_self_loops`` /
``remove_self_loops`` + ``add_self_loops``, which index with a boolean mask;
SAGEConv adds none: its root weight takes the node itself). The random graphs
hold self loops and repeated edges, as real batches may.
"""

from __future__ import annotations

from . import libs
from .model import EinxForm, Input, Tolerance, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

IN, HIDDEN, OUT = 16, 32, 8
#: a loader capping a batch at 64 nodes and 256 edges
MAX_N, MAX_E = 64, 256
SWEEP = ({"n": 24, "e": 60}, {"n": 40, "e": 150}, {"n": 31, "e": 97}, {"n": 57, "e": 203})


def _nn():
    libs.load("torch_geometric")
    import torch_geometric.nn.models as models

    return models


def gcn():
    """A seeded two-layer ``torch_geometric.nn.models.GCN`` (16 -> 32 -> 8, ReLU)."""
    models = _nn()
    return seeded(lambda: models.GCN(IN, HIDDEN, num_layers=2, out_channels=OUT))


def gat(heads: int = 2):
    """A seeded two-layer ``torch_geometric.nn.models.GAT`` (16 -> 32 -> 8, ``heads`` heads)."""
    models = _nn()
    return seeded(lambda: models.GAT(IN, HIDDEN, num_layers=2, out_channels=OUT, heads=heads))


def sage():
    """A seeded two-layer ``torch_geometric.nn.models.GraphSAGE`` (16 -> 32 -> 8, mean aggregation)."""
    models = _nn()
    return seeded(lambda: models.GraphSAGE(IN, HIDDEN, num_layers=2, out_channels=OUT))


def _forward(model, x, edge_index):
    return model(x, edge_index)


def _gcn_einx(einx):
    """GCN's two layers as einx calls over the seeded model's weights (``einx``: einx or
    ``engines.einx_symbolic``). GCNConv's ``add_remaining_self_loops`` drops every self loop
    and adds one per node: here a 0/1 weight per edge (no boolean mask, so no
    data-dependent size) and the loop's term h / deg per node."""
    convs = GCN.float32().convs

    def layer(x, src, dst, conv):
        h = einx.dot("n i, o i -> n o", x, conv.lin.weight)
        keep = einx.where("e, , -> e", einx.not_equal("e, e -> e", src, dst), 1.0, 0.0)
        deg = einx.add_at("[n], e, e -> [n]", x.new_ones(x.shape[0]), dst, keep)  # 1: the node's own loop
        dinv = deg.rsqrt()
        coef = einx.multiply("e, e, e -> e", keep, einx.get_at("[n], e -> e", dinv, src), einx.get_at("[n], e -> e", dinv, dst))
        msg = einx.multiply("e o, e -> e o", einx.get_at("[n] o, e -> e o", h, src), coef)
        # add_at writes into its first input: a fresh tensor, the self loops' share
        out = einx.add_at("[n] o, e, e o -> [n] o", einx.divide("n o, n -> n o", h, deg), dst, msg)
        return einx.add("n o, o -> n o", out, conv.bias)

    def gcn(x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        return layer(einx.maximum("n o, -> n o", layer(x, src, dst, convs[0]), 0.0), src, dst, convs[1])

    return gcn


def _sage_einx(einx):
    """GraphSAGE's two layers as einx calls over the seeded model's weights:
    lin_l(mean of the in-neighbours' features) + lin_r(x), the mean 0 where there are none."""
    convs = SAGE.float32().convs

    def layer(x, src, dst, conv):
        total = einx.add_at("[n] i, e, e i -> [n] i", x.new_zeros(x.shape), dst, einx.get_at("[n] i, e -> e i", x, src))
        count = einx.add_at("[n], e, -> [n]", x.new_zeros(x.shape[0]), dst, 1.0)
        mean = einx.divide("n i, n -> n i", total, einx.maximum("n, -> n", count, 1.0))
        return einx.add(
            "n o, o, n o -> n o",
            einx.dot("n i, o i -> n o", mean, conv.lin_l.weight),
            conv.lin_l.bias,
            einx.dot("n i, o i -> n o", x, conv.lin_r.weight),
        )

    def sage(x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        return layer(einx.maximum("n o, -> n o", layer(x, src, dst, convs[0]), 0.0), src, dst, convs[1])

    return sage


GCN = Model("gcn", gcn, _forward)
GAT = Model("gat", gat, _forward)
SAGE = Model("sage", sage, _forward)

_DIMS = (bounded("n", max=MAX_N, min=2), bounded("e", max=MAX_E, min=2), static("f", IN), static("two", 2))
# padded edges join the dummy node to itself: no real node's degree, softmax or mean changes
_INPUTS = (Input("x", ("n", "f")), Input("edge_index", ("two", "e"), dtype="int64", gen="index", high="n", pad="dummy"))


def _case(name: str, model: Model, what: str, atol: float, einx: EinxForm | None = None) -> ModelCase:
    return ModelCase(
        name=name,
        tags=("model", "torch_geometric", "gnn", "scatter", "gather"),
        description=f"torch_geometric {what} (16 -> 32 -> 8, random weights, eval) on a random graph of N nodes "
        "and E edges (x (N, 16), edge_index (2, E)); N and E dynamic" + ORACLE,
        dims=_DIMS,
        inputs=_INPUTS,
        sweep=SWEEP,
        oracle=model.oracle,
        out_shape=("n", OUT),
        torch_fn=model.torch_fn,
        einx=einx,
        tolerance=Tolerance(0.0, atol),
        libraries=("torch_geometric",),
    )


# atol: 10x the float32-vs-float64 max abs error (eager, the 4-shape sweep, seeds 0-3), rounded up:
# GCN 2.7e-07, GAT 1.4e-07, GraphSAGE 1.4e-07 (outputs are O(1): an absolute bound)
model_gcn = _case(
    "model_gcn",
    GCN,
    "models.GCN: two GCNConv layers (self loops added, symmetric normalisation)",
    atol=3e-6,
    einx=EinxForm(
        "dot, where, not_equal, add_at, get_at, multiply, divide, add, maximum",
        "n i, o i -> n o; [n] o, e -> e o; [n] o, e, e o -> [n] o; ...",
        program=_gcn_einx,
    ),
)
model_gat = _case("model_gat", GAT, "models.GAT: two GATConv layers, 2 heads (self loops added)", atol=2e-6)
model_sage = _case(
    "model_sage",
    SAGE,
    "models.GraphSAGE: two SAGEConv layers (mean aggregation)",
    atol=2e-6,
    einx=EinxForm(
        "add_at, get_at, divide, maximum, dot, add",
        "[n] i, e, e i -> [n] i; [n] i, e -> e i; n i, o i -> n o; ...",
        program=_sage_einx,
    ),
)

CASES = (model_gcn, model_gat, model_sage)
