"""The built-in backends' compile counters and mode handling, in process."""

import numpy as np
import pytest

import cases
from backends.einx_backend import Einx
from backends.jax_jit import JaxJit
from backends.torch_compile import TorchCompile
from backends.torch_export import OutOfRange, TorchExport


def _sweep(backend, case, mode, n=3, sizes=None):
    program = backend.prepare(case, mode)
    counts = []
    for i, s in enumerate(sizes or case.sizes_for("full")[:n]):
        inputs = case.make_inputs(s, seed=i)
        out = program(*backend.convert(inputs))
        backend.sync(out)
        np.testing.assert_allclose(backend.to_numpy(out), case.expected(inputs), rtol=1e-4, atol=1e-5)
        counts.append(sum(backend.compile_stats().values()))
    return program, counts


def test_einx_counts_one_graph_build_per_new_shape():
    b = Einx()
    case = cases.get("gnn_edge_divide")
    start = b.compile_stats()["einx_graph"]
    # sizes no other test uses: einx's graph cache is process-wide
    sizes = [{"e": 1777}, {"e": 1778}, {"e": 1779}]
    program, counts = _sweep(b, case, "static", sizes=sizes)
    assert [c - start for c in counts] == [1, 2, 3]
    inputs = b.convert(case.make_inputs(sizes[0], seed=9))
    program(*inputs)  # a shape seen before: cached
    assert b.compile_stats()["einx_graph"] - start == 3


def test_torch_compile_counts_dynamo_graphs_per_mode():
    import torch._dynamo

    case = cases.get("gnn_edge_divide")
    torch._dynamo.reset()
    b = TorchCompile(compiler="eager")
    base = b.compile_stats()["dynamo_graph"]
    _, counts = _sweep(b, case, "static")
    assert [c - base for c in counts] == [1, 2, 3]
    torch._dynamo.reset()
    base = b.compile_stats()["dynamo_graph"]
    _, counts = _sweep(b, case, "unbounded")
    assert [c - base for c in counts] == [1, 1, 1]


def test_torch_export_bounded_rejects_an_input_beyond_the_bound_clearly():
    case = cases.get("expand_over_batch_bounded")
    b = TorchExport()
    program, counts = _sweep(b, case, "bounded", sizes=[{"b": 2}, {"b": 64}])
    assert counts[-1] - counts[0] == 0
    x = np.zeros((65, 3, 224, 224), np.float32)
    emb = np.zeros((1, 1, 768), np.float32)
    with pytest.raises(OutOfRange, match=r"input 'x' dim 'b' \(axis 0\) is 65, outside the exported range \[2, 64\]"):
        program(*b.convert([x, emb]))


def test_jax_jit_bounded_pads_to_one_executable_and_slices_back():
    case = cases.get("expand_over_batch_bounded")
    b = JaxJit()
    program = b.prepare(case, "bounded")
    base = b.compile_stats()["xla"]
    for i, s in enumerate([{"b": 2}, {"b": 5}, {"b": 64}]):
        inputs = case.make_inputs(s, seed=i)
        out = program(*b.convert(inputs))
        b.sync(out)
        np.testing.assert_array_equal(b.to_numpy(out), case.expected(inputs))
    assert b.compile_stats()["xla"] - base == 1
    x = np.zeros((65, 3, 224, 224), np.float32)
    with pytest.raises(ValueError, match="dim 'b' = 65 exceeds its bound 64"):
        program(*b.convert([x, np.zeros((1, 1, 768), np.float32)]))


def test_jax_jit_static_compiles_per_shape():
    case = cases.get("gnn_edge_divide")
    b = JaxJit()
    base = b.compile_stats()["xla"]
    _, counts = _sweep(b, case, "static")
    assert [c - base for c in counts] == [1, 2, 3]
