"""The torch_xla peer backends, end to end (runs in the main environment).

Tests that need the second environment (.venv-xla, torch 2.9.1 + torch_xla
2.9.0; ``make xla-env``) skip with that reason when it is absent; those that
execute StableHLO need jax in the main environment. Each xla-env interpreter
start costs ~10-20 s (importing torch + torch_xla), so the lazy jobs share one
driver process and the StableHLO exports share one export worker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cases  # noqa: E402
from backends import envs  # noqa: E402


def _xla_python():
    try:
        return envs.python_for("xla")
    except envs.EnvError:
        return None


XLA_PY = _xla_python()
needs_xla = pytest.mark.skipif(
    XLA_PY is None,
    reason=".venv-xla (torch 2.9.1 + torch_xla 2.9.0) is absent: run `make xla-env` to create it",
)


def _has(mod):
    import importlib.util

    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


needs_jax = pytest.mark.skipif(not _has("jax"), reason="jax (StableHLO executors) not installed in this environment")


def reference(case, sizes, seed):
    """Inputs as the backends get them, and the NumPy float64 answer."""
    arrays = case.make_inputs(sizes, seed=seed)
    return arrays, case.expected(arrays)


def assert_matches(got, case, expected):
    tol = case.tol()
    assert got.dtype == np.dtype(case.out_dtype)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol.rtol, atol=tol.atol)


# ---------------------------------------------------------------- no .venv-xla needed
def test_modules_import_without_torch_xla():
    """``dynshape list`` imports backend modules in the main env: no torch/torch_xla/jax at import."""
    code = (
        "import sys; import backends.torch_xla_lazy, backends.torch_xla_export, "
        "backends.torch_xla_stablehlo; "
        "bad = [m for m in ('torch', 'torch_xla', 'jax') if m in sys.modules]; "
        "assert not bad, bad; print('ok')"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_available_names_the_missing_env(monkeypatch):
    from backends.torch_xla_lazy import TorchXlaLazy
    from backends.torch_xla_stablehlo import TorchXlaStableHLO

    monkeypatch.setenv("DYNSHAPE_XLA_PYTHON", str(ROOT / "no-such-venv" / "bin" / "python"))
    for cls in (TorchXlaLazy, TorchXlaStableHLO):
        ok, why = cls().available()
        assert not ok
        assert "make xla-env" in why


def test_backend_declarations():
    from backends.torch_xla_lazy import TorchXlaLazy
    from backends.torch_xla_stablehlo import TorchXlaStableHLO, TorchXlaStableHLOCanon, TorchXlaStableHLOCanonInterp

    assert (TorchXlaLazy.env, TorchXlaLazy.modes) == ("xla", ("static", "unbounded", "bucketed"))
    assert TorchXlaLazy.host_padded == ("bucketed",)  # static per bucket, padded on the host
    for cls in (TorchXlaStableHLO, TorchXlaStableHLOCanon, TorchXlaStableHLOCanonInterp):
        assert cls.env == "main" and cls.forms == ("torch",)
    assert TorchXlaStableHLO.modes == TorchXlaStableHLOCanonInterp.modes == ("unbounded", "bounded")
    assert TorchXlaStableHLOCanon.modes == ("unbounded", "bounded", "bucketed")
    assert [c.name for c in (TorchXlaStableHLO, TorchXlaStableHLOCanon, TorchXlaStableHLOCanonInterp)] == [
        "torch_xla_stablehlo",
        "torch_xla_stablehlo_canon",
        "torch_xla_stablehlo_interp",
    ]


@needs_jax
def test_stablehlo_failure_is_remembered(monkeypatch):
    """A failed export raises torch_xla's message on every call, exporting once."""
    from backends import torch_xla_stablehlo as sb

    calls = []

    def fake_run_export(case_name, mode, arrays, canonicalize=False, timeout=600.0, server=None):
        calls.append((case_name, mode, canonicalize))
        return {
            "ok": False,
            "stage": "to_stablehlo",
            "error": "AssertionError",
            "where": "torch_xla/experimental/unbounded_dynamism_export.py:276 in replace_dynamic_expand_with_xla_op",
        }

    monkeypatch.setattr(sb, "run_export", fake_run_export)
    case = cases.get("expand_over_batch")
    backend = sb.TorchXlaStableHLO()
    program = backend.prepare(case, "unbounded")
    for i, sizes in enumerate(case.sizes_for("quick")):
        with pytest.raises(sb.ExportFailed, match="replace_dynamic_expand_with_xla_op"):
            program(*program.convert(case.make_inputs(sizes, seed=i)))
    assert calls == [("expand_over_batch", "unbounded", False)]
    assert program.compile_stats() == {"export": 0, "xla": 0}


