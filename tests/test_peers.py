"""The peer compilers (backends/peers/): exact compile counts on the seed case,
driven as the worker drives a job, per backend and mode; IREE's refusal of our
own unbounded StableHLO, pinned; and a peer's failure as an error record.
Each skips, naming the wheel, where the ``peers`` extra is not installed."""

from __future__ import annotations

import numpy as np
import pytest

import cases
from backends.peers.iree import Iree
from backends.peers.ort import OnnxRuntime
from backends.peers.ov import OpenVino
from backends.peers.tvm_relax import TvmRelax

CASE = "gnn_edge_divide"


def _needs(backend):
    ok, why = backend.available()
    if not ok:
        pytest.skip(f"{backend.name}: {why} (the peers extra: make setup)")
    return backend


def _counts(backend, mode, es):
    """The job's cumulative compile counts after each call at ``E`` in ``es``, every output oracle-checked."""
    case = cases.get(CASE)
    backend.startup()
    program = backend.prepare(case, mode)
    out = []
    for i, e in enumerate(es):
        inputs = case.make_inputs({"e": e}, seed=i)
        y = program(*program.convert(inputs))
        program.sync(y)
        np.testing.assert_allclose(program.to_numpy(y), case.expected(inputs), rtol=1e-5, atol=1e-6)
        out.append(program.compile_stats())
    assert len(program.compile_reasons()) == sum(out[-1].values())  # one reason per compile
    assert set(program.compile_times()) == set(backend.counters)
    return program, out


@pytest.mark.parametrize(
    "cls, system", [(TvmRelax, "relax_build"), (Iree, "iree_compile"), (OnnxRuntime, "session"), (OpenVino, "compile_model")]
)
def test_one_compile_serves_every_shape_and_static_compiles_per_shape(cls, system):
    backend = _needs(cls())
    export = next(s for s in backend.counters if s != system)
    _, got = _counts(backend, "unbounded", [7, 1000, 1049])
    assert got == [{export: 1, system: 1}] * 3
    # static: ORT and OpenVINO keep their one dynamic export and fix the sizes per shape; TVM and IREE export per shape
    per_shape_export = cls in (TvmRelax, Iree)
    _, got = _counts(backend, "static", [5, 6, 6])
    assert [c[system] for c in got] == [1, 2, 2]
    assert [c[export] for c in got] == ([1, 2, 2] if per_shape_export else [1, 1, 1])


@pytest.mark.parametrize("cls", [TvmRelax, OpenVino])
def test_bounded_compiles_once_and_refuses_a_size_above_the_bound(cls):
    from backends.base import BoundError

    backend = _needs(cls())
    program, got = _counts(backend, "bounded", [3, 2048])
    assert [sum(c.values()) for c in got] == [2, 2]
    if cls is OpenVino:  # f32, not the bf16 its CPU plugin picks on an AVX512-BF16/AMX CPU
        assert str(program.built[None].compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    with pytest.raises(BoundError, match=r"dim 'e' \(axis 0\) is 2049, above its bound 2048"):
        program.convert(cases.get(CASE).make_inputs({"e": 2049}, seed=0))


def test_iree_refuses_our_unbounded_stablehlo_on_dynamic_reshape():
    """IREE 3.13's StableHLO input marks stablehlo.dynamic_reshape illegal: our `?`
    module of the seed program cannot be its second compiler (docs/backends.md)."""
    _needs(Iree())
    import iree.compiler.tools
    import torch

    from backends.base import torch_dims
    from backends.peers.iree import compile_stablehlo
    from backends.torch_export import export
    from engines.stablehlo import lower

    case = cases.get(CASE)
    inputs = [torch.from_numpy(a) for a in case.make_inputs({"e": 7}, seed=0)]
    text = lower(export(case.torch_fn(), inputs, tuple(torch_dims(case, "unbounded")), CASE))
    assert "stablehlo.dynamic_reshape" in text and "?x8xf32" in text
    with pytest.raises(iree.compiler.tools.CompilerToolError, match=r"failed to legalize operation 'stablehlo\.dynamic_reshape'"):
        compile_stablehlo(text)


def test_a_system_failure_is_an_error_record_and_the_build_is_not_retried():
    """TVM's torch frontend has no scatter_reduce: the job's records say so, one
    export counted (the failed build is raised again at the next shapes, not redone).
    Measured in this process, as a worker measures a job (``harness.measure.run``):
    a worker of its own would add its start and imports, not another check."""
    from harness import measure, registry

    backend = registry.backends()["tvm_relax"]
    _needs(backend)
    backend.startup()
    got: list[dict] = []
    job = {"case": "gnn_segment_softmax", "mode": "unbounded", "profile": "quick", "repeats": 1, "warmup": 1}
    measure.run(job, backend, got.append)
    novel = [r for r in got if r.get("novel")]
    assert novel and {r["status"] for r in novel} == {"error"}
    assert "Unsupported function types ['scatter_reduce.two']" in novel[0]["message"]
    assert [r["compiles"] for r in novel] == [1] * len(novel)
