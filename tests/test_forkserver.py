"""The fork server (harness/forkserver.py): forked workers are fresh processes
with the job's environment, give the records spawned ones give, and a zygote
that is not safe to fork from is refused with one warning."""

import json
import os
import sys
import types
import warnings

import pytest

import cases
from backends import envs
from harness import forkserver, runner, zygote_policy, zygote_warm

CASE = "gnn_edge_divide"
#: what must not depend on how the worker started
SAME = (
    "case",
    "backend",
    "mode",
    "shape_index",
    "sizes",
    "shapes",
    "novel",
    "status",
    "ok",
    "compiles",
    "compile_stages",
    "compile_delta",
    "compile_reasons",
    "message",
)

PROBE = """
import ctypes, json, os, sys
import torch
from torch._inductor.runtime.cache_dir_utils import cache_dir
pdeathsig = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(pdeathsig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
                  "cache_dir": cache_dir(), "var": os.environ.get("DYNSHAPE_PROBE"), "argv": sys.argv[1:],
                  "threads": len(os.listdir("/proc/self/task")), "pdeathsig": pdeathsig.value,
                  "torch_preloaded": "torch._C" in sys.modules, "cwd": os.getcwd()}))
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def _env(**extra):
    env = dict(
        os.environ,
        **envs.env_vars("main"),
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return {**env, **extra}


def test_child_is_a_fresh_session_with_the_jobs_environment(tmp_path):
    env = _env(TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), DYNSHAPE_PROBE="job 1")
    proc = forkserver.start(sys.executable, "main", ["-c", PROBE, "a", "b"], env, str(envs.ROOT))
    assert proc is not None, "the main environment's fork server did not start"
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 3
    got = json.loads(out)
    assert got["ppid"] == proc.info["pid"] and got["pid"] == proc.pid  # forked by the zygote
    assert got["sid"] == got["pgid"] == proc.pid  # its own session: the runner kills its group
    assert got["cache_dir"] == str(tmp_path / "inductor")  # the job's, not the zygote's
    assert got["var"] == "job 1" and got["argv"] == ["a", "b"] and got["cwd"] == str(envs.ROOT)
    assert got["threads"] == 1 and got["pdeathsig"] == 9 and got["torch_preloaded"]
    assert err.strip() == "to stderr"
    # the next job's per-job variables replace the first's, in a child of the same zygote
    again = {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "job2"), "PYTEST_CURRENT_TEST": "another test"}
    proc = forkserver.start(sys.executable, "main", ["-c", PROBE], again, str(envs.ROOT))
    got2 = json.loads(proc.stdout.read())
    assert got2["cache_dir"] == str(tmp_path / "job2") and got2["ppid"] == got["ppid"]
    proc.stderr.read()
    assert proc.wait(timeout=60) == 3
    # any other variable may be read at import: another zygote (one without warm-up steps will do)
    proc = forkserver.start(sys.executable, "main", ["-c", PROBE], {**env, "DYNSHAPE_PROBE": "job 3"}, str(envs.ROOT), ())
    got3 = json.loads(proc.stdout.read())
    assert got3["var"] == "job 3" and got3["ppid"] != got["ppid"]
    proc.stderr.read()
    assert proc.wait(timeout=60) == 3


def _run(backend, tmp_path, fork, mode="unbounded", preload=None):
    combo = runner.Combo(cases.get(CASE), backend, mode)
    got = []
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=1, progress=False, fork_server=fork, zygote_preload=preload)
    r.run_one(combo, got.append)
    return got


@pytest.mark.parametrize("backend, mode", [("einx_symbolic", "unbounded"), ("lazy", "static")])
def test_forked_and_spawned_workers_give_the_same_records(backend, mode, tmp_path):
    from harness import registry

    b = registry.get(backend)
    forked, spawned = _run(b, tmp_path, True, mode), _run(b, tmp_path, False, mode)
    assert [r["machine"]["worker_start"]["how"] for r in forked + spawned] == ["fork"] * len(forked) + ["spawn"] * len(spawned)
    assert [{k: r[k] for k in SAME} for r in forked] == [{k: r[k] for k in SAME} for r in spawned]
    assert sum(r["compiles"] or 0 for r in forked) > 0 and all(r["status"] == "pass" for r in forked)


def test_the_switch_spawns_every_worker(monkeypatch):
    monkeypatch.setenv(forkserver.ENV_SWITCH, "0")
    assert runner.Runner("unused", progress=False).fork_server is False
    monkeypatch.setenv(forkserver.ENV_SWITCH, "1")
    assert runner.Runner("unused", progress=False).fork_server is True
    assert runner.Runner("unused", progress=False, fork_server=False).fork_server is False


def test_a_traced_run_or_another_environment_spawns():
    assert forkserver.usable("main", {})
    assert not forkserver.usable("main", {"TORCH_TRACE": "/tmp/t"})  # read by import torch
    assert forkserver.usable("xla", {})
    assert not forkserver.usable("an-env-without-a-preload", {})


@pytest.mark.parametrize(
    "module, step, why",
    [
        ("dynshape_thread_at_import", None, "2 threads after importing dynshape_thread_at_import"),
        ("dynshape_cache_dir_at_import", None, "importing dynshape_cache_dir_at_import set TORCHINDUCTOR_CACHE_DIR"),
        ("numpy", "dynshape_freezes_cache_dir", "dynshape_freezes_cache_dir.FROZEN still hold the zygote's scratch directory"),
    ],
)
def test_an_unsafe_zygote_is_refused_with_one_warning(module, step, why, fake_backends, monkeypatch, tmp_path):
    monkeypatch.setitem(forkserver.PRELOAD, "main", (module,))
    monkeypatch.setattr(zygote_policy, "declared", lambda env: ((), (step,) if step else ()))
    monkeypatch.setattr(forkserver, "_ZYGOTES", {})
    monkeypatch.setattr(forkserver, "_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the run's zygote runs the step (a job run alone would preload only its backend's: none)
        preload = {"main": {step}} if step else None
        first = _run(fake_backends("CompilesTwiceFirst"), tmp_path, True, preload=preload)
        second = _run(fake_backends("CompilesTwiceFirst"), tmp_path, True, preload=preload)
    forkserver.close_all()
    mine = [w for w in caught if issubclass(w.category, forkserver.ForkServerWarning)]
    assert len(mine) == 1 and why in str(mine[0].message), [str(w.message) for w in mine]
    assert {r["machine"]["worker_start"]["how"] for r in first + second} == {"spawn"}
    assert [r["status"] for r in first] == ["pass"] * len(first)
    assert [{k: r[k] for k in SAME} for r in first] == [{k: r[k] for k in SAME} for r in second]


INDUCTOR_PROBE = """
import json, os, sys
preloaded = "torch._inductor.compile_fx" in sys.modules
import torch
from torch._dynamo.package import DynamoCache
from torch._inductor import cpu_vec_isa
probed = cpu_vec_isa.valid_vec_isa_list.cache_info().currsize == 1  # the zygote's result, inherited
f = torch.compile(lambda x: x * 2 + 1)
assert torch.equal(f(torch.arange(4.0)), torch.arange(4.0) * 2 + 1)
root = os.environ["TORCHINDUCTOR_CACHE_DIR"]
built = sorted(n for _, _, names in os.walk(root) for n in names if n.endswith(".so"))
print(json.dumps({"preloaded": preloaded, "probed": probed, "built": built, "isa": str(cpu_vec_isa.pick_vec_isa()),
                  "dynamo_cache": DynamoCache.path_prefix(), "unique_graphs":
                  int(torch._dynamo.utils.counters["stats"]["unique_graphs"])}))
