"""The catalogue as an asv suite: case × backend × mode.

- ``time_novel_sweep``: the quick sweep's shapes, each new to the process,
  compiles included (one sample per process: ``repeat = number = 1``, no
  warm-up; asv's ``rounds`` give fresh processes). As in ``harness run``, the
  backend's ``startup`` (framework imports) and ``prepare`` run in setup, the
  calls (first-call compiles included) are timed.
- ``time_cached_call``: one call on a shape compiled during setup. The
  compiled program is built once per process and reused by every sample
  (asv re-runs ``setup`` before each one).
- ``track_compiles``: exact compiles over the quick sweep (unit "compiles").

The benchmark functions time only the work (tests/test_asv_suite.py checks
that they import nothing ``setup`` did not).

Combinations that cannot run (no such form or mode, backend unavailable or
in another environment) raise ``NotImplementedError`` in setup, which asv
reports as skipped.
"""

import os
import tempfile

import cases
from cases import MODES
from harness import threads

# the harness's thread policy (one thread for torch, BLAS and XLA), set before
# any framework is imported; DYNSHAPE_ASV_THREADS=0 keeps the frameworks' defaults
for _k, _v in threads.env_for(int(os.environ.get("DYNSHAPE_ASV_THREADS", "1"))).items():
    os.environ.setdefault(_k, _v)

CASES = [c.name for c in cases.catalogue()]


def _backend_names():
    from harness import registry

    only = os.environ.get("DYNSHAPE_ASV_BACKENDS")
    backends = registry.backends()
    # an opt-in backend (Backend.opt_in: torch_aoti's C++ builds) only where DYNSHAPE_ASV_BACKENDS names it
    return [n for n, b in backends.items()
            if ((n in only.split(",")) if only else not getattr(b, "opt_in", ""))]


BACKENDS = _backend_names()


def _prepare(case_name, backend_name, mode):
    """``(backend, program, [native inputs per shape], case)``, or NotImplementedError.

    Which combinations run, and why the others do not, is the runner's
    planning (``runner.plan`` / ``Combo.skip_reason``), as in ``harness run``."""
    from harness import runner

    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="dynshape-asv-"))
    combos = runner.plan(case_name, backend_name, mode)
    if not combos:
        raise NotImplementedError(f"case {case_name} has no {mode} mode")
    combo = combos[0]
    skip = combo.skip_reason()
    if skip:
        raise NotImplementedError(skip[1])
    backend, case = combo.backend, combo.case
    if backend.env != "main":
        raise NotImplementedError(f"{backend_name} runs in env {backend.env!r}; use `python -m harness run`")
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
    # sample in the same process would find the backend's caches warm: keep repeat = 1)
    number = 1
    repeat = 1
    rounds = 2
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
    params = Catalogue.params
    param_names = Catalogue.param_names
    timeout = 900
    unit = "compiles"

    def setup(self, case, backend, mode):
        self.backend, self.program, self.inputs, self.case = _prepare(case, backend, mode)

    def track_compiles(self, case, backend, mode):
        before = sum(self.backend.compile_stats().values())
        for args in self.inputs:
            self.backend.sync(self.program(*args))
        return sum(self.backend.compile_stats().values()) - before
