"""The StableHLO-path backends as the harness drives them: startup, prepare,
convert (untimed), program + sync (timed), to_numpy (untimed).

Exact counts: one XLA compile (or interpreter parse) per new argument shape,
none for a seen one (stablehlo_xla bounded: one compile for every size); the module's signature parsed and hashed once per
program, its text sent to the interpreter worker once; the worker started by
``startup``, not by a call.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import cases
from backends.base import BoundError
from backends.jax_export import JaxExport
from backends.stablehlo_interp import StablehloInterp
from backends.stablehlo_xla import StablehloXla
from engines.stablehlo import ExecutionError
from engines.stablehlo.execution import _interp_worker, module, xla

CASE = cases.get("gnn_edge_divide")
SWEEP = [10, 11, 10, 12, 11]  # e: new, new, seen, new, seen


def started(backend, case=CASE, mode="bounded"):
    backend.startup()
    return backend.prepare(case, mode)


def call(backend, program, arrays):
    """One harness call; the output as NumPy."""
    out = program(*program.convert(arrays))
    program.sync(out)
    return out, program.to_numpy(out)


def shapes_reason(stage, e, label):
    return re.compile(rf"{stage}: new argument shapes \({e}, 8\), \({e},\) for {re.escape(label)} \[[0-9a-f]{{12}}\]")


@pytest.fixture
def counted(monkeypatch):
    """Calls of the module-text signature parser, the hash and XLA's refinement."""
    n = {"signature": 0, "digest": 0, "refine": 0}

    def counting(name, fn):
        def wrapped(*a, **k):
            n[name] += 1
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(module, "main_signature", counting("signature", module.main_signature))
    monkeypatch.setattr(module, "digest", counting("digest", module.digest))
    monkeypatch.setattr(xla, "refine", counting("refine", xla.refine))
    return n


@pytest.mark.parametrize(
    "cls,mode,first,label",
    [
        (StablehloXla, "unbounded", "lowering", "gnn_edge_divide (unbounded)"),
        (JaxExport, "bounded", "export", "gnn_edge_divide (bounded, jax.export)"),
    ],
)
def test_xla_compiles_once_per_new_shape(cls, mode, first, label, counted):
    import jax

    backend = cls()
    program = started(backend, mode=mode)
    seen = set()
    for i, e in enumerate(SWEEP):
        arrays = CASE.make_inputs({"e": e}, seed=i)
        out, got = call(backend, program, arrays)
        assert isinstance(out, jax.Array)  # device buffers: the host copy is to_numpy's, untimed
        np.testing.assert_allclose(got, CASE.expected(arrays), rtol=1e-6)
        reasons = [r for r in program.compile_reasons() if r.startswith("xla:")]
        if e in seen:
            assert reasons == []
        else:
            assert len(reasons) == 1 and shapes_reason("xla", e, label).fullmatch(reasons[0]), reasons
        seen.add(e)
        assert program.compile_stats() == {first: 1, "xla": len(seen)}
    # the timed stages: the counted ones, and refinement inside an XLA compile (time only)
    assert {first, "xla"} <= set(program.compile_times()) <= {first, "xla", "xla_refine"}
    # the module text: signature parsed and hashed once; refined once per new shape
    assert counted == {"signature": 1, "digest": 1, "refine": len(seen)}


def test_bounded_compiles_once_for_every_size(counted):
    """stablehlo_xla bounded: one XLA compile (no refinement) serves every size
    up to the bound; NumPy in (padded by ``convert`` once the program exists:
    the first call exports, lowers and pads in the call), results on the device
    at the bound, sliced by ``to_numpy``."""
    from engines.stablehlo.execution.xla import PaddedArgs, PaddedResults

    backend = StablehloXla()
    program = started(backend)
    for i, e in enumerate(SWEEP + [2048, 2]):
        arrays = CASE.make_inputs({"e": e}, seed=i)
        converted = program.convert(arrays)
        if i == 0:
            assert all(isinstance(a, np.ndarray) for a in converted)
        else:
            assert [type(a) for a in converted] == [PaddedArgs] and converted[0].full == [(2048, 8), (2048,)]
        out, got = call(backend, program, arrays)
        assert isinstance(out, PaddedResults) and got.shape == (e, 8)
        np.testing.assert_allclose(got, CASE.expected(arrays), rtol=1e-6)
        reasons = [r for r in program.compile_reasons() if r.startswith("xla:")]
        if i == 0:
            assert len(reasons) == 1 and reasons[0].startswith("xla: bounded entry of gnn_edge_divide (bounded) ["), reasons
            assert "argument bounds (2048, 8), (2048,)" in reasons[0]
        else:
            assert reasons == []
        assert program.compile_stats() == {"lowering": 1, "xla": 1}
    assert counted == {"signature": 1, "digest": 1, "refine": 0}
    assert program.executor.how == "bounded"