"""


def test_the_zygote_preloads_inductor_and_each_job_compiles_into_its_own_cache_dir(tmp_path):
    """The zygote imported dynamo and inductor and probed the vector ISAs under a
    scratch directory; a forked job compiles with the probe's result, into the
    cache directory its environment names, and counts its own graphs."""
    for job in ("job1", "job2"):
        env = _env(TORCHINDUCTOR_CACHE_DIR=str(tmp_path / job))
        proc = forkserver.start(sys.executable, "main", ["-c", INDUCTOR_PROBE], env, str(envs.ROOT))
        assert proc is not None, "the main environment's fork server did not start"
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.wait(timeout=300) == 0, err[-2000:]
        got = json.loads(out)
        assert "backends.torch_compile:warm_inductor" in proc.info["steps"]
        assert got["preloaded"] and got["probed"] and got["isa"]
        assert got["built"], f"no kernel built under {tmp_path / job}"  # the job's directory, not the zygote's
        assert got["dynamo_cache"] == str(tmp_path / job / "dynamo") and got["unique_graphs"] == 1


@pytest.mark.parametrize("switch", ["kept", "off"])
def test_the_warm_up_keeps_its_scratch_directory_for_the_next_zygote(switch, tmp_path, monkeypatch):
    """Inductor caches the vector-ISA probe's builds in the scratch directory:
    kept (the default, or ``DYNSHAPE_ZYGOTE_CACHE``), the next zygote's probe
    finds them; ``off`` gives each warm-up a directory of its own, removed."""
    chosen = tmp_path / "zygote-cache"
    monkeypatch.setenv(zygote_warm.CACHE_SWITCH, str(chosen) if switch == "kept" else "off")
    step = "dynshape_scratch_probe:touch"
    mod = types.ModuleType("dynshape_scratch_probe")

    def touch():
        os.makedirs(os.environ["TORCHINDUCTOR_CACHE_DIR"], exist_ok=True)
        open(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "built"), "w").close()

    mod.touch = touch
    monkeypatch.setitem(sys.modules, "dynshape_scratch_probe", mod)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    first = zygote_warm.run([step], ["TORCHINDUCTOR_CACHE_DIR"])
    second = zygote_warm.run([step], ["TORCHINDUCTOR_CACHE_DIR"])
    assert first["steps"] == second["steps"] == [step] and "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    if switch == "kept":
        assert first["scratch"] == second["scratch"] == str(chosen)
        assert (chosen / "torchinductor_cache_dir" / "built").exists()
    else:
        assert first["scratch"] != second["scratch"] and not os.path.exists(first["scratch"])


class _StubIsa:
    """inductor's VecISA as the probe memo sees it: ``_probe_load`` loads a build
    (here: says whether its text is ``ok``) and counts the processes it would start."""

    started: list = []

    def _probe_load(self, output_path):
        _StubIsa.started.append(output_path)
        with open(output_path) as f:
            return f.read() == "ok"


@pytest.mark.parametrize("switch", ["kept", "off"])
def test_the_warm_up_remembers_a_build_that_loaded_while_it_is_unchanged(switch, tmp_path, monkeypatch):
    """inductor's probe starts an interpreter to ``dlopen`` each build (~0.2 s, ten a
    warm-up). In the kept scratch directory a build that loaded is not probed again
    until it changes; one that failed is probed every time; with ``off`` (a fresh
    directory) nothing is remembered; outside the warm-up the method is inductor's own."""
    monkeypatch.setenv(zygote_warm.CACHE_SWITCH, str(tmp_path / "zygote-cache") if switch == "kept" else "off")
    monkeypatch.setattr(zygote_warm, "_vec_isa_class", lambda: _StubIsa)
    monkeypatch.setattr(_StubIsa, "started", [])
    good, bad = tmp_path / "good.so", tmp_path / "bad.so"
    good.write_text("ok")
    bad.write_text("no")
    answers = []
    mod = types.ModuleType("dynshape_probe_twice")
    mod.probe = lambda: answers.append([_StubIsa()._probe_load(str(p)) for p in (good, bad, good, bad)])
    monkeypatch.setitem(sys.modules, "dynshape_probe_twice", mod)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    zygote_warm.run(["dynshape_probe_twice:probe"], ["TORCHINDUCTOR_CACHE_DIR"])
    zygote_warm.run(["dynshape_probe_twice:probe"], ["TORCHINDUCTOR_CACHE_DIR"])
    assert answers == [[True, False, True, False]] * 2
    assert _StubIsa.started.count(str(bad)) == 4
    assert _StubIsa.started.count(str(good)) == (1 if switch == "kept" else 4)
    if switch == "kept":
        os.utime(good, ns=(0, 0))  # rebuilt: probed again
        zygote_warm.run(["dynshape_probe_twice:probe"], ["TORCHINDUCTOR_CACHE_DIR"])
        assert _StubIsa.started.count(str(good)) == 2
    assert _StubIsa._probe_load.__qualname__ == "_StubIsa._probe_load"  # inductor's own again


