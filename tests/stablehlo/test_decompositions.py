"""The lowering's decompositions (``lower.decomposed``) ask torch's C++
dispatcher for its CompositeImplicitAutograd ops once per program instead of
once per op namespace, and give the graph torch's own ``run_decompositions`` gives."""

from __future__ import annotations

import pytest
import torch
from torch._export import utils as export_utils
from torch.export import Dim

from engines.stablehlo.lowering import lower as L


class Block(torch.nn.Module):
    """CIA ops that decompose (linear, layer_norm, softmax, einsum, dropout in eval),
    one kept whole (scaled_dot_product_attention) and a size-derived reshape."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 24)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.proj(self.norm(x)).view(b, t, 3, 8).unbind(2)
        a = torch.nn.functional.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]
        w = torch.einsum("btd,bsd->bts", a, k).softmax(-1)
        return torch.nn.functional.dropout(w, 0.1, training=False).reshape(b, t * t)


def _export():
    t = Dim("t", min=2, max=32)
    return torch.export.export(Block().eval(), (torch.randn(2, 5, 8),), dynamic_shapes={"x": {1: t}})


def test_the_cia_ops_are_materialized_once_per_decomposition(monkeypatch):
    calls: list = []
    real = export_utils._materialize_cpp_cia_ops
    monkeypatch.setattr(export_utils, "_materialize_cpp_cia_ops", lambda: (calls.append(1), real())[1])
    ep = _export()
    L.decomposed(ep)
    assert len(calls) == 1
    L.lower(ep)
    assert len(calls) == 2
    calls.clear()
    ep.run_decompositions(L.decompositions())  # torch's own: once per op namespace, twice
    assert len(calls) > 2, "torch materializes once per call now: cia_ops_materialized_once can go"


@pytest.mark.parametrize("oblivious", [False, True], ids=["plain", "size-oblivious"])
def test_the_decomposed_graph_is_torchs(oblivious):
    import torch.fx.experimental._config as fx_config

    ep = _export()
    ep.size_oblivious = oblivious
    ours = L.decomposed(ep)
    with fx_config.patch(backed_size_oblivious=oblivious):
        theirs = ep.run_decompositions(L.decompositions())
    assert str(ours.graph) == str(theirs.graph)
    assert ours.graph_signature == theirs.graph_signature
    assert "scaled_dot_product_attention" in str(ours.graph) and "aten.linear" not in str(ours.graph)


def test_an_op_without_a_lowering_is_lowered_as_torchs_decomposition():
    """``addmv`` is core ATen (``run_decompositions`` keeps it) and has no lowering of its
    own: :func:`decompositions` adds torch's decomposition, so it lowers and runs; an op
    the registry lowers (``mm``) keeps its lowering, a random op its refusal."""
    import numpy as np

    from engines.stablehlo import execute, lower
    from engines.stablehlo.lowering.registry import LOWERINGS

    aten = torch.ops.aten
    table = L.unlowered_decompositions()
    assert aten.addmv.default in table and aten.addmv.default not in LOWERINGS
    assert aten.mm.default not in table and aten.uniform.default not in table

    class AddMv(torch.nn.Module):
        def forward(self, b, m, v):
            return torch.addmv(b, m, v, beta=0.5, alpha=2.0)

    s, t = Dim("s", min=2, max=16), Dim("t", min=2, max=16)
    ep = torch.export.export(
        AddMv(), (torch.randn(5), torch.randn(5, 6), torch.randn(6)), dynamic_shapes=({0: s}, {0: s, 1: t}, {0: t})
    )
    assert "aten.addmv" in str(ep.graph) and "aten.addmv" not in str(L.decomposed(ep).graph)
    text = lower(ep)
    for n, k in ((5, 6), (9, 3)):
        b, m, v = (torch.randn(*shape) for shape in ((n,), (n, k), (k,)))
        (got,) = execute(text, [b.numpy(), m.numpy(), v.numpy()])
        np.testing.assert_allclose(got, torch.addmv(b, m, v, beta=0.5, alpha=2.0).numpy(), rtol=1e-5, atol=1e-5)


def test_an_effect_token_input_is_no_lifted_constant():
    """torch.linalg's error check decomposes to ``with_effects`` on an effect token
    (``InputKind.TOKEN``, no value in the state dict): the lowering threads the token
    and refuses the program by name (the data check it cannot raise on), not with a KeyError."""
    from engines.stablehlo import LoweringError, lower

    class Inv(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.inv(x)

    s = Dim("s", min=2, max=16)
    ep = torch.export.export(Inv(), (torch.randn(4, 4),), dynamic_shapes=({0: s, 1: s},))
    assert any(sp.kind.name == "TOKEN" for sp in L.decomposed(ep).graph_signature.input_specs)
    with pytest.raises(LoweringError, match="aten::_linalg_check_errors"):
        lower(ep)
