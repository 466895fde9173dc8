"""The catalogue as an asv suite: case × backend × mode.

- ``track_compiles``: exact compiles over the quick sweep (unit "compiles");
  ``track_compile_time`` the compile seconds the backend counted over it.
  Every combination of the catalogue, each job run once per commit as
  ``harness run --quick --jobs 2`` runs it: ``Compiles.setup_cache`` runs the
  jobs asv selected through the harness's runner, two at a time, each in a
  fresh worker of its backend's environment (forked from the harness's fork
  server; torch_xla's spawned in its own environment) with cold on-disk
  compile caches, and both benchmarks read each job's records from it.
- ``time_novel_sweep``: the quick sweep's shapes, each new to the process,
  compiles included (one sample per process: ``repeat = number = 1``, no
  warm-up; seven rounds give seven fresh processes, the fewest with which a
  two-sided rank test at asv's p < 0.002 can call a change significant:
  :data:`harness.stats.MIN_SAMPLES`). As in ``harness run``, the backend's ``startup``
  (framework imports) and ``prepare`` run in setup, the calls (first-call
  compiles included) are timed.
- ``time_cached_call``: one call on a shape compiled during setup. The
  compiled program is built once per process and reused by every sample
  (asv re-runs ``setup`` before each one).

The timed benchmarks' grid is the cases :data:`TIMED` selects (globs; default
one headline case per family, ``DYNSHAPE_ASV_TIMED='*'`` for all) in the modes
:data:`TIMED_MODES` selects (default bounded, unbounded): seven fresh processes
per combination is what makes a commit of ``asv run`` cost what it does, and
the compile counts and compile seconds of every combination are tracked
regardless.

The benchmark functions time only the work (tests/test_asv_suite.py checks
that they import nothing ``setup`` did not). asv.conf.json asks for asv's
``forkserver`` launch: this module imports the frameworks once (under the
harness's one-thread policy, so the server has one thread when it forks),
plans the jobs and reads the expectations once, and no sample pays for them.

Combinations that cannot run (no such form or mode, backend unavailable, in
another environment for the timed benchmarks) or that ``cases/expectations.toml``
marks as known failures (``xfail``) raise ``NotImplementedError`` in setup,
with the reason; asv reports them as skipped (``n/a``). ``asv run -b REGEX``
selects parameter combinations too: the regex is matched against
``suite.Compiles.track_compiles('gnn_edge_divide', 'einx', 'static')``, and
``setup_cache`` runs only the jobs it selects (:mod:`harness.asv_select`).

Under asv.conf.json's release matrix (the ``dynshape`` environment type,
:mod:`harness.asv_env`) each job of a torch or jax backend runs in a worker of
the entry's release (:data:`RELEASES`); the timed benchmarks of a release in
another interpreter than asv's skip.
"""

import atexit
import fnmatch
import importlib
import itertools
import json
import os
import shutil
import tempfile

from harness import threads

# the harness's thread policy (one thread for torch, BLAS and XLA), set before
# any framework is imported (``cases`` imports numpy, whose BLAS starts its
# threads at import); DYNSHAPE_ASV_THREADS=0 keeps the frameworks' defaults
for _k, _v in threads.env_for(int(os.environ.get("DYNSHAPE_ASV_THREADS", "1"))).items():
    os.environ.setdefault(_k, _v)

import cases  # noqa: E402
from backends import envs  # noqa: E402
from cases import MODES  # noqa: E402
from harness import asv_select, stats  # noqa: E402
from harness.profiles import ZOO_PREFIX  # noqa: E402

#: the on-disk compile caches (inductor's, dynamo's) of every timed sample: named
#: by the process that imports this module (asv's fork server), emptied by each
#: sample's setup, so that every sample starts cold, and removed by its teardown
#: (asv may end its server with a signal: nothing is left behind). Set before
#: torch._dynamo is imported: it resolves its cache directory at import.
INDUCTOR_DIR = os.path.join(tempfile.gettempdir(), f"dynshape-asv-inductor-{os.getpid()}")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = INDUCTOR_DIR
atexit.register(lambda pid=os.getpid(): os.getpid() == pid and shutil.rmtree(INDUCTOR_DIR, ignore_errors=True))  # noqa: B008 (the importing process's pid: a forked sample must not remove the cache)