def test_bound_checked_on_new_shape_names_input_and_dim():
    import jax

    backend = StablehloXla()
    program = started(backend)
    call(backend, program, CASE.make_inputs({"e": 10}, seed=0))
    with pytest.raises(ExecutionError, match=r"argument 0 \(d\) is a ArrayImpl; the program takes the NumPy arrays"):
        program(*[jax.numpy.asarray(a) for a in CASE.make_inputs({"e": 11}, seed=0)])  # not converted
    big = CASE.make_inputs({"e": 2049}, seed=0)
    with pytest.raises(BoundError, match=r"gnn_edge_divide: input 'd' dim 'e' \(axis 0\) is 2049, above its bound 2048"):
        program.convert(big)  # the backend names the case's dim before the program runs
    with pytest.raises(
        ExecutionError,
        match=r"gnn_edge_divide \(bounded\) \[\w+\]: argument 0 \(d\): "
        r"dim 0 is 2049, above its bound 2048",
    ):
        program(*big)  # and the program refuses it by itself
    assert program.compile_stats() == {"lowering": 1, "xla": 1}


@pytest.mark.parametrize("cls,index_dtype,compiles", [(StablehloXla, np.int64, 1), (JaxExport, np.int32, 2)])
def test_int64_inputs_keep_their_semantics(cls, index_dtype, compiles):
    """torch's module takes i64 (kept, no x64 mode per call); jax's export
    canonicalised int64 -> int32 and ``convert`` casts to it."""
    case = cases.get("gnn_message_passing")
    backend = cls()
    program = started(backend, case)
    for i, sizes in enumerate(case.sizes_for("quick")[:2]):
        arrays = case.make_inputs(sizes, seed=i)
        converted = program.convert(arrays)
        host = converted[0].host if len(converted) == 1 and hasattr(converted[0], "host") else converted
        assert [a.dtype for a in host] == [np.float32, index_dtype, index_dtype, np.float32]
        _, got = call(backend, program, arrays)
        np.testing.assert_allclose(got, case.expected(arrays), rtol=1e-4, atol=1e-4)
    assert program.compile_stats()["xla"] == compiles  # stablehlo_xla bounded: once for every size


def test_interpreter_worker_starts_in_startup_parses_once_per_shape(monkeypatch, counted):
    frames = []
    write = _interp_worker._write
    monkeypatch.setattr(_interp_worker, "_write", lambda f, msg: (frames.append(msg[0]), write(f, msg))[1])
    backend = StablehloInterp()
    try:
        program = started(backend)
        worker = backend.interpreter()
        assert worker.starts == 1 and worker.proc.poll() is None
        assert program.call_breakdown() is None
        seen = set()
        for i, e in enumerate(SWEEP):
            arrays = CASE.make_inputs({"e": e}, seed=i)
            _, got = call(backend, program, arrays)
            np.testing.assert_allclose(got, CASE.expected(arrays), rtol=1e-6)
            reasons = [r for r in program.compile_reasons() if r.startswith("parse:")]
            split = program.call_breakdown()
            assert set(split) == {"interp_eval_s", "interp_parse_s", "ipc_s"}
            if e in seen:
                assert reasons == [] and split["interp_parse_s"] == 0.0
            else:
                assert len(reasons) == 1 and shapes_reason("parse", e, "gnn_edge_divide (bounded)").fullmatch(reasons[0])
            seen.add(e)
            assert program.compile_stats() == {"lowering": 1, "parse": len(seen)}
        assert worker.starts == 1
        assert frames == ["register"] + ["run"] * len(SWEEP)  # the text goes to the worker once
        assert counted == {"signature": 1, "digest": 1, "refine": 0}
    finally:
        backend.close()
    assert worker.proc is None


def test_evaluator_keeps_one_parsed_module_per_shape():
    """eval_module specialises the module it runs: a parsed module per shape, reused."""
    text = """
module {
  func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<?xf32>
    return %0 : tensor<?xf32>
  }
}
"""
    ev = _interp_worker.Evaluator()
    ev.register("m", text)
    parsed = []
    for n in (3, 4, 3, 4, 5):
        (out,), info = ev.run("m", [np.arange(n, dtype=np.float32)])
        np.testing.assert_array_equal(out, 2 * np.arange(n, dtype=np.float32))
        parsed.append(info["parsed"])
    assert parsed == [True, True, False, False, True]
    assert len(ev.parsed) == 3
