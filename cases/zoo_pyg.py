"""The zoo's torch_geometric architectures: every message-passing conv class of
``torch_geometric.nn.conv.__all__``, in two models each.

A conv is built as ``Conv(32, 32, **KWARGS)`` (or ``Conv(32, **KWARGS)`` /
``Conv(**KWARGS)`` for the classes that keep the width or have none), so that
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


def _kwargs(name: str) -> dict[str, Any]:
    """The constructor arguments a conv class needs beyond its widths (built here: some are modules)."""
    import torch
    from torch_geometric.nn import GCNConv

    table = {
        "ChebConv": dict(K=2),
        "TAGConv": dict(K=2),
        "APPNP": dict(K=2, alpha=0.1),
        "SSGConv": dict(alpha=0.1),
        "GCN2Conv": dict(alpha=0.1),
        "GatedGraphConv": dict(num_layers=2),
        "GINConv": dict(nn=torch.nn.Linear(HIDDEN, HIDDEN)),
        "EdgeConv": dict(nn=torch.nn.Linear(2 * HIDDEN, HIDDEN)),
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
    }
    return table.get(name, {})


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
    for args in ((HIDDEN, HIDDEN), (HIDDEN,), ()):
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
            h = self.conv2(self.conv1(self.lin_in(x), edge_index).relu(), edge_index)
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
