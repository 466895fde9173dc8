"""The zoo's torch_geometric architectures: every message-passing conv class of
``torch_geometric.nn.conv.__all__``, in two models each.

A conv is built as ``Conv(32, 32, **KWARGS)`` (or ``Conv(32, **KWARGS)`` /
``Conv(**KWARGS)`` for the classes that keep the width or have none; :data:`WIDTHS`
where that binds the wrong argument; the table of ``_kwargs`` names what each class
needs, its modules and sizes), and called on what its forward takes (:data:`CALLS`:
edge attributes, an edge type, positions derived from the node states), so that
one model shape serves them all: ``Linear(16, 32)``, two convs with a ReLU
between, then

``node``
    ``Linear(32, 8)``: per-node outputs of a graph of N nodes and E edges;
``graph``
    ``global_mean_pool`` over a batch of G graphs (:func:`cases.inputs.graph_batch`:
    sorted batch vector, every graph non-empty, edges inside their graph),
    then ``Linear(32, 4)``: per-graph logits. The pool's size is the length
    of the ``graph_sizes`` input, so the output shape is not data-dependent.
"""

from __future__ import annotations

from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

IN, HIDDEN, NODE_OUT, GRAPH_OUT = 16, 32, 8, 4
NODE_SWEEP = ({"n": 24, "e": 60}, {"n": 40, "e": 150}, {"n": 31, "e": 97})
GRAPH_SWEEP = ({"n": 24, "e": 60, "g": 3}, {"n": 40, "e": 150, "g": 5}, {"n": 31, "e": 97, "g": 4})
#: classes that are not a conv of (x, edge_index) alone; each name is still listed as skipped, with this reason
NOT_A_CONV = {"MessagePassing": "the base class", "HeteroConv": "a wrapper of per-edge-type convs (heterogeneous graphs)"}


#: the width of the edge attributes the edge-feature convs get (derived from the node states: :func:`_call`)
EDGE_DIM = 2


def _kwargs(name: str) -> dict[str, Any]:
    """The constructor arguments a conv class needs beyond its widths (built here: some are modules)."""
    import torch
    from torch_geometric.nn import GCNConv

    lin = torch.nn.Linear
    hetero = (["n"], [("n", "e", "n")])  # one node type, one edge type
    table = {
        "ChebConv": dict(K=2),
        "TAGConv": dict(K=2),
        "APPNP": dict(K=2, alpha=0.1),
        "SSGConv": dict(alpha=0.1),
        "GCN2Conv": dict(alpha=0.1),
        "GatedGraphConv": dict(num_layers=2),
        "GINConv": dict(nn=lin(HIDDEN, HIDDEN)),
        "GINEConv": dict(nn=lin(HIDDEN, HIDDEN), edge_dim=EDGE_DIM),
        "EdgeConv": dict(nn=lin(2 * HIDDEN, HIDDEN)),
        "DirGNNConv": dict(conv=GCNConv(HIDDEN, HIDDEN)),
        "AntiSymmetricConv": dict(num_iters=2),
        "ARMAConv": dict(num_stacks=1, num_layers=2),
        "DNAConv": dict(heads=1),
        "FAConv": dict(eps=0.1),
        "PANConv": dict(filter_size=2),
        "GATConv": dict(heads=1),
        "GATv2Conv": dict(heads=1),
        "TransformerConv": dict(heads=1),
        "SuperGATConv": dict(heads=1),
        "CGConv": dict(dim=EDGE_DIM),
        "GPSConv": dict(conv=GCNConv(HIDDEN, HIDDEN), heads=2),
        "MixHopConv": dict(powers=[0, 1]),
        "FusedGATConv": dict(heads=1, add_self_loops=False),
        "RGCNConv": dict(num_relations=2),
        "FastRGCNConv": dict(num_relations=2),
        "RGATConv": dict(num_relations=2),
        "CuGraphRGCNConv": dict(num_relations=2),
        "GMMConv": dict(dim=EDGE_DIM, kernel_size=2),
        "SplineConv": dict(dim=EDGE_DIM, kernel_size=3),
        "NNConv": dict(nn=lin(EDGE_DIM, HIDDEN * HIDDEN)),
        "PDNConv": dict(edge_dim=EDGE_DIM, hidden_channels=8),
        "PNAConv": dict(aggregators=["mean", "max"], scalers=["identity", "amplification"], deg=torch.tensor([0, 4, 8, 6, 3, 1])),
        "GravNetConv": dict(space_dimensions=2, propagate_dimensions=4, k=3),
        "HANConv": dict(metadata=hetero, heads=1),
        "HGTConv": dict(metadata=hetero, heads=1),
        "HEATConv": dict(
            num_node_types=1, num_edge_types=2, edge_type_emb_dim=4, edge_dim=EDGE_DIM, edge_attr_emb_dim=4, heads=1
        ),
        "PointGNNConv": dict(mlp_h=lin(HIDDEN, 3), mlp_f=lin(3 + HIDDEN, HIDDEN), mlp_g=lin(HIDDEN, HIDDEN)),
        "PointNetConv": dict(local_nn=lin(HIDDEN + 3, HIDDEN)),
        "PPFConv": dict(local_nn=lin(HIDDEN + 4, HIDDEN)),
        "SignedConv": dict(first_aggr=True),
        "XConv": dict(dim=3, kernel_size=4),
    }
    return table.get(name, {})


