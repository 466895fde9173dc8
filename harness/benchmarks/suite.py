"""The catalogue as an asv suite: case × backend × mode.

- ``track_compiles``: exact compiles over the quick sweep (unit "compiles");
  ``track_compile_time`` the compile seconds the backend counted over it.
  Every combination of the catalogue, each run once per commit as ``harness
  run --quick`` runs it: in a fresh worker of the backend's environment
  (torch_xla's included), with cold on-disk compile caches. The two share one
  run of the job (``setup_cache`` gives the directory its records wait in).
- ``time_novel_sweep``: the quick sweep's shapes, each new to the process,
  compiles included (one sample per process: ``repeat = number = 1``, no
  warm-up; six rounds give six fresh processes, the fewest asv's rank test can
  call significant). As in ``harness run``, the backend's ``startup``
  (framework imports) and ``prepare`` run in setup, the calls (first-call
  compiles included) are timed.
- ``time_cached_call``: one call on a shape compiled during setup. The
  compiled program is built once per process and reused by every sample
  (asv re-runs ``setup`` before each one).

The timed benchmarks run for the cases :data:`TIMED` selects (globs; default
one headline case per family, ``DYNSHAPE_ASV_TIMED='*'`` for all): six fresh
processes per combination is what makes a commit of ``asv run`` cost what it
does, and the compile counts of every case are tracked regardless.

The benchmark functions time only the work (tests/test_asv_suite.py checks
that they import nothing ``setup`` did not). asv.conf.json asks for asv's
``forkserver`` launch: this module imports the frameworks once (under the
harness's one-thread policy, so the server has one thread when it forks), and
no sample pays for them.

Combinations that cannot run (no such form or mode, backend unavailable, in
another environment for the timed benchmarks) or that ``cases/expectations.toml``
marks as known failures (``xfail``) raise ``NotImplementedError`` in setup,
with the reason; asv reports them as skipped (``n/a``). ``asv run -b REGEX``
selects parameter combinations too: the regex is matched against
``suite.Compiles.track_compiles('gnn_edge_divide', 'einx', 'static')``.
"""

import fnmatch
import json
import os
import tempfile

import cases
from cases import MODES
from harness import threads

# the harness's thread policy (one thread for torch, BLAS and XLA), set before
# any framework is imported; DYNSHAPE_ASV_THREADS=0 keeps the frameworks' defaults
for _k, _v in threads.env_for(int(os.environ.get("DYNSHAPE_ASV_THREADS", "1"))).items():
    os.environ.setdefault(_k, _v)


def _preimport() -> None:
    """Import the main environment's frameworks once, here: asv's forkserver
    imports this module before forking each sample, so no sample pays for them
    (a backend's ``startup`` then finds them loaded). Import only: no device,
    no thread pool."""
    for name in ("numpy", "torch", "jax", "jax.numpy"):
        try:
            __import__(name)
        except ImportError:  # an environment without it: its backends say so
            pass


_preimport()

CASES = [c.name for c in cases.catalogue()]

#: the cases the timed benchmarks run (comma-separated globs)
TIMED = os.environ.get("DYNSHAPE_ASV_TIMED",
                       "gnn_edge_divide,gnn_message_passing,expand_over_batch,seq_softmax,batch_linear")


def _backend_names():
    from harness import registry

    only = os.environ.get("DYNSHAPE_ASV_BACKENDS")
    backends = registry.backends()
    # an opt-in backend (Backend.opt_in: torch_aoti's C++ builds) only where DYNSHAPE_ASV_BACKENDS names it
    return [n for n, b in backends.items()
            if ((n in only.split(",")) if only else not getattr(b, "opt_in", ""))]


BACKENDS = _backend_names()


def _combo(case_name, backend_name, mode):
    """The runner's job for these parameters, or NotImplementedError (asv:
    skipped) with the reason: the runner's planning (``runner.plan`` /
    ``Combo.skip_reason``, as in ``harness run``), or a known failure that
    ``cases/expectations.toml`` explains (its ``xfail``)."""
    from harness import expectations, runner

    combos = runner.plan(case_name, backend_name, mode)
    if not combos:
        raise NotImplementedError(f"case {case_name} has no {mode} mode")
    combo = combos[0]
    skip = combo.skip_reason()
    if skip:
        raise NotImplementedError(skip[1])
    rule = expectations.lookup(expectations.load(), case_name, backend_name, mode)
    if rule is not None and rule.xfail:
        raise NotImplementedError(f"known failure ({rule.describe()}): {rule.xfail}")
    return combo


