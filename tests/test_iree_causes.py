"""The causes behind IREE's wrong results on the zoo, each minimised by
``dynshape minify`` and pinned as a small program (docs/findings/2026-12-05-iree.md).
Each test asserts the wrong result **still reproduces** on IREE 3.13: when one
starts failing, IREE fixed the cause; update the findings page and the zoo's
expectations. Skips where IREE's wheels are missing."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

#: two dims, as the PyG zoo cases have them: nodes n, edges e
DIMS = [
    {"name": "n", "kind": "unbounded", "size": None, "min": 2, "max": None},
    {"name": "e", "kind": "unbounded", "size": None, "min": 2, "max": None},
]
SIZES = [{"n": 24, "e": 60}, {"n": 40, "e": 150}]


def _backend(name):
    from harness import registry

    backend = registry.get(name)
    ok, why = backend.available()
    if not ok:
        pytest.skip(f"{name}: {why} (the peers extra: make setup)")
    backend.startup()
    return backend


def _two_scatters():
    import torch

    class TwoScatterAdds(torch.nn.Module):
        """GraphConv's aggregation twice (two layers): each a scatter-add of edge
        messages into a fresh zeros tensor of the nodes' (dynamic) shape."""

        def forward(self, x, index, nodes):
            i = index.unsqueeze(1).expand_as(x)
            a = nodes.new_zeros(nodes.shape).scatter_add_(0, i, x)
            b = nodes.new_zeros(nodes.shape).scatter_add_(0, i, x * 2.0)
            return a + b

    rng = np.random.default_rng(0)
    data = [
        [
            rng.standard_normal((s["e"], 4)).astype(np.float32),
            rng.integers(0, s["n"], s["e"]).astype(np.int64),
            np.zeros((s["n"], 4), np.float32),
        ]
        for s in SIZES
    ]
    return TwoScatterAdds(), data


def _case():
    from harness.minify.repro import case_of

    program, data = _two_scatters()
    spec = {"dims": DIMS, "shapes": [["e", 4], ["e"], ["n", 4]], "sizes": SIZES, "tolerance": [1e-4, 1e-5]}
    return case_of(program, data, spec), data


def test_two_scatter_adds_into_dynamic_zeros_share_one_buffer():
    """Cause 1 (every torch_geometric wrong result minimised so far): two scatter-adds
    into zeros tensors of the same `?` shape in one program both return the sum of
    both (2a + 2b instead of a + b) on torch-mlir -> IREE; one scatter-add is right,
    and so are static shapes. Our StableHLO hit it too until iree_compat gave each
    scatter a splat of its own (the next test)."""
    import torch

    from harness.minify.failure import observe

    b = _backend("iree")
    case, data = _case()
    got = observe(case, b, "unbounded", SIZES)
    assert got is not None and got.kind == "wrong", got
    # the shape of the bug: each result reads the one buffer both scatters accumulated into
    job = b.prepare(case, "unbounded")
    x, index, _ = data[0]
    out = job.to_numpy(job(*job.convert(data[0])))
    i = torch.from_numpy(index).unsqueeze(1).expand(-1, 4)
    a = torch.zeros(24, 4).scatter_add_(0, i, torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, 2 * a + 2 * (2 * a), rtol=1e-5, atol=1e-5)
    assert observe(case, b, "static", SIZES[:1]) is None  # static shapes (one compile at one size): right


def test_our_route_gives_each_scatter_its_own_splat_and_is_right():
    """The same program on stablehlo_iree: one lowering, one IREE compile, right at every size."""
    from harness.minify.failure import observe

    case, _ = _case()
    assert observe(case, _backend("stablehlo_iree"), "unbounded", SIZES) is None


