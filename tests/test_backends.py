"""The built-in backends' compile counters, reasons and mode handling, in
process, driven the way the harness worker drives them: ``prepare`` makes the
job's program, then per call the move of its ``compile_stats`` and the drained
``compile_reasons``."""

import numpy as np
import pytest

import cases
from backends.base import SOURCES, Counter
from backends.einx import Einx
from backends.einx_symbolic import EinxSymbolic
from backends.jax_jit import JaxJit
from backends.lazy import Lazy
from backends.torch_compile import TorchCompile
from backends.torch_eager import TorchEager
from backends.torch_export import OutOfRange, TorchExport

GNN = "gnn_edge_divide"


def _job(backend, case, mode, sizes):
    """One job as the worker runs it: ``(program, per-call count deltas, per-call reasons)``."""
    program = backend.prepare(case, mode)
    assert program.compile_stats() == {stage: 0 for stage in backend.counters}
    assert program.compile_reasons() == []
    before = sum(program.compile_stats().values())
    deltas, reasons = [], []
    for i, s in enumerate(sizes):
        inputs = case.make_inputs(s, seed=i)
        out = program(*program.convert(inputs))
        program.sync(out)
        np.testing.assert_allclose(program.to_numpy(out), case.expected(inputs), rtol=1e-4, atol=1e-5)
        after = sum(program.compile_stats().values())
        deltas.append(after - before)
        reasons.append(program.compile_reasons())
        before = after
    # one reason per compile, on the call that compiled
    assert [len(r) for r in reasons] == deltas, reasons
    if sum(deltas):
        assert set(program.compile_times()) >= set(backend.counters)
    return program, deltas, reasons


def _e(*sizes):
    return [{"e": e} for e in sizes]


def _shapes(e):
    return f"(({e}, 8), ({e},))"


def test_every_backend_declares_its_counters():
    for cls in (TorchEager, Einx, EinxSymbolic, JaxJit, Lazy, TorchCompile, TorchExport):
        for stage, counter in cls.counters.items():
            assert isinstance(counter, Counter) and counter.source in SOURCES and counter.event, (cls.name, stage)
    assert TorchEager.counters == {}
    assert {
        c.name: {s: c.counters[s].source for s in c.counters}
        for c in (Einx, EinxSymbolic, JaxJit, Lazy, TorchCompile, TorchExport)
    } == {
        "einx": {"einx_graph": "instrumented"},
        "einx_symbolic": {"einx_symbolic_graph": "ours"},
        "jax_jit": {"xla": "system"},
        "lazy": {"lazy_fx": "ours"},
        "torch_compile": {"dynamo_graph": "system"},
        "torch_export": {"export": "instrumented"},
    }
    assert "static" in EinxSymbolic.mode_notes


def test_torch_eager_never_compiles():
    _, deltas, reasons = _job(TorchEager(), cases.get(GNN), "static", _e(5, 6))
    assert deltas == [0, 0] and reasons == [[], []]


def test_einx_counts_one_graph_build_per_new_shape():
    case = cases.get(GNN)
    # sizes no other test uses: einx's graph cache is process-wide
    _program, deltas, reasons = _job(Einx(), case, "static", _e(1777, 1778, 1777))
    assert deltas == [1, 1, 0]
    assert reasons == [[f"einx_graph: new input shapes {_shapes(1777)}"], [f"einx_graph: new input shapes {_shapes(1778)}"], []]
    # a second job in this process starts at 0; einx's own cache still holds 1777
    _, deltas, reasons = _job(Einx(), case, "static", _e(1777, 1779))
    assert deltas == [0, 1] and reasons == [[], [f"einx_graph: new input shapes {_shapes(1779)}"]]


def test_einx_symbolic_static_emulates_per_shape_builds_unbounded_builds_once():
    from engines import einx_symbolic as ex

    case = cases.get(GNN)
    _, deltas, reasons = _job(EinxSymbolic(), case, "static", _e(20, 21, 20))
    assert deltas == [1, 1, 0]
    assert reasons == [
        [f"einx_symbolic_graph: new input shapes {_shapes(20)}"],
        [f"einx_symbolic_graph: new input shapes {_shapes(21)}"],
        [],
    ]
    ex.clear_cache()  # the signature may be cached by another test in this process
    _, deltas, reasons = _job(EinxSymbolic(), case, "unbounded", _e(20, 21, 22))
    assert deltas == [1, 0, 0]
    assert reasons[0] == [
        "einx_symbolic_graph: new signature divide('e d, e -> e d') on torch, ranks (2, 1), dtypes (torch.float32, torch.float32)"
    ] and reasons[1:] == [[], []]
    # a second job: starts at 0, and the graph is einx_symbolic's (process-wide) already
    _, deltas, _ = _job(EinxSymbolic(), case, "unbounded", _e(23))
    assert deltas == [0]