#: what the main environment's backends import in ``startup`` (~2.5 s of CPU for
#: dynamo and inductor alone), imported once by asv's fork server
PREIMPORT = (
    "numpy",
    "torch",
    "jax",
    "jax.numpy",
    "torch._dynamo",
    "torch.export",
    "torch.export._trace",
    "torch._inductor.compile_fx",
    "einx",
)


def _preimport() -> None:
    """Import the main environment's frameworks once, here: asv's forkserver
    imports this module before forking each sample, so no sample pays for them
    (a backend's ``startup`` then finds them loaded). Import only: no device,
    no thread pool, no compile (the samples' in-memory caches start empty)."""
    for name in PREIMPORT:
        try:
            importlib.import_module(name)
        except ImportError:  # an environment without it: its backends say so
            pass


def _cold_caches() -> None:
    """Empty :data:`INDUCTOR_DIR` (a sample's setup: asv runs one at a time)."""
    shutil.rmtree(INDUCTOR_DIR, ignore_errors=True)
    os.makedirs(INDUCTOR_DIR, exist_ok=True)


_preimport()

#: every case but the generated model zoo's: its ~440 architectures are hours of
#: compiles a commit (and a 30,000-combination grid asv enumerates per process);
#: ``harness run --profile zoo`` and ``harness history --rows`` follow the zoo instead
CASES = [c.name for c in cases.catalogue() if not c.name.startswith(ZOO_PREFIX)]

#: the cases the timed benchmarks run (comma-separated globs)
TIMED = os.environ.get("DYNSHAPE_ASV_TIMED", "gnn_edge_divide,expand_over_batch,seq_softmax,batch_linear")


def _timed(case_name) -> bool:
    return any(fnmatch.fnmatchcase(case_name, g.strip()) for g in TIMED.split(",") if g.strip())


#: the timed benchmarks' grid: asv starts a process per combination and round,
#: skipped or not, so the cases they do not time are not in it
TIMED_CASES = [c for c in CASES if _timed(c)]
#: the modes the timed benchmarks run (``DYNSHAPE_ASV_TIMED_MODES``, comma-separated
#: globs): by default those where systems differ; a static or bucketed sweep is
#: its compiles, whose seconds ``track_compile_time`` records for every combination
_MODE_GLOBS = os.environ.get("DYNSHAPE_ASV_TIMED_MODES", "bounded,unbounded").split(",")
TIMED_MODES = [m for m in MODES if any(fnmatch.fnmatchcase(m, g.strip()) for g in _MODE_GLOBS)]


def _backend_names():
    from harness import registry

    only = os.environ.get("DYNSHAPE_ASV_BACKENDS")
    backends = registry.backends()
    # an opt-in backend (Backend.opt_in: torch_aoti's C++ builds) only where DYNSHAPE_ASV_BACKENDS names it
    return [n for n, b in backends.items() if ((n in only.split(",")) if only else not getattr(b, "opt_in", ""))]


BACKENDS = _backend_names()


def _planned() -> dict:
    """``(case, backend, mode)`` → the runner's job (``runner.plan``, as ``harness
    run`` plans it; the grid's backends named, opt-in ones included)."""
    global _PLANNED
    if _PLANNED is None:
        from harness import runner

        _PLANNED = {(c.case.name, c.backend.name, c.mode): c for c in runner.plan(backend_globs=",".join(BACKENDS))}
    return _PLANNED


def _rules() -> list:
    global _RULES
    if _RULES is None:
        from harness import expectations

        _RULES = expectations.load()
    return _RULES


_PLANNED = _RULES = None


