"""What the quick profile leaves out, and why.

The quick profile (``make run``, and the conformance gate in ``make test``)
runs each case on three novel shapes. The two reports' cases (:data:`CORE`)
run on every backend in every mode. The rest of the catalogue runs in the
modes where systems differ (unbounded, bounded) on every backend but the
torch_xla peers, and leaves out the jobs whose outcome the mode fixes by
construction or whose cost is a runtime started per job (:data:`QUICK_LEAVES_OUT`, and
each backend's own ``Backend.quick_leaves_out``).
Nothing is dropped silently: each such job is recorded as ``skipped`` with its
reason, the report lists it under "Not run", ``harness run --whole-matrix``
runs it, the gate (``pytest cases/``) lists them with their reasons in one item
(``test_jobs_the_gate_leaves_out``, not one skip each), and ``make gate-left-out``
gates exactly these jobs (923 of them, 295 the model cases').
It is not part of CI (``.ci/run``): measured in slices on the shared 2-core
machine (load 10-20) it took 19 min for the gnn_ jobs (140), 28 min for the
batch_ jobs (135) and 23 min for 114 seq_ jobs, ~11 s a job: well over an hour
for all of them on top of ``make test``'s ~15 min (with set-up), past what CI allows; run it
before changing a backend's static or bucketed path or the torch_xla peers. The full profile runs everything.
"""

from __future__ import annotations

from backends.base import Backend, LeftOut

#: the cases of the two reports that started the project: the whole matrix, always
CORE = ("gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch", "expand_over_batch_bounded")


#: the rules that hold for every backend; each backend's own are its ``Backend.quick_leaves_out``
QUICK_LEAVES_OUT: tuple[LeftOut, ...] = (
    LeftOut("*", "static", "static mode compiles per shape on every system that specialises, by construction"),
    LeftOut("*", "bucketed", "bucketed mode compiles once per bucket touched, by construction"),
)


#: the zoo profile (``harness run --profile zoo``): the generated model zoo's cases
#: (``cases/zoo*.py``, names starting with this) on their whole sweep, nothing else
ZOO_PREFIX = "zoo_"
_ZOO_WHY = "a generated model-zoo case (cases/zoo*.py): `harness run --profile zoo` runs the zoo"
ZOO_LEAVES_OUT: tuple[LeftOut, ...] = (
    LeftOut("*", "static", "static mode compiles per shape on every system that specialises, by construction"),
    LeftOut("*", "bucketed", "bucketed mode compiles once per bucket touched, by construction"),
)
#: backends the zoo profile leaves out altogether, and why
ZOO_BACKENDS_OUT = {"stablehlo_interp": "the StableHLO reference interpreter runs a whole model op by op (minutes a job)"}


def rules(backend: Backend) -> tuple[LeftOut, ...]:
    """Every rule the quick profile applies to ``backend``'s jobs: the common ones, then its own."""
    return (*QUICK_LEAVES_OUT, *backend.quick_leaves_out)


def left_out(case: str, backend: Backend, mode: str, profile: str | None) -> str | None:
    """Why ``profile`` leaves this job out, or ``None`` (it runs): the quick profile
    leaves out :func:`rules` and every zoo case (a :data:`CORE` case always runs); the
    zoo profile runs only zoo cases, less :data:`ZOO_LEAVES_OUT` and :data:`ZOO_BACKENDS_OUT`."""
    if profile == "zoo":
        if not case.startswith(ZOO_PREFIX):
            return f"left out of the zoo profile (it runs only the model zoo's {ZOO_PREFIX}* cases); `harness run --full` runs it"
        if backend.name in ZOO_BACKENDS_OUT:
            return f"left out of the zoo profile ({ZOO_BACKENDS_OUT[backend.name]})"
        chosen = ZOO_LEAVES_OUT
    elif profile == "quick":
        if case.startswith(ZOO_PREFIX):
            return f"left out of the quick profile ({_ZOO_WHY})"
        if case in CORE:
            return None
        chosen = rules(backend)
    else:
        return None
    for rule in chosen:
        if rule.matches(case, mode):
            return f"left out of the {profile} profile ({rule.why}); `harness run --whole-matrix` or the full profile runs it"
    return None