@needs_jax
@pytest.mark.parametrize("cls_name,stage", [("TorchXlaStableHLOCanon", "xla"), ("TorchXlaStableHLOCanonInterp", "parse")])
def test_stablehlo_permutes_arguments(monkeypatch, cls_name, stage):
    """@main's argument order is torch_xla's, not the program's: the adapter permutes;
    one executor compile (xla) or parse (interpreter) per novel shape."""
    from backends import torch_xla_stablehlo as sb

    cls = getattr(sb, cls_name)
    text = """
module @m {
  func.func @main(%arg0: tensor<?xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> {
    %0 = stablehlo.get_dimension_size %arg1, dim = 0 : (tensor<?x8xf32>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<1> : tensor<1xi32>
    %c8 = stablehlo.constant dense<8> : tensor<1xi32>
    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %3 = stablehlo.dynamic_reshape %arg0, %2 : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32>
    %4 = stablehlo.concatenate %1, %c8, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %5 = stablehlo.dynamic_broadcast_in_dim %3, %4, dims = [0, 1] : (tensor<?x1xf32>, tensor<2xi32>) -> tensor<?x8xf32>
    %6 = stablehlo.divide %arg1, %5 : tensor<?x8xf32>
    return %6 : tensor<?x8xf32>
  }
}
"""

    def fake_run_export(case_name, mode, arrays, canonicalize=False, timeout=600.0, server=None):
        return {
            "ok": True,
            "text": text,
            "arg_positions": [1, 0],
            "constants": [],
            "inputs": [
                {"shape": [5], "dtype": "float32", "dynamic_dims": [0]},
                {"shape": [5, 8], "dtype": "float32", "dynamic_dims": [0]},
            ],
            "unused_inputs": [],
            "notes": [],
        }

    monkeypatch.setattr(sb, "run_export", fake_run_export)
    case = cases.get("gnn_edge_divide")
    backend = cls()
    program = backend.prepare(case, "unbounded")
    try:
        for i, sizes in enumerate(case.sizes_for("quick")[:2] * 2):
            arrays, expected = reference(case, sizes, i % 2)
            out = program(*program.convert(arrays))
            program.sync(out)
            assert_matches(program.to_numpy(out), case, expected)
    finally:
        if hasattr(backend, "close"):
            backend.close()
    assert program.compile_stats() == {"export": 1, stage: 2}
    assert program.guards() == []


@needs_jax
def test_stablehlo_startup_without_xla_env(monkeypatch):
    """No .venv-xla: startup does not fail the job; every call names the missing env, nothing counts."""
    from backends import torch_xla_stablehlo as sb

    monkeypatch.setenv("DYNSHAPE_XLA_PYTHON", str(ROOT / "no-such-venv" / "bin" / "python"))
    backend = sb.TorchXlaStableHLOCanon()
    backend.startup()
    case = cases.get("gnn_edge_divide")
    program = backend.prepare(case, "unbounded")
    for i, sizes in enumerate(case.sizes_for("quick")[:2]):
        with pytest.raises(sb.ExportFailed, match="make xla-env"):
            program(*program.convert(case.make_inputs(sizes, seed=i)))
    assert program.compile_stats() == {"export": 0, "xla": 0}


def test_export_server_reports_a_failed_start(monkeypatch):
    """The server's handshake: an interpreter without torch_xla answers ready=false with the import error."""
    from backends.torch_xla_stablehlo import ExportFailed, ExportServer

    monkeypatch.setenv("DYNSHAPE_XLA_PYTHON", sys.executable)
    server = ExportServer()
    with pytest.raises(ExportFailed, match="could not start: ModuleNotFoundError: No module named 'torch_xla'"):
        server.start(timeout=300)
    assert server.starts == 1 and not server.running()