#: the releases this asv environment runs (``{system: [release environment]}``):
#: an entry of asv.conf.json's ``matrix`` as the ``dynshape`` environment type
#: (:mod:`harness.asv_env`) passes it, in ``harness run --versions``'s spelling
#: (``torch=2.9.1 jax=0.10.2``); empty elsewhere (``--python=same``): the main
#: environment's releases, as before
VERSIONS_VARIABLE = "DYNSHAPE_ASV_VERSIONS"
RELEASES = envs.parse_versions(os.environ.get(VERSIONS_VARIABLE, "").split())


def _released(combo):
    """``combo`` in this environment's release of its backend's system
    (:data:`RELEASES`, as ``harness run --versions`` runs it), else as it is."""
    if not RELEASES:
        return combo
    from harness import releases

    (out,) = releases.with_versions([combo], RELEASES)
    return out


def _combo(case_name, backend_name, mode):
    """The runner's job for these parameters, in this environment's release
    (:func:`_released`), or NotImplementedError (asv: skipped) with the reason:
    the runner's planning (``runner.plan`` / ``Combo.skip_reason``, as in
    ``harness run``), or a known failure that ``cases/expectations.toml``
    explains (its ``xfail``)."""
    from harness import expectations

    combo = _planned().get((case_name, backend_name, mode))
    if combo is None:
        raise NotImplementedError(f"case {case_name} has no {mode} mode")
    combo = _released(combo)
    skip = combo.skip_reason()
    if skip:
        raise NotImplementedError(skip[1])
    rule = expectations.lookup(_rules(), case_name, backend_name, mode)
    if rule is not None and rule.xfail:
        raise NotImplementedError(f"known failure ({rule.describe()}): {rule.xfail}")
    return combo


def _warm_server() -> None:
    """What every sample's ``setup`` asks first, computed once in the process
    that imports the suite (asv's fork server): the plan, the expectations,
    and whether each backend is available (torch_xla's asks its environment's
    interpreter, ~1 s: once here, not in each of its ~500 samples)."""
    _rules()
    for backend in {c.backend.name: c.backend for c in _planned().values()}.values():
        backend.available()


_warm_server()


def _timed_leaves_out(backend_name, mode):
    """Why the timed benchmarks leave this row out, or ``None``: the quick
    profile's rules that name one backend in one mode (torch_compile's bounded
    row, the unbounded row's dynamo graph with a range on the dim: ~12 s of CPU
    a process, seven processes a commit)."""
    from harness import registry

    for rule in registry.get(backend_name).quick_leaves_out:  # a backend's own rules, not the common ones
        if rule.case == "*" and rule.mode == mode:
            return f"left out of the timed benchmarks ({rule.why}); its compiles are tracked by suite.Compiles"
    return None


def _prepare(case_name, backend_name, mode):
    """``(backend, program, [native inputs per shape], case)`` of a job that
    runs in this process, or NotImplementedError (see :func:`_combo`, and the
    timed selection :data:`TIMED`)."""
    if not _timed(case_name):
        raise NotImplementedError(
            f"timed benchmarks run for {TIMED} (DYNSHAPE_ASV_TIMED, comma-separated globs); "
            f"{case_name}'s compiles are tracked by suite.Compiles"
        )
    why = _timed_leaves_out(backend_name, mode)
    if why:
        raise NotImplementedError(why)
    _cold_caches()
    combo = _combo(case_name, backend_name, mode)
    backend, case = combo.backend, combo.case
    if combo.env is not None and envs.ENVS[combo.env]["python"] is not None:
        raise NotImplementedError(
            f"{backend_name} runs on {envs.release_label(combo.env)} here, in another interpreter "
            "than asv's: its compiles and compile time are tracked through a worker of that "
            "release (Compiles), its times by `python -m harness run --versions`"
        )
    if backend.env != "main":
        raise NotImplementedError(
            f"{backend_name} runs in the {backend.env!r} environment, not asv's: its compiles "
            "and compile time are tracked through a worker (Compiles), its times by "
            "`python -m harness run`"
        )
    backend.startup()  # the worker's untimed start: framework imports
    program = backend.prepare(case, mode)
    inputs = [program.convert(case.make_inputs(s, seed=i)) for i, s in enumerate(case.sizes_for("quick"))]
    return backend, program, inputs, case


