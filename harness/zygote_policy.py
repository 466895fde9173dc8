"""What a fork server (:mod:`harness.forkserver`) imports before it forks, and which jobs it may serve.

Environment. The zygote starts with the job's environment minus
:data:`PER_JOB` (variables that change from job to job and that nothing in
:data:`PRELOAD` reads at import; the child sets them), so everything a module
reads at import (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``JAX_*``,
``XLA_FLAGS``, ``PYTHONPATH``…) is what spawn would give; jobs whose other
variables differ get another zygote. ``TORCH_TRACE`` is read by
``import torch``, so a traced run spawns (:func:`usable`). Modules that read a
per-job variable at import stay out of :data:`PRELOAD`: ``einx`` (it imports
``torch._dynamo``, whose ``DynamoCache`` resolves ``TORCHINDUCTOR_CACHE_DIR``
at import), ``torch._dynamo``, ``torch._inductor``. The zygote refuses to
serve (and the harness spawns, with one warning) when a preloaded module left
a thread running or set a :data:`PER_JOB` variable. After :data:`PRELOAD`,
a second stage (:mod:`harness.zygote_warm`) imports ``torch._dynamo`` and
inductor and runs inductor's vector-ISA probe with the :data:`PER_JOB`
variables pointing into a scratch directory, then checks that no module kept it.

What a zygote imports depends on its run: :data:`PRELOAD` always, and what
the run's backends declare: their ``Backend.preload`` modules (jax) and their
``Backend.warmup`` steps (dynamo, torch.export, inductor's probe), so that a
run of torch's eager backend starts in ~2 s instead of ~8. The harness names
none of them: it reads them off the registered backends' descriptors.
A zygote that preloads more serves a job that wants less. The worker imports
its backend's ``preload`` and ``warmup`` modules itself before ``startup``, so
where the zygote did not, the import is in ``startup_s``; a job that imports a
module of :func:`catalogue` later, undeclared, is named in a :class:`LateImportWarning`.

Only environments listed in :data:`PRELOAD` get a zygote. ``xla``'s imports
``torch_xla`` (~5 CPU-s), which reads ``PJRT_DEVICE`` and ``XLA_FLAGS`` (the
same for every job) and appends to ``XLA_FLAGS``; it starts no thread and no
PJRT client (the job's ``torch_xla.device()`` does). What the imports set in the
environment is applied over each child's job environment, as a spawned worker's
own imports would. A backend opts out with ``Backend.forkable = False``. ``--no-fork-server`` or
``DYNSHAPE_FORK_SERVER=0`` spawns every worker.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable

from cases import FAMILIES, libs

#: the catalogue's in-tree families (``cases.FAMILIES``): every job looks its case up
#: in the catalogue, which imports them all (77 ms a job when each worker did it)
_CASE_FAMILIES = tuple(f"cases.{f}" for f in FAMILIES)
#: what every environment's worker imports for any job, after its array libraries
_HARNESS = (
    "cases",
    *_CASE_FAMILIES,
    "backends.base",
    "harness.worker",
    "harness.measure",
    "harness.meta",
    "harness.registry",
    "harness.threads",
)
#: modules the zygote of each environment imports before forking (optional:
#: one missing from the environment is skipped)
PRELOAD = {
    "main": ("numpy", "torch", *_HARNESS),
    # import only: the PJRT client starts in the job (``torch_xla.device()`` in startup)
    "xla": ("numpy", "torch", "torch_xla", *_HARNESS),
}
#: variables the child sets per job: nothing in :data:`PRELOAD` reads them at import
#: (pytest sets ``PYTEST_CURRENT_TEST`` per test: the gate's jobs share a zygote)
#: (and the address of the run's torch_xla export zygote, which only some backends' jobs get)
PER_JOB = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "PYTEST_CURRENT_TEST", "DYNSHAPE_XLA_EXPORT_SOCKET")
#: variables read at import by a preloaded module, which a zygote cannot vary per job
READ_AT_IMPORT = ("TORCH_TRACE",)
#: the switch: ``0`` spawns every worker
ENV_SWITCH = "DYNSHAPE_FORK_SERVER"


class LateImportWarning(UserWarning):
    """A job imported a module of :func:`catalogue` after its startup that its
    backend's ``preload`` does not name (the worker's ``late_imports`` message)."""

    def __init__(self, msg: dict):
        super().__init__(
            f"{msg['job']}: imported {', '.join(msg['late_imports'])} after its backend's startup; name "
            f"{'them' if len(msg['late_imports']) > 1 else 'it'} in {msg['backend']}.preload (or .warmup), or the import is timed "
            "where the fork server did not preload it"
        )


def enabled() -> bool:
    """Whether ``DYNSHAPE_FORK_SERVER`` leaves the fork server on (the default)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def declared(env_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(preload, warmup)``: every ``Backend.preload`` module and ``Backend.warmup``
    step the registered backends of ``env_name`` declare, in the registry's order
    (a step that imports a module before one that calls a function). A zygote
    imports a module only for a run with a backend that declares it: a run of
    torch's eager backend alone need not wait for jax (~1.4 s) or inductor (~5 s)."""
    from . import registry

    found = [b for b in registry.backends().values() if b.env == env_name]
    preload = tuple(dict.fromkeys(m for b in found for m in b.preload))
    steps = list(dict.fromkeys(s for b in found for s in b.warmup))
    if found:  # the model libraries' imports, for runs whose cases need them (cases.libs.PRELOAD_STEPS)
        steps += [s for s in libs.PRELOAD_STEPS.values() if s not in steps]
    return preload, tuple(sorted(steps, key=lambda s: ":" in s))


def selection(env_name: str, wanted: Collection[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(modules, steps)`` a zygote of ``env_name`` runs for jobs whose backends
    want ``wanted`` (their ``Backend.preload`` and ``warmup`` entries; ``None``:
    every one): :data:`PRELOAD`, then the entries of :func:`declared` that are
    wanted, in their order there."""
    optional, steps = declared(env_name)
    if wanted is not None:
        optional, steps = tuple(m for m in optional if m in wanted), tuple(s for s in steps if s in wanted)
    return (*PRELOAD.get(env_name, ()), *optional), steps


def catalogue(env_name: str) -> tuple[str, ...]:
    """The modules a zygote of ``env_name`` imports for some runs and not others
    (:func:`declared`): a job that imports one after its startup, undeclared by
    its backend, would have its import time in a timed call where its zygote
    did not preload it."""
    optional, steps = declared(env_name)
    return tuple(dict.fromkeys([*optional, *(s.partition(":")[0] for s in steps)]))


def usable(env_name: str, env: dict) -> bool:
    """Whether a job of environment ``env_name`` with variables ``env`` can be forked."""
    return env_name in PRELOAD and not any(k in env for k in READ_AT_IMPORT)


def preload_of(combos: Iterable) -> dict[str, set[str]]:
    """Per environment, the ``Backend.preload`` and ``Backend.warmup`` entries of the combos' backends,
    and the warm-up steps of the model libraries their cases need (``cases.libs.PRELOAD_STEPS``)."""
    out: dict[str, set[str]] = {}
    for c in combos:
        out.setdefault(c.env_name, set()).update(c.backend.preload, c.backend.warmup)
        out[c.env_name].update(
            libs.PRELOAD_STEPS[name] for name in getattr(c.case, "libraries", ()) if name in libs.PRELOAD_STEPS
        )
    return out