def test_torch_compile_inductor_static_one_graph_per_shape_with_dynamo_reasons():
    import torch._dynamo

    torch._dynamo.reset()
    b = TorchCompile()
    assert b.compiler == "inductor"
    # inductor builds C++ per graph: 2 graphs in all
    _, deltas, reasons = _job(b, cases.get(GNN), "static", _e(7, 9, 7))
    assert deltas == [1, 1, 0]
    assert reasons[0] == ["dynamo_graph: first call: no compiled code for edge_divide (gnn.py:14) yet"]
    (second,) = reasons[1]
    assert second.startswith("dynamo_graph: recompile of edge_divide") and "size mismatch" in second
    assert "expected 7, actual 9" in second
    assert reasons[2] == []


def test_torch_compile_counts_dynamo_graphs_per_mode():
    import torch._dynamo

    case = cases.get(GNN)
    torch._dynamo.reset()
    b = TorchCompile(compiler="eager")
    _, deltas, reasons = _job(b, case, "static", _e(5, 6, 7))
    assert deltas == [1, 1, 1]
    assert "first call" in reasons[0][0] and "expected 5, actual 6" in reasons[1][0]
    assert "actual 7" in reasons[2][0]
    torch._dynamo.reset()
    _, deltas, reasons = _job(b, case, "unbounded", _e(5, 6, 7))
    assert deltas == [1, 0, 0] and reasons[0][0].startswith("dynamo_graph: first call") and reasons[1:] == [[], []]
    # a second job in the same process (same dynamo cache) starts at 0
    _, deltas, reasons = _job(TorchCompile(compiler="eager"), case, "unbounded", _e(8))
    assert deltas == [0] and reasons == [[]]


def test_torch_compile_graph_breaks_are_named_on_the_compile():
    import types

    import torch
    import torch._dynamo

    def f(d, c):
        y = d / c.unsqueeze(-1)
        torch._dynamo.graph_break()
        return y * 2

    torch._dynamo.reset()
    b = TorchCompile(compiler="eager")
    program = b.prepare(types.SimpleNamespace(torch_fn=lambda: f), "static")
    for e, want in ((5, 2), (5, 0)):
        program(torch.ones(e, 3), torch.ones(e))
        assert program.compile_stats() == {"dynamo_graph": want}
        reasons = program.compile_reasons()
        assert len(reasons) == want
        if want:
            assert "1 graph break" in reasons[0] and "graph_break()" in reasons[0]
            assert "resume_in_f" in reasons[1] and "graph break" not in reasons[1]
        program.reset_counters()


def test_torch_export_static_one_export_per_shape():
    _, deltas, reasons = _job(TorchExport(), cases.get(GNN), "static", _e(5, 6, 5))
    assert deltas == [1, 1, 0]
    assert reasons == [[f"export: new input shapes {_shapes(5)}"], [f"export: new input shapes {_shapes(6)}"], []]


def test_torch_export_bounded_rejects_an_input_beyond_the_bound_clearly():
    case = cases.get("expand_over_batch_bounded")
    b = TorchExport()
    program, deltas, reasons = _job(b, case, "bounded", [{"b": 2}, {"b": 64}])
    assert deltas == [1, 0]
    assert reasons == [["export: first call: one export with dynamic dims b in [2, 64]"], []]
    x = np.zeros((65, 3, 224, 224), np.float32)
    emb = np.zeros((1, 1, 768), np.float32)
    with pytest.raises(OutOfRange, match=r"input 'x' dim 'b' \(axis 0\) is 65, outside the exported range \[2, 64\]"):
        program(*program.convert([x, emb]))
    assert program.compile_stats() == {"export": 1} and program.compile_reasons() == []


def test_torch_export_module_function_counts_nothing():
    import torch

    from backends import torch_export

    program = TorchExport().prepare(cases.get(GNN), "static")
    torch_export.export(lambda x: x * 2, [torch.ones(3)], None, "t")  # as backends.stablehlo_base calls it
    assert program.compile_stats() == {"export": 0}


def test_jax_jit_bounded_pads_to_one_executable_and_slices_back():
    case = cases.get("expand_over_batch_bounded")
    b = JaxJit()
    program, deltas, reasons = _job(b, case, "bounded", [{"b": 2}, {"b": 5}, {"b": 64}])
    assert deltas == [1, 0, 0]
    assert reasons[0][0].startswith("xla: tracing cache miss") and reasons[1:] == [[], []]
    x = np.zeros((65, 3, 224, 224), np.float32)
    with pytest.raises(ValueError, match="dim 'b' = 65 exceeds its bound 64"):
        program(*program.convert([x, np.zeros((1, 1, 768), np.float32)]))