def _prepare(case_name, backend_name, mode):
    """``(backend, program, [native inputs per shape], case)`` of a job that
    runs in this process, or NotImplementedError (see :func:`_combo`, and the
    timed selection :data:`TIMED`)."""
    if not any(fnmatch.fnmatchcase(case_name, g.strip()) for g in TIMED.split(",") if g.strip()):
        raise NotImplementedError(f"timed benchmarks run for {TIMED} (DYNSHAPE_ASV_TIMED, comma-separated globs); "
                                  f"{case_name}'s compiles are tracked by suite.Compiles")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="dynshape-asv-"))
    combo = _combo(case_name, backend_name, mode)
    backend, case = combo.backend, combo.case
    if backend.env != "main":
        raise NotImplementedError(f"{backend_name} runs in the {backend.env!r} environment, not asv's: its compiles "
                                  "and compile time are tracked through a worker (Compiles), its times by "
                                  "`python -m harness run`")
    backend.startup()  # the worker's untimed start: framework imports
    backend.reset_counters()
    program = backend.prepare(case, mode)
    inputs = [backend.convert(case.make_inputs(s, seed=i)) for i, s in enumerate(case.sizes_for("quick"))]
    return backend, program, inputs, case


class Catalogue:
    params = (CASES, BACKENDS, list(MODES))
    param_names = ["case", "backend", "mode"]
    timeout = 900
    # one sample per process, no warm-up: every shape is novel when timed (a second
    # sample in the same process would find the backend's caches warm: keep repeat = 1).
    # Six processes: asv's Mann-Whitney test cannot call a change significant with
    # fewer samples a side (p >= 1/C(10, 5) = 0.004 > 0.002 at five); --quick runs one
    number = 1
    repeat = 1
    rounds = 6
    warmup_time = 0

    def setup(self, case, backend, mode):
        self.backend, self.program, self.inputs, self.case = _prepare(case, backend, mode)

    def time_novel_sweep(self, case, backend, mode):
        for args in self.inputs:
            self.backend.sync(self.program(*args))


_WARM: dict = {}  # (case, backend, mode) -> prepared and swept, once per process


class CachedCall:
    params = Catalogue.params
    param_names = Catalogue.param_names
    timeout = 900

    def setup(self, case, backend, mode):
        key = (case, backend, mode)
        if key not in _WARM:
            prepared = _prepare(case, backend, mode)
            for args in prepared[2]:
                prepared[0].sync(prepared[1](*args))
            _WARM[key] = prepared
        self.backend, self.program, self.inputs, self.case = _WARM[key]
        self.backend.sync(self.program(*self.inputs[-1]))  # warm: the timed call repeats this one

    def time_cached_call(self, case, backend, mode):
        self.backend.sync(self.program(*self.inputs[-1]))


class Compiles:
    """Exact compiles and compile seconds over the quick sweep, of every
    combination: its job runs in a worker of the backend's environment, as
    ``harness run --quick`` runs it, once for both benchmarks."""

    params = Catalogue.params
    param_names = Catalogue.param_names
    timeout = 900
    unit = "compiles"
    rounds = 1  # exact counts: a second process would only repeat them

    def setup_cache(self):
        """The directory the jobs' records wait in between the two benchmarks."""
        return tempfile.mkdtemp(prefix="dynshape-asv-compiles-")

    def setup(self, cache, case, backend, mode):
        combo = _combo(case, backend, mode)
        path = os.path.join(cache, f"{case}-{backend}-{mode}.json")
        if os.path.exists(path):
            with open(path) as f:
                self.last = json.load(f)
            return
        self.last = _worker_records(combo)[-1]
        with open(path, "w") as f:
            json.dump(self.last, f, default=str)

    def track_compiles(self, cache, case, backend, mode):
        return self.last["compiles"]

    def track_compile_time(self, cache, case, backend, mode):
        return self.last["compile_time_s"] or 0.0

    track_compile_time.unit = "seconds"


def _worker_records(combo):
    """The novel records of ``combo`` run in a worker of its environment, as
    ``harness run --quick`` runs it; a failed job is an error naming its message."""
    from harness import runner

    with tempfile.TemporaryDirectory(prefix="dynshape-asv-") as tmp:
        got = runner.Runner(tmp, profile="quick", repeats=1, warmup=1, progress=False).run_one(combo, lambda r: None)
    novel = [g for g in got if g.get("novel")]
    bad = [g for g in got if g.get("status") != "pass"]
    if bad or not novel:
        raise RuntimeError(f"{combo.id} failed in its worker: {(bad or [{}])[0].get('message', 'no records')}")
    return novel