def _nonzero_copies(k: int):
    """MFConv's update per node degree, ``k`` degrees: the nodes of degree d found by
    ``nonzero`` (a data-dependent count), their rows computed and copied into the output."""
    import torch

    from harness.minify.repro import case_of

    class DegreeCopies(torch.nn.Module):
        def forward(self, x, deg, y):
            out = y.clone()
            for d in range(k):
                idx = (deg == d).nonzero().view(-1)
                out.index_copy_(0, idx, x.index_select(0, idx) * (d + 2.0))
            return out

    rng = np.random.default_rng(0)
    sizes = [{"n": 24}, {"n": 40}]
    data = [
        [
            rng.standard_normal((s["n"], 4)).astype(np.float32),
            rng.integers(0, k, s["n"]).astype(np.int64),
            rng.standard_normal((s["n"], 4)).astype(np.float32),
        ]
        for s in sizes
    ]
    spec = {"dims": DIMS[:1], "shapes": [["n", 4], ["n"], ["n", 4]], "sizes": sizes, "tolerance": [1e-5, 1e-6]}
    return case_of(DegreeCopies(), data, spec), sizes


def test_two_index_copies_at_nonzero_indices_go_wrong():
    """Cause 2 (MFConv, minimised to 18 ops: two degrees' ``nonzero`` + ``index_copy_``):
    two ``index_copy_`` into one tensor at indices of data-dependent count are wrong on
    torch-mlir -> IREE with a dynamic dim; one is right, and our StableHLO route is right."""
    from harness.minify.failure import observe

    iree = _backend("iree")
    two, sizes = _nonzero_copies(2)
    got = observe(two, iree, "unbounded", sizes)
    assert got is not None and got.kind == "wrong", got
    one, _ = _nonzero_copies(1)
    assert observe(one, iree, "unbounded", sizes) is None
    assert observe(two, _backend("stablehlo_iree"), "unbounded", sizes) is None


#: torch-mlir's sqrt(2/pi) in the tanh approximation of GELU: sqrt(7/11), as if pi were 22/7
TORCH_MLIR_BETA = (7 / 11) ** 0.5


def _gelu_tanh():
    """``gelu(x, approximate="tanh")`` on x in [-6, 6], one ``?`` dim: the activation of every
    transformers case IREE gets wrong (StarCoder2, GPTBigCode, Gemma 2, 3, 4)."""
    import torch

    from harness.minify.repro import case_of

    class GeluTanh(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.gelu(x, approximate="tanh")

    sizes = [{"n": 8}, {"n": 12}]
    data = [[np.linspace(-6, 6, s["n"] * 16, dtype=np.float32).reshape(s["n"], 16)] for s in sizes]
    spec = {"dims": DIMS[:1], "shapes": [["n", 16]], "sizes": sizes, "tolerance": [1e-6, 1e-6]}
    return case_of(GeluTanh(), data, spec), data, sizes


def _gelu(x, beta):
    return 0.5 * x * (1 + np.tanh(beta * (x + 0.044715 * x**3)))


def test_gelu_tanh_uses_sqrt_7_over_11_for_sqrt_2_over_pi():
    """Cause 3 (every transformers wrong result, minimised to the one ``aten.gelu``):
    torch-mlir lowers ``gelu(x, approximate="tanh")`` with the constant 0.7977240352174656
    (sqrt(7/11)) for sqrt(2/pi) = 0.7978845608..., a relative error of 2e-4: IREE's output
    is the formula with that constant, 5e-5 off the right one near |x| = 1.4, in static
    mode too (no dynamic-shape bug). Our StableHLO route (torch's own decomposition) is right."""
    from harness.minify.failure import observe

    iree = _backend("iree")
    case, data, sizes = _gelu_tanh()
    for mode in ("unbounded", "static"):
        job = iree.prepare(case, mode)
        out = np.asarray(job.to_numpy(job(*job.convert(data[0]))), np.float64)
        x = data[0][0].astype(np.float64)
        np.testing.assert_allclose(out, _gelu(x, TORCH_MLIR_BETA), rtol=0, atol=2e-6)  # the bug's value
        assert np.abs(out - _gelu(x, np.sqrt(2 / np.pi))).max() > 3e-5, mode  # and not the right one
    assert observe(case, iree, "unbounded", sizes, margin=1.0).kind == "wrong"
    assert observe(case, _backend("stablehlo_iree"), "unbounded", sizes, margin=1.0) is None