#: conv -> its positional width arguments where the generic (32, 32), (32,), () would bind the wrong ones
WIDTHS: dict[str, tuple[int, ...]] = {
    "SimpleConv": (),
    "AntiSymmetricConv": (HIDDEN,),
    "CGConv": (HIDDEN,),
    "GCN2Conv": (HIDDEN,),
    "FAConv": (HIDDEN,),
    "GPSConv": (HIDDEN,),
    "MixHopConv": (HIDDEN, HIDDEN // 2),  # two powers, concatenated: 32 wide
    "SignedConv": (HIDDEN, HIDDEN // 2),  # positive and negative halves: 32 wide
    "PointGNNConv": (),
    "PointNetConv": (),
    "PPFConv": (),
}
#: conv -> what its forward takes beyond (x, edge_index): :func:`_call` derives it from the graph
CALLS: dict[str, str] = {
    **dict.fromkeys(("GINEConv", "CGConv", "GMMConv", "SplineConv", "NNConv", "PDNConv"), "edge_attr"),
    **dict.fromkeys(("RGCNConv", "FastRGCNConv", "RGATConv", "CuGraphRGCNConv"), "edge_type"),
    **dict.fromkeys(("GCN2Conv", "FAConv"), "x0"),
    **dict.fromkeys(("PointGNNConv", "PointNetConv", "PointTransformerConv"), "pos"),
    "PPFConv": "ppf",
    "HEATConv": "heat",
    "HANConv": "hetero",
    "HGTConv": "hetero",
    "SignedConv": "signed",
}


def _call(name: str, conv, h, edge_index, x0):
    """``conv`` on the node states ``h`` and what its forward needs beyond them (:data:`CALLS`):
    edge attributes and positions derived from the states (sigmoids of their first columns), an
    edge type from the edge's ends, the first layer's states as ``x_0``."""
    how = CALLS.get(name)
    src, dst = edge_index[0], edge_index[1]
    if how is None:
        return conv(h, edge_index)
    if how == "edge_attr":
        return conv(h, edge_index, (h[src, :EDGE_DIM] - h[dst, :EDGE_DIM]).sigmoid())
    if how == "edge_type":
        return conv(h, edge_index, (src + dst) % 2)
    if how == "x0":
        return conv(h, x0, edge_index)
    if how == "pos":
        return conv(h, h[:, :3].sigmoid(), edge_index)
    if how == "ppf":
        return conv(h, h[:, :3].sigmoid(), h[:, 3:6].tanh(), edge_index)
    if how == "heat":
        attr = (h[src, :EDGE_DIM] - h[dst, :EDGE_DIM]).sigmoid()
        return conv(h, edge_index, (h[:, 0] * 0).long(), (src + dst) % 2, attr)
    if how == "hetero":
        return conv({"n": h}, {("n", "e", "n"): edge_index})["n"]
    if how == "signed":
        return conv(h, edge_index, edge_index.flip(0))
    raise ValueError(how)


def candidates() -> list[dict[str, Any]]:
    """Two specs (node, graph) per name of ``torch_geometric.nn.conv.__all__`` (imports torch_geometric)."""
    libs.load("torch_geometric")
    import torch_geometric.nn.conv as conv

    out = []
    for cls in conv.__all__:
        for kind in ("node", "graph"):
            spec: dict[str, Any] = {"name": f"zoo_pyg_{cls.lower()}_{kind}", "conv": cls, "kind": kind}
            if cls in NOT_A_CONV:
                spec["skipped"] = f"not run: {NOT_A_CONV[cls]}"
            out.append(spec)
    return out


def conv(name: str):
    """One ``name`` conv of width :data:`HIDDEN`: the first of ``(32, 32)``, ``(32,)``, ``()`` it takes."""
    import torch_geometric.nn.conv as convs

    cls, kwargs = getattr(convs, name), _kwargs(name)
    errors = []
    for args in [WIDTHS[name]] if name in WIDTHS else ((HIDDEN, HIDDEN), (HIDDEN,), ()):
        try:
            return cls(*args, **kwargs)
        except TypeError as e:
            errors.append(str(e))
    raise TypeError(f"{name} takes none of (32, 32), (32,), (): {errors[-1]}")


def build(name: str, kind: str):
    """The seeded node or graph model around two ``name`` convs."""
    libs.load("torch_geometric")
    import torch
    from torch_geometric.nn import global_mean_pool

    class Zoo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin_in = torch.nn.Linear(IN, HIDDEN)
            self.conv1, self.conv2 = conv(name), conv(name)
            self.lin_out = torch.nn.Linear(HIDDEN, NODE_OUT if kind == "node" else GRAPH_OUT)

        def forward(self, x, edge_index, batch=None, graph_sizes=None):
            h0 = self.lin_in(x)
            h = _call(name, self.conv2, _call(name, self.conv1, h0, edge_index, h0).relu(), edge_index, h0)
            if kind == "graph":
                h = global_mean_pool(h, batch, size=graph_sizes.shape[0])
            return self.lin_out(h)

    return seeded(Zoo)


def _node(model, x, edge_index):
    return model(x, edge_index)


def _graph(model, x, edge_index, batch, graph_sizes):
    return model(x, edge_index, batch, graph_sizes)


_X = Input("x", ("n", "f"))
# padded edges join the dummy node to itself; padded nodes belong to the dummy graph: no real row changes
_EDGES = Input("edge_index", ("two", "e"), dtype="int64", gen="graph_edges", high="n", pad="dummy")
_N, _E = bounded("n", max=64, min=2), bounded("e", max=256, min=2)
LAYOUT = {
    "node": ((_N, _E, static("f", IN), static("two", 2)), (_X, _EDGES), NODE_SWEEP, ("n", NODE_OUT), _node),
    "graph": (
        (_N, _E, bounded("g", max=8, min=2), static("f", IN), static("two", 2)),
        (
            _X,
            _EDGES,
            Input("batch", ("n",), dtype="int64", gen="graph_batch", high="g", pad="dummy"),
            Input("graph_sizes", ("g",), dtype="int64", gen="graph_sizes", high="n"),
        ),
        GRAPH_SWEEP,
        ("g", GRAPH_OUT),
        _graph,
    ),
}

MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, cls, kind = entry["name"], entry["conv"], entry["kind"]
    if "skipped" in entry and entry["skipped"].startswith("not run"):
        raise TypeError(entry["skipped"])
    dims, inputs, sweep, out_shape, forward = LAYOUT[kind]
    model = MODELS.setdefault(name, Model(f"{cls}_{kind}", lambda: build(cls, kind), forward))
    what = "per-node outputs (N, 8) of a graph" if kind == "node" else "per-graph logits (G, 4) of a batch of G graphs"
    return ModelCase(
        name=name,
        tags=("model", "zoo", "torch_geometric", "gnn", kind, "scatter", "gather"),
        description=f"torch_geometric {cls} x2 (16 -> 32 -> 32 -> {NODE_OUT if kind == 'node' else GRAPH_OUT}, random weights, "
        f"eval): {what} of N nodes and E edges; all of N, E" + (", G" if kind == "graph" else "") + " dynamic" + ORACLE,
        dims=dims,
        inputs=inputs,
        sweep=sweep,
        oracle=model.oracle,
        out_shape=out_shape,
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        libraries=("torch_geometric",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_pyg", make)
