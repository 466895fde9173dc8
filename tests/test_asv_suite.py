"""The asv suite is discovered by asv and measures what the harness measures."""

import ast
import inspect
import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH_ROOT = ROOT / "benchmarks"  # asv.conf.json's benchmark_dir
from benchmarks import bench_einx_symbolic, suite  # noqa: E402


def test_asv_discovers_the_suite_without_problems():
    asv = Path(sys.executable).parent / "asv"
    out = subprocess.run([str(asv), "check", "--python=same"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout


def test_grid_is_the_catalogue_times_backends_times_modes():
    import cases

    cases_, backends, modes = suite.Compiles.params
    # every case but the model zoo's (its own profile follows it)
    assert cases_ == [c.name for c in cases.catalogue() if not c.name.startswith("zoo_")]
    assert len(cases_) < len(cases.catalogue()) and "einx" in backends and "torch_xla_lazy" in backends
    assert modes == ["static", "bounded", "unbounded", "bucketed"]
    # the timed benchmarks: the timed cases in the modes where systems differ (asv starts a
    # process per combination and round, skipped or not)
    assert suite.Catalogue.params == suite.CachedCall.params == (suite.TIMED_CASES, backends, ["bounded", "unbounded"])
    assert suite.TIMED_CASES == ["gnn_edge_divide", "expand_over_batch", "batch_linear", "seq_softmax"]


def test_track_compiles_counts_exactly_and_runs_each_job_once(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # asv runs setup_cache in its cache directory
    c = suite.Compiles()
    cache = c.setup_cache()
    c.setup(cache, "gnn_edge_divide", "einx", "static")
    assert c.track_compiles(cache, "gnn_edge_divide", "einx", "static") == 3  # the quick sweep's 3 novel shapes
    assert c.track_compile_time(cache, "gnn_edge_divide", "einx", "static") > 0
    c.setup(cache, "gnn_edge_divide", "torch_eager", "unbounded")
    assert c.track_compiles(cache, "gnn_edge_divide", "torch_eager", "unbounded") == 0
    # the second benchmark of a combination (another process, same cache) reads the first's records
    monkeypatch.setattr(suite, "_worker_records", lambda combo: pytest.fail(f"{combo.id} ran twice"))
    again = suite.Compiles()
    again.setup(cache, "gnn_edge_divide", "einx", "static")
    assert again.track_compiles(cache, "gnn_edge_divide", "einx", "static") == 3


def test_timed_benchmarks_run_the_timed_selection_only(monkeypatch):
    monkeypatch.setattr(suite, "TIMED", "gnn_rbf_*")
    with pytest.raises(
        NotImplementedError,
        match=r"timed benchmarks run for gnn_rbf_\* \(DYNSHAPE_ASV_TIMED.*"
        r"gnn_edge_divide's compiles are tracked by suite.Compiles",
    ):
        suite.Catalogue().setup("gnn_edge_divide", "torch_eager", "static")
    monkeypatch.setattr(suite, "TIMED", "gnn_*")
    suite.Catalogue().setup("gnn_rbf_subtract", "torch_eager", "static")


def test_the_suite_module_preimports_the_frameworks_single_threaded():
    """asv's forkserver forks samples from the process that imported the suite:
    it must hold the frameworks already, and no thread (fork copies only the forking one)."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; "
            "import benchmarks.suite; print(len(os.listdir('/proc/self/task')), "
            "all(m in sys.modules for m in ('torch', 'jax')))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.stdout.split() == ["1", "True"], out.stdout + out.stderr
    assert json.loads((ROOT / "asv.conf.json").read_text())["launch_method"] == "forkserver"


def test_impossible_combinations_are_skipped_by_setup(monkeypatch):
    with pytest.raises(NotImplementedError, match="einx offers no unbounded mode"):
        suite.Catalogue().setup("gnn_edge_divide", "einx", "unbounded")
    monkeypatch.setattr(suite, "TIMED", "gnn_*")
    with pytest.raises(NotImplementedError, match="no einx form"):
        suite.CachedCall().setup("gnn_message_passing", "einx", "static")


def test_the_timed_benchmarks_leave_out_torch_compiles_bounded_row_with_the_quick_profiles_reason():
    for bench in (suite.Catalogue(), suite.CachedCall()):
        with pytest.raises(
            NotImplementedError,
            match=r"left out of the timed benchmarks \(the unbounded row's "
            r"dynamo graph, with a range on the dim\); its compiles are "
            r"tracked by suite.Compiles",
        ):
            bench.setup("gnn_edge_divide", "torch_compile", "bounded")


def test_novel_shape_benchmarks_take_one_sample_per_process():
    """The first loop of a process is the one a user meets: no warm-up, no second sample."""
    for cls in (suite.Catalogue, bench_einx_symbolic.NovelSizes):
        assert (cls.number, cls.repeat, cls.warmup_time) == (1, 1, 0), cls.__name__


def test_novel_sizes_setup_makes_every_sample_novel():
    """Even with several samples in one process (setup before each, as asv runs
    them), einx_symbolic builds its one graph and einx its 50 in every sample."""
    from backends import einx as einx_backend

    b = bench_einx_symbolic.NovelSizes()
    b.setup()
    einx_backend._install_counter()
    for _ in range(2):
        b.setup()
        assert b.track_builds_einx_symbolic() == 1
        n0 = einx_backend.graph_builds()
        b.time_novel_sizes_einx()
        assert einx_backend.graph_builds() - n0 == 50


# --- the timed functions time only the work ----------------------------------
#
# asv runs ``setup`` untimed, then times the benchmark function.  Anything the
# benchmark function imports lands in the figure (an ``import`` inside a timed
# function once made einx_symbolic's 50-size loop read 840 ms instead of ~1 ms).

# A small representative parameter set per benchmark module (the full grids are
# large); a module not listed here is checked on its first combination.
REPRESENTATIVE = {
    "suite": [("gnn_edge_divide", b, "unbounded") for b in ("torch_eager", "einx_symbolic", "lazy")],
    # the track_* functions read a record file the same way for every backend: one probe each
    # (setup_cache runs a worker job: ~27 s)
    "suite.Compiles": [("gnn_edge_divide", "lazy", "unbounded")],
    "bench_lazy": [("gnn_edge_divide", p) for p in ("eager", "lazy", "trace")],
    "bench_lazy_catalogue": [("gnn_edge_divide",)],
}


def _discover():
    from asv_runner.discovery import disc_benchmarks

    return sorted(disc_benchmarks(str(BENCH_ROOT)), key=lambda b: b.name)


BENCHMARKS = _discover()


def _wanted(bench, default):
    """The representative parameter sets for ``bench``: by ``module.Class``, else by module."""
    parts = bench.name.split(".")
    return REPRESENTATIVE.get(".".join(parts[:2]), REPRESENTATIVE.get(parts[0], default))


def _combos(bench):
    """``(param_index, params)`` pairs to check for one benchmark."""
    if not bench._params:
        return [(None, ())]
    grid = list(itertools.product(*bench._params))
    wanted = _wanted(bench, grid[:1])
    return [(grid.index(tuple(p)), tuple(p)) for p in wanted if tuple(p) in grid]


# One interpreter per benchmark module, as asv's forkserver launch method runs
# it (asv.conf.json): the module is imported once, then ``setup_cache`` runs in a
# forked child (its result pickled back, so its imports never reach a benchmark),
# and each (benchmark, params) runs in a child forked from the untouched parent:
# setup, then a snapshot of sys.modules, then the benchmark function once, then
# the diff. One interpreter start and one framework import per module instead of
# one per probe (~25 s each on the 2-core machine).
_PROBE = textwrap.dedent("""
    import json, os, pickle, sys
    from asv_runner.discovery import get_benchmark_from_name
    root, todo = sys.argv[1], json.loads(sys.argv[2])
    benches = [(get_benchmark_from_name(root, name if idx is None else f"{name}-{idx}"), params)
               for name, idx, params in todo]

    def forked(fn):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                out = pickle.dumps((True, fn()))
            except BaseException as e:
                out = pickle.dumps((False, f"{type(e).__name__}: {e}"))
            with os.fdopen(w, "wb") as f:
                f.write(out)
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        if not data:
            return False, f"the child died (wait status {status})"
        return pickle.loads(data)

    caches, results = {}, []
    for (name, idx, params), (bench, _) in zip(todo, benches):
        key = bench.setup_cache_key
        if key is not None and key not in caches:
            caches[key] = forked(bench.do_setup_cache)

        def probe(bench=bench, key=key):
            cache = None
            if key is not None:
                ok, cache = caches[key]
                if not ok:
                    raise RuntimeError(f"setup_cache failed: {cache}")
                bench.set_cache(cache)
            if bench.do_setup():
                return {"skipped": True}
            before = set(sys.modules)
            bench.func(*([] if cache is None else [cache]), *params)
            return {"skipped": False, "new": sorted(set(sys.modules) - before)}

        ok, got = forked(probe)
        results.append({"name": name, "params": params, **(got if ok else {"error": got})})
    print(json.dumps(results))
""")


#: per benchmark module, the environment its probe runs under: the zoo benchmark's
#: default sample is ~60 zoo jobs, so the probe measures one small architecture
PROBE_ENV = {"bench_zoo": lambda cwd: {"DYNSHAPE_ASV_ZOO": "zoo_pyg_gcnconv_node", "DYNSHAPE_ASV_ZOO_OUT": str(cwd / "zoo")}}


def _probe_module(todo, cwd, module=None):
    """Run ``todo`` (``[name, idx, params]`` each) as asv would, in ``cwd``
    (asv's cache directory: setup_cache writes there)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.update(PROBE_ENV[module](cwd) if module in PROBE_ENV else {})
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(BENCH_ROOT), json.dumps(todo)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"probe of {todo[0][0]} ... failed\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


MODULES = sorted({b.name.split(".")[0] for b in BENCHMARKS})


@pytest.mark.parametrize("module", MODULES)
def test_benchmark_functions_import_nothing_their_setup_did_not(module, tmp_path):
    todo = [[b.name, i, list(p)] for b in BENCHMARKS if b.name.split(".")[0] == module for i, p in _combos(b)]
    results = _probe_module(todo, tmp_path, module)
    assert [r["name"] for r in results] == [t[0] for t in todo]
    errors = [f"{r['name']}{r['params']}: {r['error']}" for r in results if "error" in r]
    assert not errors, "probes failed:\n" + "\n".join(errors)
    skipped = [f"{r['name']}{r['params']}" for r in results if r["skipped"]]
    assert not skipped, f"the representative parameters are skipped by setup; pick runnable ones: {skipped}"
    imported = [f"{r['name']}{r['params']}: {', '.join(r['new'])}" for r in results if r["new"]]
    assert not imported, "imported modules while timed (move the import/warm-up into setup):\n" + "\n".join(imported)


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda b: b.name)
def test_benchmark_function_has_no_import_statement(bench):
    """Even of a module already loaded: an import statement costs a lookup per call (~0.1 us against ~2 us calls)."""
    fn = inspect.unwrap(bench.func)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    found = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert found == [], f"{bench.name} imports inside the benchmark function: {found}"


def test_discovery_finds_every_module_and_kind():
    """Guards the two tests above against checking nothing."""
    mods = {b.name.split(".")[0] for b in BENCHMARKS}
    assert mods == {p.stem for p in BENCH_ROOT.glob("*.py") if p.stem != "__init__"}
    kinds = {b.name.split(".")[-1].split("_")[0] for b in BENCHMARKS}
    assert kinds == {"time", "track"}
    for b in BENCHMARKS:
        wanted = _wanted(b, [None]) if b._params else [()]
        assert len(_combos(b)) == len(wanted), (b.name, "a representative parameter set is not in the grid")


def _default_samples(cls) -> int:
    """The fewest samples asv takes of a benchmark class with its settings:
    ``rounds`` processes × ``repeat`` samples each (a tuple: its minimum)."""
    repeat = cls.repeat[0] if isinstance(cls.repeat, tuple) else cls.repeat
    return cls.rounds * max(1, repeat)


@pytest.mark.parametrize("cls", [suite.Catalogue, suite.CachedCall], ids=lambda c: c.__name__)
def test_asvs_own_statistic_flags_a_2x_slowdown_at_the_default_samples_and_not_a_null_change(cls):
    """asv's ``asv compare`` decides with ``asv._stats.is_different``: at the
    samples this suite takes by default, a clean 2× slowdown is significant and
    two draws of one distribution are not (at six a side it cannot fire: its
    two-sided p is at least 2/924 = 0.00216 > 0.002)."""
    import random

    asv_stats = pytest.importorskip("asv._stats")
    statistics = pytest.importorskip("asv_runner.statistics")
    n = _default_samples(cls)
    rng = random.Random(23)
    a = [1e-3 * (1 + 0.2 * rng.random()) for _ in range(n)]
    null = [1e-3 * (1 + 0.2 * rng.random()) for _ in range(n)]

    def different(x, y):
        return asv_stats.is_different(x, y, statistics.compute_stats(x, 1)[1], statistics.compute_stats(y, 1)[1])

    assert different(a, [2 * v for v in a]), f"{cls.__name__}: a 2x slowdown is not flagged at {n} samples"
    assert not different(a, null)
    from harness import stats

    assert stats.testable(n, n) and stats.is_different(a, [2 * v for v in a]) is True
    assert stats.is_different(a, null) is False


def test_the_default_samples_are_the_fewest_that_can_fire():
    """More rounds cost a fresh process each: the novel sweep takes exactly as many as the test needs."""
    from harness import stats

    n = _default_samples(suite.Catalogue)
    assert n == stats.MIN_SAMPLES == 7 and not stats.testable(n - 1, n - 1)


def test_known_failures_and_other_environments_are_skipped_with_their_reason():
    with pytest.raises(NotImplementedError, match=r"known failure \(rule #\d+ .*\): XLA's HLO verifier"):
        suite.Compiles().setup("/nonexistent", "gnn_edge_divide", "torch_xla_lazy", "unbounded")
    with pytest.raises(
        NotImplementedError,
        match="runs in the 'xla' environment, not asv's: its compiles and compile time are tracked through a worker",
    ):
        suite.Catalogue().setup("gnn_edge_divide", "torch_xla_lazy", "static")


def test_compiles_of_another_environment_come_from_a_worker():
    """The worker path (used for torch_xla's environment) on a main-env job: the
    same counts as in-process."""
    from harness import runner

    combo = runner.plan("gnn_edge_divide", "einx", "static")[0]
    novel = suite._novel(suite._worker_records(combo))
    assert [r["shape_index"] for r in novel] == [0, 1, 2] and novel[-1]["compiles"] == 3
    assert novel[-1]["compile_time_s"] > 0
    assert suite.Compiles.track_compile_time.unit == "seconds"


def test_asv_b_regex_selects_parameter_combinations():
    from asv.benchmarks import Benchmarks

    class Conf:
        benchmark_dir = str(BENCH_ROOT)

    found = [{"name": b.name, "params": [[repr(v) for v in axis] for axis in b._params]} for b in BENCHMARKS]
    sel = Benchmarks(Conf, found, regex=r"track_compiles\('gnn_edge_divide', 'einx', 'static'\)")
    grid = list(itertools.product(*suite.Compiles.params))
    assert list(sel) == ["suite.Compiles.track_compiles"]
    assert sel.benchmark_selection["suite.Compiles.track_compiles"] == [grid.index(("gnn_edge_divide", "einx", "static"))]


# --- compile tracking: one run of the selected jobs, read by every track_* -----


def test_the_asv_command_line_gives_the_selection():
    from harness.asv_select import regexes_from_argv

    asv = ["/v/bin/python3", "/v/bin/asv"]
    assert regexes_from_argv([*asv, "run", "--python=same", "-b", "a", "--bench=b", "-bc", "--bench", "d"]) == [
        "a",
        "b",
        "c",
        "d",
    ]
    assert regexes_from_argv([*asv, "run", "--quick"]) == []  # no -b: everything
    assert regexes_from_argv(["python", "-m", "asv", "continuous", "-b", "x", "A", "B"]) == ["x"]
    assert regexes_from_argv([*asv, "publish"]) is None  # runs nothing
    assert regexes_from_argv(["/v/bin/python", "-m", "asv_runner", "run", "-b", "x"]) is None  # not asv itself
    assert regexes_from_argv(["pytest", "-b", "x"]) is None


def test_the_selection_is_read_from_the_asv_process_above(tmp_path):
    """A real process tree: an executable named ``asv`` starts a child, which finds its -b regexes."""
    fake = tmp_path / "asv"
    fake.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\n"
        "sys.exit(subprocess.run([sys.executable, '-c', 'from harness import asv_select; "
        "print(asv_select.running_regexes())']).returncode)\n"
    )
    fake.chmod(0o755)
    out = subprocess.run(
        [str(fake), "run", "-b", "Compiles.*'einx'", "--bench=x"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "[\"Compiles.*'einx'\", 'x']", out.stdout + out.stderr
    from harness import asv_select

    assert asv_select.running_regexes() is None  # pytest has no asv above it


@pytest.mark.parametrize(
    "regex",
    [
        r"Compiles\.\w+\('gnn_edge_divide'",
        r"track_compile_time\(.*'einx', 'static'",
        r"'jax_jit'",
        "Catalogue",
        r"(Catalogue|Compiles)\.\w+\(.gnn_edge_divide.",
    ],
)
def test_the_selection_is_asvs(regex):
    """asv's own selection (asv.benchmarks.Benchmarks) and the one setup_cache runs ahead agree."""
    from asv.benchmarks import Benchmarks

    from harness import asv_select

    class Conf:
        benchmark_dir = str(BENCH_ROOT)

    found = [{"name": b.name, "params": [[repr(v) for v in axis] for axis in b._params]} for b in BENCHMARKS]
    sel = Benchmarks(Conf, found, regex=[regex]).benchmark_selection
    grid = list(itertools.product(*suite.Compiles.params))
    theirs = {grid[i] for n in suite._COMPILES_NAMES for i in (sel.get(n) or [])}
    ours = {p for p in grid if asv_select.selects([regex], suite._COMPILES_NAMES, p)}
    assert ours == theirs


def test_setup_cache_runs_the_selected_jobs_once_and_track_reads_them(monkeypatch, tmp_path):
    from harness import asv_select, runner

    monkeypatch.chdir(tmp_path)  # asv runs setup_cache in its cache directory
    ran = []
    real_run = runner.Runner.run

    def run(self, combos, jobs=1):
        ran.append(([c.id for c in combos], jobs))
        return real_run(self, combos, jobs)

    monkeypatch.setattr(runner.Runner, "run", run)
    monkeypatch.setattr(asv_select, "running_regexes", lambda: [r"track_compiles\('gnn_edge_divide', 'einx'"])
    c = suite.Compiles()
    cache = c.setup_cache()
    # einx's runnable rows of the case only: it has no bounded or unbounded mode
    assert cache.startswith(str(tmp_path))
    assert ran == [(["gnn_edge_divide[einx-static]", "gnn_edge_divide[einx-bucketed]"], suite.JOBS)]
    monkeypatch.setattr(suite, "_worker_records", lambda combo: pytest.fail(f"{combo.id} ran again"))
    for mode, n in (("static", 3), ("bucketed", 1)):
        for bench in (suite.Compiles(), suite.Compiles()):  # the two benchmarks' processes
            bench.setup(cache, "gnn_edge_divide", "einx", mode)
            assert bench.track_compiles(cache, "gnn_edge_divide", "einx", mode) == n, mode
            assert bench.track_compile_time(cache, "gnn_edge_divide", "einx", mode) > 0
    with pytest.raises(NotImplementedError, match="einx offers no unbounded mode"):
        suite.Compiles().setup(cache, "gnn_edge_divide", "einx", "unbounded")


def test_a_failed_job_fails_both_benchmarks_with_its_message(tmp_path, monkeypatch):
    from harness import runner

    combo = runner.plan("gnn_edge_divide", "einx", "static")[0]
    monkeypatch.setattr(suite, "_worker_records", lambda combo: [{"status": "crashed", "message": "worker died (SIGSEGV)"}])
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"gnn_edge_divide\[einx-static\] failed in its worker: worker died"):
            suite.Compiles().setup(str(tmp_path), "gnn_edge_divide", "einx", "static")
    assert combo.id == "gnn_edge_divide[einx-static]"


def test_a_timed_sample_starts_with_empty_compile_caches_and_leaves_none():
    import os

    os.makedirs(os.path.join(suite.INDUCTOR_DIR, "stale"), exist_ok=True)
    b = suite.Catalogue()
    b.setup("gnn_edge_divide", "torch_eager", "unbounded")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == suite.INDUCTOR_DIR and os.listdir(suite.INDUCTOR_DIR) == []
    b.teardown("gnn_edge_divide", "torch_eager", "unbounded")
    assert not os.path.exists(suite.INDUCTOR_DIR)
    assert suite.CachedCall.teardown is suite.Catalogue.teardown
