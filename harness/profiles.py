"""What the quick profile leaves out, and why.

The quick profile (``make run``, and the conformance gate in ``make test``)
runs each case on three novel shapes. The two reports' cases (:data:`CORE`)
run on every backend in every mode. The rest of the catalogue runs in the
modes where systems differ (unbounded, bounded) on every backend but the
torch_xla peers, and leaves out the jobs whose outcome the mode fixes by
construction or whose cost is a runtime started per job (:data:`QUICK_LEAVES_OUT`).
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

import dataclasses
import fnmatch

#: the cases of the two reports that started the project: the whole matrix, always
CORE = ("gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch", "expand_over_batch_bounded")


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """Jobs matching the three globs, left out of the quick profile because
    ``why`` (never a :data:`CORE` case's)."""

    case: str
    backend: str
    mode: str
    why: str

    def matches(self, case: str, backend: str, mode: str) -> bool:
        if case in CORE:
            return False
        return all(fnmatch.fnmatchcase(v, g) for v, g in ((case, self.case), (backend, self.backend), (mode, self.mode)))


_MODEL_COST = "a model case's job imports its model library and compiles a whole model"
_MODEL_BOUNDED = (
    _MODEL_COST + ": the StableHLO bounded row runs on one model of each kind (GPT-2, BERT, GCN); "
    "a bounded XLA compile of a whole model takes 40-75 s here"
)

QUICK_LEAVES_OUT: tuple[LeftOut, ...] = (
    LeftOut("*", "*", "static", "static mode compiles per shape on every system that specialises, by construction"),
    LeftOut("*", "*", "bucketed", "bucketed mode compiles once per bucket touched, by construction"),
    LeftOut(
        "*",
        "torch_xla*",
        "*",
        "each job starts a torch_xla runtime (its PJRT client, or the export server for the StableHLO rows)",
    ),
    LeftOut("*", "torch_compile", "bounded", "the unbounded row's dynamo graph, with a range on the dim"),
    # measured in the quick run of 2026-12-01 (its records' timestamps): 530 of the
    # ~1,250 CPU-seconds of all the profile's jobs, seq_sdpa_mask 120 s a mode
    LeftOut(
        "*",
        "stablehlo_interp",
        "*",
        "the StableHLO reference interpreter runs the module stablehlo_xla compiles, op by op "
        "(5-120 s a job here): it runs on the reports' cases",
    ),
    # the model cases (cases/models_*.py): every job imports its model library (transformers ~10 s on
    # the loaded 2-core machine) and compiles a whole model (inductor: 60-110 s for GPT-2 or BERT; a
    # bounded XLA compile 40-75 s), so the quick profile keeps the rows our reference paths are
    # about: lazy unbounded (one trace) and einx_symbolic on every model, stablehlo_xla bounded (one
    # lowering + one XLA compile for every size) on one model of each kind (GPT-2, BERT, GCN), and
    # the torch_eager baseline of the report's speed-ups
    LeftOut("model_[lvrs]*", "stablehlo_xla", "bounded", _MODEL_BOUNDED),
    LeftOut("model_gat", "stablehlo_xla", "bounded", _MODEL_BOUNDED),
    LeftOut("model_*", "torch_compile", "*", _MODEL_COST + " (inductor: 60-110 s a model)"),
    LeftOut("model_*", "torch_export", "*", _MODEL_COST),
    LeftOut("model_*", "torch_lazy_ts", "*", _MODEL_COST),
    LeftOut("model_*", "lazy_stablehlo", "*", _MODEL_COST),
    LeftOut("model_*", "stablehlo_xla", "unbounded", _MODEL_COST + " (an XLA compile per shape, by construction)"),
    LeftOut("model_*", "lazy", "bounded", _MODEL_COST + " (the unbounded row's trace, checked against the bound)"),
    LeftOut("model_*", "torch_eager", "bounded", _MODEL_COST + " (eager ignores the bound)"),
)


#: the zoo profile (``harness run --profile zoo``): the generated model zoo's cases
#: (``cases/zoo*.py``, names starting with this) on their whole sweep, nothing else
ZOO_PREFIX = "zoo_"
_ZOO_WHY = "a generated model-zoo case (cases/zoo*.py): `harness run --profile zoo` runs the zoo"
ZOO_LEAVES_OUT: tuple[LeftOut, ...] = (
    LeftOut("*", "*", "static", "static mode compiles per shape on every system that specialises, by construction"),
    LeftOut("*", "*", "bucketed", "bucketed mode compiles once per bucket touched, by construction"),
    LeftOut("*", "stablehlo_interp", "*", "the StableHLO reference interpreter runs a whole model op by op (minutes a job)"),
)


def left_out(case: str, backend: str, mode: str, profile: str | None) -> str | None:
    """Why ``profile`` leaves this job out, or ``None`` (it runs): the quick profile
    leaves out :data:`QUICK_LEAVES_OUT` and every zoo case; the zoo profile runs only
    zoo cases, less :data:`ZOO_LEAVES_OUT`."""
    if profile == "zoo":
        if not case.startswith(ZOO_PREFIX):
            return f"left out of the zoo profile (it runs only the model zoo's {ZOO_PREFIX}* cases); `harness run --full` runs it"
        rules = ZOO_LEAVES_OUT
    elif profile == "quick":
        if case.startswith(ZOO_PREFIX):
            return f"left out of the quick profile ({_ZOO_WHY})"
        rules = QUICK_LEAVES_OUT
    else:
        return None
    for rule in rules:
        if rule.matches(case, backend, mode):
            return f"left out of the {profile} profile ({rule.why}); `harness run --whole-matrix` or the full profile runs it"
    return None
