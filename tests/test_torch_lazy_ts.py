"""torch_lazy_ts (``torch._lazy`` on its TorchScript backend): counts, cache
hits and reasons, driven as the harness worker drives a backend.

torch._lazy reads ``LTC_ENABLE_DYNAMIC_SHAPES`` once per process, so the
static job runs in this process and the unbounded (symbolic-shape) jobs in a
fresh one."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cases
from backends.base import Counter

ROOT = Path(__file__).resolve().parents[1]


def _job(backend, case, mode, sizes):
    """``(count deltas, cache-hit deltas, reasons)`` per call, every output checked, and the program."""
    backend.startup()
    program = backend.prepare(case, mode)
    deltas, hits, reasons = [], [], []
    before, hits_before = 0, 0
    for i, s in enumerate(sizes):
        inputs = case.make_inputs(s, seed=i)
        out = program(*program.convert(inputs))
        program.sync(out)
        np.testing.assert_allclose(program.to_numpy(out), case.expected(inputs), rtol=1e-4, atol=1e-5)
        n, h = sum(program.compile_stats().values()), program.cache_hits()
        deltas.append(n - before)
        hits.append(h - hits_before)
        reasons.append(program.compile_reasons())
        before, hits_before = n, h
    return deltas, hits, reasons, program


def test_static_compiles_per_shape_and_refuses_a_symbolic_job_in_the_same_process():
    from backends import torch_lazy_ts as T

    b = T.TorchLazyTs()
    assert b.counters == {"ts": Counter("system", b.counters["ts"].event)}
    deltas, hits, reasons, program = _job(b, cases.get("gnn_edge_divide"), "static", [{"e": e} for e in (31, 32, 31)])
    assert deltas == [1, 1, 0] and hits == [0, 0, 1]
    assert reasons == [
        ["ts: no cached graph for input shapes ((31, 8), (31,)) (UncachedCompile +1)"],
        ["ts: no cached graph for input shapes ((32, 8), (32,)) (UncachedCompile +1)"],
        [],
    ]
    assert program.transfer_compiles() == 0
    with pytest.raises(RuntimeError, match=r"unbounded mode needs a fresh process.*LTC_ENABLE_DYNAMIC_SHAPES"):
        b.prepare(cases.get("gnn_edge_divide"), "unbounded")


_UNBOUNDED = """
import json, sys
sys.path.insert(0, {root!r})
import cases
from backends.torch_lazy_ts import TorchLazyTs
from tests.test_torch_lazy_ts import _job
out = {{}}
for name, sizes in [("gnn_edge_divide", [{{"e": 41}}, {{"e": 42}}, {{"e": 43}}]),
                    ("expand_over_batch", [{{"b": 2}}, {{"b": 3}}, {{"b": 2}}])]:
    deltas, hits, _, _ = _job(TorchLazyTs(), cases.get(name), "unbounded", sizes)
    out[name] = [deltas, hits]
print(json.dumps(out))
"""


def test_symbolic_shape_mode_compiles_the_divide_once_but_expand_per_shape():
    """The finding pinned in cases/expectations.toml: x.shape[0] * 2 collapses to an int."""
    proc = subprocess.run(
        [sys.executable, "-c", _UNBOUNDED.format(root=str(ROOT))], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["gnn_edge_divide"] == [[1, 0, 0], [0, 1, 1]]
    assert got["expand_over_batch"] == [[1, 1, 0], [0, 0, 1]]


def test_a_model_case_runs_with_its_weights_moved_to_the_lazy_device():
    """A model's weights are the program's, not its inputs': prepare moves them
    (``on_device``), as a user moves the model, and settles the move apart from the
    program's compiles. Left on the CPU, the first op fails ('Input tensor is not a
    lazy tensor'), as it did before."""
    from backends import torch_lazy_ts as T

    b = T.TorchLazyTs()
    b.startup()
    case = cases.get("model_resnet18")
    program = b.prepare(case, "static")
    for i, sizes in enumerate([{"b": 2}, {"b": 2}]):
        inputs = case.make_inputs(sizes, seed=i)
        out = program(*program.convert(inputs))
        program.sync(out)
        tol = case.tol()
        np.testing.assert_allclose(program.to_numpy(out), case.expected(inputs), rtol=tol.rtol, atol=tol.atol)
        assert sum(program.compile_stats().values()) == 1  # the program's one graph; the move is not in it
    with pytest.raises(RuntimeError, match="Input tensor is not a lazy tensor"):
        cpu_weights = case.torch_fn()
        cpu_weights(*program.convert(case.make_inputs({"b": 2}, seed=0)))