def test_jax_jit_bounded_is_unsupported_where_padding_is_not_neutral():
    """seq_cat pads t1 between x1's and x2's rows: padding to the bound would
    return the wrong rows, so the mode is unsupported with the case's reason."""
    case = cases.get("seq_cat")
    why = JaxJit().unsupported_reason(case, "bounded")
    assert why is not None and why.endswith(case.bucket_unsupported) and "cannot be padded neutrally" in why
    assert JaxJit().unsupported_reason(case, "static") is None
    assert JaxJit().unsupported_reason(cases.get("seq_pad_multiple"), "bounded") is None


def test_jax_jit_static_compiles_per_shape_and_says_which_shape_changed():
    case = cases.get(GNN)
    # sizes no other test uses: jax's tracing and compile caches are process-wide
    _, deltas, reasons = _job(JaxJit(), case, "static", _e(1213, 1214, 1213, 1215))
    assert deltas == [1, 1, 0, 1]
    assert reasons[0][0].startswith("xla: tracing cache miss: ") and "edge_divide" in reasons[0][0]
    assert "different input types" in reasons[1][0]
    assert "at d, now f32[1214,8]" in reasons[1][0] and "at c, now f32[1214]" in reasons[1][0]
    assert reasons[2] == [] and "now f32[1215,8]" in reasons[3][0]
    # a second job in this process starts at 0 (case.jax_fn() is a new function: jax has never seen it)
    _, deltas, reasons = _job(JaxJit(), case, "static", _e(1213))
    assert deltas == [1] and "never seen function edge_divide" in reasons[0][0]


def test_lazy_static_per_shape_unbounded_once_with_the_new_key_part():
    case = cases.get(GNN)
    _, deltas, reasons = _job(Lazy(), case, "static", _e(5, 6, 5))
    assert deltas == [1, 1, 0]
    assert reasons == [
        ["lazy_fx: first call: empty graph cache"],
        ["lazy_fx: new input shapes 0: float32[6, 8], 1: float32[6] (cached: float32[5, 8], float32[5])"],
        [],
    ]
    _, deltas, reasons = _job(Lazy(), case, "unbounded", _e(5, 6, 5))
    assert deltas == [1, 0, 0] and reasons == [["lazy_fx: first call: empty graph cache"], [], []]


def test_jax_compile_of_a_jax_internal_computation_has_a_reason_too():
    import jax.numpy as jnp

    b = JaxJit()
    b.startup()
    program = b.prepare(cases.get(GNN), "static")  # counting from here; its own call never made
    jnp.ones(7771) * 3.5  # eager ops: jax compiles its own computations, explaining no miss
    n = program.compile_stats()["xla"]
    assert n >= 1
    assert (
        program.compile_reasons()
        == ["xla: no tracing cache miss explained by jax before this compile (a jax-internal computation)"] * n
    )
    jnp.ones(7771) * 3.5  # cached
    assert program.compile_stats()["xla"] == n and program.compile_reasons() == []


def test_our_lowering_exports_a_slice_to_half_size_obliviously_where_torch_export_refuses():
    """x[:, : t // 2] with t from 2: torch.export guards t // 2 != 1 and refuses
    the Dim (the torch_export peer reports it); our StableHLO path retries
    size-obliviously and serves every t, t // 2 = 1 included, from one lowering."""
    from backends.base import Unsupported
    from backends.stablehlo_xla import StablehloXla

    case = cases.get("seq_slice_half")
    with pytest.raises(Unsupported, match=r"could not keep seq_slice_half's dims dynamic: Constraints violated"):
        _job(TorchExport(), case, "unbounded", [{"t": 5}])
    _, deltas, _ = _job(StablehloXla(), case, "unbounded", [{"t": 5}, {"t": 2}, {"t": 3}, {"t": 40}])
    assert deltas == [2, 1, 1, 1]  # one lowering, then XLA per concrete shape


def test_a_failure_inside_torch_export_is_named_as_torch_exports():
    """A crash in torch.export's own reasoning (googlenet's floor-division guard, say)
    counts as a capture failure in the zoo table, not as a run-time error of ours."""
    import torch

    from backends import torch_export
    from backends.base import failed_stage
    from harness.zoo_table import stage_of

    def fn(x):
        if x.shape[0] > 2:  # raised while torch.export traces fn: it stands in for torch's own crash
            raise NotImplementedError("The inequality, -x/8 + 2*((x/2)//8) - 2 < 0, cannot be solved")
        return x

    with pytest.raises(torch_export.ExportError, match=r"^torch\.export failed on t: NotImplementedError: The ine") as e:
        torch_export.export(fn, [torch.ones(3)], None, "t")
    assert stage_of("error", failed_stage(e.value)) == "export"  # recorded as export's, whatever stage it was in