# ---------------------------------------------------------------- torch_xla_lazy (in .venv-xla)
LAZY_JOBS = [
    # (case, mode, first and end index into the full sweep, repeated indices).
    # The driver runs every job in one process, and torch_xla's graph cache is
    # process-wide: jobs of one case use disjoint shapes so each starts cold.
    ("gnn_edge_divide", "static", (0, 4), [0, 2]),
    ("gnn_rbf_subtract", "static", (3, 6), [1]),  # 0..2 are the measure job's (quick profile)
    ("gnn_message_passing", "static", (0, 3), [0]),
    ("expand_over_batch", "static", (0, 3), [0]),
    ("gnn_edge_divide", "unbounded", (10, 12), []),
    # a model: its weights reach the device through the torch form's on_device
    ("model_sage", "static", (0, 2), [0]),
]
STATIC_JOBS = [j for j, (_c, mode, *_) in enumerate(LAZY_JOBS) if mode == "static"]


@pytest.fixture(scope="module")
def lazy_proc():
    """Starts the lazy driver in .venv-xla; ``lazy_run`` collects it. Started
    before the export worker so the two interpreter starts overlap."""
    jobs = []
    for name, mode, (lo, hi), repeat in LAZY_JOBS:
        sizes = cases.get(name).sizes_for("full")[lo:hi]
        jobs.append({"case": name, "mode": mode, "sizes": sizes, "repeat": repeat})
    tmp = tempfile.TemporaryDirectory(prefix="dynshape-xla-test-")
    spec = {"jobs": jobs, "measure": {"case": "gnn_rbf_subtract", "mode": "static", "profile": "quick"}, "out": tmp.name}
    path = os.path.join(tmp.name, "spec.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    env = dict(os.environ)
    env.update(envs.env_vars("xla"))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    err = open(os.path.join(tmp.name, "stderr.txt"), "w+")
    proc = subprocess.Popen(
        [XLA_PY, str(Path(__file__).with_name("xla_driver.py")), path],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=err,
        stderr=err,
        text=True,
    )
    yield proc, tmp.name, err
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    err.close()
    tmp.cleanup()


@pytest.fixture(scope="module")
def lazy_run(lazy_proc, exported):
    proc, out, err = lazy_proc
    rc = proc.wait(timeout=600)
    err.seek(0)
    assert rc == 0, err.read()[-3000:]
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    with np.load(os.path.join(out, "outputs.npz")) as z:
        outputs = {k: z[k] for k in z.files}
    return result, outputs


def _lazy_job(lazy_run, j):
    result, outputs = lazy_run
    job = result["jobs"][j]
    assert "fatal" not in job, job.get("fatal")
    return job["steps"], outputs


@needs_xla
@pytest.mark.parametrize("j", STATIC_JOBS, ids=[f"{LAZY_JOBS[j][0]}-static" for j in STATIC_JOBS])
def test_lazy_static_one_compile_per_novel_shape(lazy_run, j):
    name, _mode, (lo, hi), repeat = LAZY_JOBS[j]
    n = hi - lo
    case = cases.get(name)
    steps, outputs = _lazy_job(lazy_run, j)
    assert len(steps) == n + len(repeat)
    for s, step in enumerate(steps):
        assert step["ok"], step.get("error")
        novel = s < n
        # exactly one UncachedCompile per novel shape, none for a repeated shape
        assert step["compile_stats"] == {"xla": min(s + 1, n)}, (s, step)
        assert step["cache_hits"] == (0 if novel else s - n + 1), (s, step)
        _arrays, expected = reference(case, step["sizes"], step["index"])
        assert_matches(outputs[f"j{j}_s{s}"], case, expected)
    assert steps[-1]["compile_time_s"] > 0


@needs_xla
def test_lazy_unbounded_is_rejected_by_xla_on_cpu(lazy_run):
    """Marking the dynamic axes (the LazyTensor unbounded knob) traces, but XLA CPU refuses to compile."""
    steps, _ = _lazy_job(lazy_run, 4)
    for step in steps:
        assert not step["ok"]
        assert re.search(r"Unbounded dynamism is disabled for instruction: %p\d+(\.\d+)? = f32\[\?,8\]", step["error"]), step[
            "error"
        ]
    # the failed attempts still count as UncachedCompile: one per call
    assert [s["compile_stats"]["xla"] for s in steps] == [1, 2]


@needs_xla
def test_lazy_through_harness_measure(lazy_run):
    result, _ = lazy_run
    records = result["measure"]
    assert isinstance(records, list), records
    novel = [r for r in records if r.get("novel")]
    cached = [r for r in records if r.get("novel") is False]
    n = len(cases.get("gnn_rbf_subtract").quick)
    assert [r["status"] for r in novel] == ["pass"] * n
    assert [r["compiles"] for r in novel] == list(range(1, n + 1))
    assert all(r["compiles"] == n and r["status"] == "pass" for r in cached)
    # the worker env imports neither jax nor pandas
    assert result["modules"] == {"jax": False, "pandas": False, "torch_xla": True}


# ---------------------------------------------------------------- torch_xla_stablehlo (export in .venv-xla)
EXPORTS = [
    # (case, mode, canonicalize)
    ("gnn_edge_divide", "unbounded", False),
    ("gnn_edge_divide", "unbounded", True),
    ("gnn_rbf_subtract", "unbounded", True),
    ("gnn_message_passing", "unbounded", True),
    ("expand_over_batch", "unbounded", False),
    ("expand_over_batch_bounded", "bounded", False),
]


@pytest.fixture(scope="module")
def exported(lazy_proc):
    from backends.torch_xla_stablehlo import run_exports

    jobs = []
    for name, mode, canon in EXPORTS:
        case = cases.get(name)
        jobs.append((name, mode, case.make_inputs(case.sizes_for("quick")[0], seed=0), canon))
    return {key: res for key, res in zip(EXPORTS, run_exports(jobs, timeout=600), strict=False)}


@needs_xla
def test_export_unsqueeze_negative_dim_bug(exported):
    """As-is, torch_xla 2.9.0 turns `c.unsqueeze(-1)` of a (?,) tensor into a (1, ?) view."""
    res = exported[("gnn_edge_divide", "unbounded", False)]
    assert not res["ok"] and res["stage"] == "to_stablehlo"
    assert res["error"].startswith("RuntimeError: Shapes are not compatible for broadcasting: f32[1000,8] vs. f32[1,1000].")


@needs_xla
@pytest.mark.parametrize("key", [("expand_over_batch", "unbounded", False), ("expand_over_batch_bounded", "bounded", False)])
def test_export_expand_of_size_arithmetic_asserts(exported, key):
    """`emb.expand(x.shape[0] * 2, -1, -1)`: torch_xla's FX pass asserts the size is a bare sym_size."""
    res = exported[key]
    assert not res["ok"] and res["stage"] == "to_stablehlo"
    assert res["error"] == "AssertionError"  # a bare assert: no message
    assert re.fullmatch(
        r"torch_xla/experimental/unbounded_dynamism_export\.py:\d+ in replace_dynamic_expand_with_xla_op: "
        r"assert sym_size_node\.op == \"call_function\" and sym_size_node\.target == aten\.sym_size\.int",
        res["where"],
    ), res["where"]


@needs_xla
def test_export_index_lowering_rejects_unbounded(exported):
    res = exported[("gnn_message_passing", "unbounded", True)]
    assert not res["ok"]
    assert "aten::stack" in res["error"]
    assert "reshape operation does not support unbounded dynamic output shape" in res["error"]


@needs_xla
@needs_jax
@pytest.mark.parametrize(
    "name,main_sig,positions",
    [
        ("gnn_edge_divide", "@main(%arg0: tensor<?xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32>", [1, 0]),
        ("gnn_rbf_subtract", "@main(%arg0: tensor<32xf32>, %arg1: tensor<?xf32>) -> tensor<?x32xf32>", [1, 0]),
    ],
)
@pytest.mark.parametrize("executor", ["xla", "interpreter"])
def test_export_canon_keeps_question_dims_and_runs(exported, name, main_sig, positions, executor):
    from engines import stablehlo

    res = exported[(name, "unbounded", True)]
    assert res["ok"], res.get("error")
    assert main_sig in res["text"]
    assert res["arg_positions"] == positions
    assert res["notes"] == ["unsqueeze: unsqueeze dim -1 -> 1"]
    case = cases.get(name)
    before = stablehlo.compile_count()
    sweep = case.sizes_for("quick")[:3]
    for i, sizes in enumerate(sweep):
        arrays, expected = reference(case, sizes, i)
        out = stablehlo.execute(res["text"], [arrays[p] for p in positions], executor=executor)
        assert len(out) == 1
        assert_matches(np.asarray(out[0]), case, expected)
    assert stablehlo.compile_count() - before == (len(sweep) if executor == "xla" else 0)


@needs_xla
@needs_jax
def test_stablehlo_backend_end_to_end():
    """The harness's path: startup starts the export server (imports torch_xla),
    the first call exports on it (no new start), then one XLA compile per novel
    shape and none for a repeated one."""
    from backends.torch_xla_stablehlo import TorchXlaStableHLOCanon

    case = cases.get("gnn_edge_divide")
    backend = TorchXlaStableHLOCanon()
    backend.startup()
    assert backend.server.starts == 1 and backend.server.running()
    program = backend.prepare(case, "unbounded")
    sweep = case.sizes_for("quick")[:3]
    try:
        for i, sizes in enumerate(sweep + sweep[:1]):
            arrays, expected = reference(case, sizes, i % len(sweep))
            out = program(*program.convert(arrays))
            program.sync(out)
            assert_matches(program.to_numpy(out), case, expected)
            assert program.compile_stats() == {"export": 1, "xla": min(i + 1, len(sweep))}
        assert backend.server.starts == 1
    finally:
        backend.close()
    assert not backend.server.running()
    assert program.guards() == ["unsqueeze: unsqueeze dim -1 -> 1"]
    assert {"export", "xla"} <= set(program.compile_times()) <= {"export", "xla", "xla_refine"} and program.compile_time_s() > 0


def test_the_zygotes_address_is_a_per_job_variable():
    """Only torch_xla_stablehlo's jobs get it: were it part of the main zygote's
    environment, those jobs would start a main zygote of their own."""
    from backends import torch_xla_stablehlo as T
    from backends.base import Backend
    from harness import forkserver

    assert T.SOCKET_ENV in forkserver.PER_JOB
    assert Backend.job_env(T.TorchXlaStableHLO(), {}) == {}


@needs_xla
@needs_jax
def test_export_servers_fork_from_the_runs_zygote(monkeypatch):
    """``job_env`` starts one export zygote per environment in the harness's
    process; each job's server is a fresh fork of it (a pid of its own) that
    answers as a server started on its own does, without importing torch_xla
    again; an address nobody answers on falls back to a server of its own."""
    from backends import torch_xla_export as X
    from backends import torch_xla_stablehlo as T

    env = {k: v for k, v in os.environ.items() if k != T.SOCKET_ENV}
    backend = T.TorchXlaStableHLOCanon()
    got = backend.job_env(env)
    assert set(got) == {T.SOCKET_ENV} and backend.job_env(env) == got
    zygote = X._ZYGOTES[tuple(sorted(env.items()))]
    case = cases.get("gnn_edge_divide")
    arrays = case.make_inputs(case.sizes_for("quick")[0], seed=0)
    monkeypatch.setenv(T.SOCKET_ENV, got[T.SOCKET_ENV])
    answers, pids = [], []
    for _ in range(2):
        server = T.ExportServer()
        server.start(timeout=300)
        try:
            assert isinstance(server.proc, X._Forked) and server.import_s < 1.0
            answers.append(server.export(case.name, "unbounded", arrays, canonicalize=True, timeout=300))
            pids.append(server.pid)
        finally:
            server.close()
    assert len(set(pids)) == 2 and zygote.proc.pid not in pids
    monkeypatch.setenv(T.SOCKET_ENV, "/nonexistent/export.sock")
    own = T.ExportServer()
    own.start(timeout=300)
    try:
        assert isinstance(own.proc, subprocess.Popen) and own.pid not in pids
        alone = own.export(case.name, "unbounded", arrays, canonicalize=True, timeout=300)
    finally:
        own.close()
    assert (
        answers[0]["ok"] and [(a["text"], a["arg_positions"]) for a in answers] == [(alone["text"], alone["arg_positions"])] * 2
    )