def test_the_default_scratch_directory_is_one_per_interpreter(monkeypatch, tmp_path):
    monkeypatch.delenv(zygote_warm.CACHE_SWITCH, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path, kept = zygote_warm.scratch_dir()
    assert kept and path.startswith(str(tmp_path / "dynshape" / "zygote"))
    monkeypatch.setattr(sys, "prefix", "/another/venv")
    assert zygote_warm.scratch_dir()[0] != path


def test_holders_finds_a_path_kept_by_a_module_or_its_objects(monkeypatch):
    import types

    mod = types.ModuleType("dynshape_holder_probe")
    mod.PATH = "/tmp/scratch-xyz/inductor"
    mod.store = types.SimpleNamespace(prefix="/tmp/scratch-xyz/dynamo", other=3)
    mod.unrelated = "/tmp/elsewhere"
    monkeypatch.setitem(sys.modules, "dynshape_holder_probe", mod)
    assert sorted(h for h in zygote_warm.holders("/tmp/scratch-xyz") if h.startswith("dynshape_")) == [
        "dynshape_holder_probe.PATH",
        "dynshape_holder_probe.store.prefix",
    ]


@pytest.mark.parametrize(
    "env_name, var, part",
    [
        ("main", "TF_CPP_MIN_LOG_LEVEL", "1"),  # set by import jax
        ("xla", "XLA_FLAGS", "--xla_cpu_enable_fast_math=false"),  # appended by import torch_xla
    ],
)
def test_a_forked_job_sees_what_the_imports_set_in_the_environment(env_name, var, part, tmp_path):
    """As a spawned worker would after its own imports: the zygote's imports
    changed the environment, the child applies that over its job's."""
    try:
        python = envs.python_for(env_name)
    except envs.EnvError as e:
        pytest.skip(str(e))
    env = {k: v for k, v in _env(TORCHINDUCTOR_CACHE_DIR=str(tmp_path)).items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    env.update(envs.env_vars(env_name))
    code = f"import os; print(os.environ.get({var!r})); print(os.environ.get('DYNSHAPE_PROBE'))"
    # a zygote that imports what sets the variable (jax in main), and no warm-up step
    wanted = {"jax"} if env_name == "main" else ()
    proc = forkserver.start(python, env_name, ["-c", code], {**env, "DYNSHAPE_PROBE": "kept"}, str(envs.ROOT), wanted)
    assert proc is not None, f"the {env_name} environment's fork server did not start"
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err[-2000:]
    value, probe = out.splitlines()
    assert part in value.split() and probe == "kept"
    assert proc.info["set_by_imports"][var] == value


def test_ctrl_c_while_zygotes_finish_kills_them_without_a_traceback(monkeypatch):
    """At exit, ``close_all`` waits for each zygote; a Ctrl-C there ends the rest at once (``close(wait=0)``:
    killed and reaped) instead of an 'Exception ignored in atexit callback' traceback."""
    calls = []

    class Zygote:
        def __init__(self, n):
            self.n = n

        def close(self, wait=10.0):
            calls.append((self.n, wait))
            if self.n == 0 and wait:
                raise KeyboardInterrupt

    monkeypatch.setattr(forkserver, "_ZYGOTES", {"a": Zygote(0), "b": Zygote(1)})
    forkserver.close_all()
    assert calls == [(0, 10.0), (0, 0), (1, 0)] and forkserver._ZYGOTES == {}


def test_close_ends_the_zygote_without_waiting_out_its_timeout(monkeypatch):
    """``close`` must reach the zygote although the reader thread is blocked in
    ``recv``: the zygote exits by itself (code 0) rather than being killed at the
    end of ``wait`` (each run waited 10 s at exit while it was not)."""
    monkeypatch.setattr(zygote_policy, "PRELOAD", {"main": ("json",)})
    monkeypatch.setattr(zygote_policy, "declared", lambda env: ((), ()))
    base = {k: v for k, v in _env().items() if k not in forkserver.PER_JOB}
    z = forkserver.Zygote(sys.executable, "main", base, str(envs.ROOT))
    assert not z.dead, z.dead
    proc = z.start(["-c", "pass"], _env())  # the reader thread has answered: it is back in recv
    proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    z.close(wait=30)
    assert z.proc.returncode == 0  # -9: it never saw the parent close and was killed


@pytest.mark.parametrize("env_name", ["main", "xla"])
def test_the_zygote_preloads_every_family_of_the_catalogue(env_name):
    """Every job looks its case up in the catalogue, which imports every family
    module: preloaded, a forked job finds them imported (a family added to
    ``cases.FAMILIES`` and not here would be imported by every job again)."""
    assert {f"cases.{f}" for f in cases.FAMILIES} <= set(forkserver.PRELOAD[env_name])