class Catalogue:
    params = (TIMED_CASES, BACKENDS, TIMED_MODES)
    param_names = ["case", "backend", "mode"]
    timeout = 900
    # one sample per process, no warm-up: every shape is novel when timed (a second
    # sample in the same process would find the backend's caches warm: keep repeat = 1).
    # Seven processes: asv's two-sided Mann-Whitney test cannot call a change
    # significant with fewer samples a side (its smallest p at six is 2/C(12, 6) =
    # 0.00216 > 0.002; asv runs the test there anyway and says "not different");
    # --quick runs one
    number = 1
    repeat = 1
    rounds = stats.MIN_SAMPLES
    warmup_time = 0

    def setup(self, case, backend, mode):
        self.backend, self.program, self.inputs, self.case = _prepare(case, backend, mode)

    def time_novel_sweep(self, case, backend, mode):
        for args in self.inputs:
            self.program.sync(self.program(*args))

    def teardown(self, case, backend, mode):
        shutil.rmtree(INDUCTOR_DIR, ignore_errors=True)


_WARM: dict = {}  # (case, backend, mode) -> prepared and swept, once per process


class CachedCall:
    params = Catalogue.params
    param_names = Catalogue.param_names
    timeout = 900
    # one process per combination (asv's default is two): its setup compiles the
    # sweep again (~12 s of CPU on torch_compile) for a call of micro- to
    # milliseconds, of which the process takes at least seven samples (the fewest
    # asv's rank test can call different, stats.MIN_SAMPLES) and up to ten
    rounds = 1
    repeat = (stats.MIN_SAMPLES, 10, 20.0)

    def setup(self, case, backend, mode):
        key = (case, backend, mode)
        if key not in _WARM:
            prepared = _prepare(case, backend, mode)
            for args in prepared[2]:
                prepared[1].sync(prepared[1](*args))
            # converted again, as harness.measure's cached phase does: a program made by its first
            # call (stablehlo_xla's padded ones) stages its inputs in convert only once it exists
            b, p, _, c = prepared
            prepared = (b, p, [p.convert(c.make_inputs(s, seed=i)) for i, s in enumerate(c.sizes_for("quick"))], c)
            _WARM[key] = prepared
        self.backend, self.program, self.inputs, self.case = _WARM[key]
        self.program.sync(self.program(*self.inputs[-1]))  # warm: the timed call repeats this one

    def time_cached_call(self, case, backend, mode):
        self.program.sync(self.program(*self.inputs[-1]))

    teardown = Catalogue.teardown


class Compiles:
    """Exact compiles and compile seconds over the quick sweep, of every
    combination, from one run of the selected jobs (``setup_cache``)."""

    params = (CASES, BACKENDS, list(MODES))
    param_names = Catalogue.param_names
    timeout = 900
    unit = "compiles"
    rounds = 1  # exact counts: a second process would only repeat them

    def setup_cache(self):
        """Run the selected jobs once, as ``harness run --quick --jobs 2`` runs
        them (a worker per job, forked from the harness's fork server; torch_xla's
        in its environment), and leave each job's last novel record in
        ``<dir>/<case>-<backend>-<mode>.json`` for the two benchmarks. The
        directory is made in the working directory, asv's cache directory,
        which asv removes once the benchmarks are done."""
        out = os.path.abspath("dynshape-compiles")
        os.makedirs(out, exist_ok=True)
        combos = _compiles_ahead(asv_select.running_regexes())
        if combos:
            from harness import runner

            run = runner.Runner(out, run_id="compiles", profile="quick", repeats=1, warmup=1, progress=False)
            _split(run.run(combos, jobs=JOBS), out)
        return out

    setup_cache.timeout = 4 * 3600  # the whole matrix: ~1,000 jobs

    def setup(self, cache, case, backend, mode):
        combo = _combo(case, backend, mode)
        path = _record_path(cache, case, backend, mode)
        if not os.path.exists(path):  # not run ahead (see asv_select): run it now, once for both benchmarks
            _write(path, _novel(_worker_records(combo)))
        with open(path) as f:
            self.last = _last_novel(json.load(f), combo.id)
        _check_release(combo, self.last)

    def track_compiles(self, cache, case, backend, mode):
        return self.last["compiles"]

    def track_compile_time(self, cache, case, backend, mode):
        return self.last["compile_time_s"] or 0.0

    track_compile_time.unit = "seconds"


#: jobs ``Compiles.setup_cache`` runs at a time (``DYNSHAPE_ASV_JOBS``; default: 2, the machine's cores)
JOBS = int(os.environ.get("DYNSHAPE_ASV_JOBS", "0")) or min(2, os.cpu_count() or 1)
#: the benchmarks that read ``Compiles.setup_cache``'s run, as asv names them
_COMPILES_NAMES = [f"{__name__.rsplit('.', 1)[-1]}.Compiles.{f}" for f in ("track_compiles", "track_compile_time")]


def _compiles_ahead(regexes):
    """The runnable jobs (no skip, no known failure) of the combinations asv
    selected, given its ``-b`` regexes; none if they are unknown (``None``)."""
    if regexes is None:
        return []
    out = []
    for params in itertools.product(*Compiles.params):
        if asv_select.selects(regexes, _COMPILES_NAMES, params):
            try:
                out.append(_combo(*params))
            except NotImplementedError:
                pass  # skipped by its benchmark's setup, with the reason
    return out


def _check_release(combo, record):
    """Raise if the job of a release's environment recorded another release of
    its system (a figure under the wrong version in asv's results)."""
    if combo.env is None or not envs.release(combo.env):
        return
    entry = envs.ENVS[combo.env]
    got = (record.get("versions") or {}).get(envs.SYSTEMS[entry["system"]])
    if got is None or str(got).partition("+")[0] != entry["version"]:
        raise RuntimeError(f"{combo.id} ran {entry['system']} {got}, not {entry['version']} ({combo.env})")


def _record_path(cache, case, backend, mode):
    return os.path.join(cache, f"{case}-{backend}-{mode}.json")


def _write(path, records):
    with open(path + ".tmp", "w") as f:
        json.dump(records, f, default=str)
    os.replace(path + ".tmp", path)


def _novel(got):
    """The records of one job as ``Compiles`` keeps them: its novel records,
    or its failure (kept, so that the second benchmark reports it too)."""
    bad = [g for g in got if g.get("status") != "pass"]
    novel = [g for g in got if g.get("novel")]
    if bad or not novel:
        return [{"failed": (bad or [{}])[0].get("message", "no records")}]
    return novel


def _last_novel(records, job_id):
    if records and "failed" in records[0]:
        raise RuntimeError(f"{job_id} failed in its worker: {records[0]['failed']}")
    return records[-1]


def _split(run_path, out):
    """One file per job of the run at ``run_path``: its records as :func:`_novel` keeps them."""
    from harness import results

    jobs: dict = {}
    for r in results.read_records(run_path):
        jobs.setdefault((r["case"], r["backend"], r["mode"]), []).append(r)
    for key, got in jobs.items():
        _write(_record_path(out, *key), _novel(got))


def _worker_records(combo):
    """The records of ``combo`` run in a worker of its environment, as
    ``harness run --quick`` runs it."""
    from harness import runner

    with tempfile.TemporaryDirectory(prefix="dynshape-asv-") as tmp:
        return runner.Runner(tmp, profile="quick", repeats=1, warmup=1, progress=False).run_one(combo, lambda r: None)
