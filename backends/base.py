"""The backend interface.

A backend turns a case's program form into something callable on native
inputs, and reports its exact compile counts. Each (case, backend, mode) runs
in its own worker process (in the Python environment the backend names in
``env``), so process-wide counters are per job.

A backend is two objects. The :class:`Backend` *descriptor* is stateless: what
the harness needs to plan, start and report a job (name, forms, modes,
environment, counters, preloads and warm-up steps, quick-profile leave-outs)
plus the per-worker ``startup``/``teardown``. Its ``prepare(case, mode)``
returns a :class:`Program`: one job's callable with its input/output steps
(``convert``, ``sync``, ``to_numpy``) and its compile ledger, all per-job state
in fields the program declares.

To add one: subclass :class:`Backend` (class attributes + ``prepare``), make
``prepare`` return a :class:`Program` (subclass it where the system has its own
counters or arrays), and register the class under the ``dynshape.backends``
entry-point group. That is all: one module and one entry point
(``docs/extending.md``). Import tensor frameworks inside methods, never at
module level: ``dynshape list`` imports every backend module in the main
environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import importlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from engines.sizes.modes import MODES, BoundError  # noqa: F401 (re-exported: the modes a backend may offer, the bound error)
from engines.torch_export_tools import EXPORT_MIN, export_range, interval_text  # noqa: F401 (re-exported: where an exported dim starts)

from .arrays import JaxArrays as JaxArrays  # re-exported: the mixins were here
from .arrays import TorchArrays as TorchArrays

FORMS = ("einx", "torch", "jax")


class Unsupported(Exception):
    """Raised by ``prepare`` when a case cannot run on this backend in this mode.

    The runner records status ``unsupported`` (:attr:`status`) with the message, the
    stage it names (else the one :meth:`Program.counting` saw it leave) and the
    system's parsed ``diagnosis`` (a dict, the record's field), where given.
    """

    status = "unsupported"

    def __init__(self, message: str = "", *, stage: str | None = None, diagnosis: dict | None = None):
        super().__init__(message)
        self.diagnosis = diagnosis
        if stage is not None:
            self.dynshape_stage = stage


class OutsideNarrowed(Unsupported):
    """A size outside the range the system narrowed the job to (``narrowed``): the
    job ran, on the sizes torch.export could keep; this one is reported apart."""

    status = "out_of_range"


def failed_stage(e: BaseException) -> str | None:
    """The stage ``e`` was raised in: the one it names, else the innermost
    :meth:`Program.counting` block it left (``None``: outside every stage, the call)."""
    return getattr(e, "dynshape_stage", None)


#: where a stage's count comes from (``Backend.counters``)
SOURCES = {
    "system": "the system's own counter",
    "instrumented": "our count of calls into the system's compile entry point",
    "ours": "our own cache (a reference implementation or our executor)",
}


def check_bounds(case, mode: str, arrays: Sequence[Any]) -> None:
    """In ``bounded`` mode, raise :class:`BoundError` naming the case, the
    input, the dim, its size and its bound when an input is above its bound
    (``arrays``: anything with ``.shape``). The harness checks every shape
    before ``convert``; backends whose system would not say it as plainly
    check in their own ``convert`` too."""
    if mode != "bounded":
        return
    for inp, axes, a in zip(case.inputs, case.dynamic_axes(mode), arrays, strict=False):
        for axis, dim in axes.items():
            size = int(a.shape[axis])
            if dim.max is not None and size > dim.max:
                raise BoundError(
                    f"{case.name}: input {inp.name!r} dim {dim.name!r} (axis {axis}) is {size}, "
                    f"above its bound {dim.max} (bounded mode)"
                )


@dataclasses.dataclass
class Counter:
    """What one compile stage counts: ``source`` (a key of :data:`SOURCES`) and
    the ``event`` that makes it move, in words."""

    source: str
    event: str

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown counter source {self.source!r}; valid: {', '.join(SOURCES)}")


class Ledger:
    """Compile counts, times and reasons a program records itself.

    ``counts`` and ``seconds`` are cumulative per stage; ``reasons`` are drained
    by :meth:`Program.compile_reasons`. ``baseline`` is the snapshot of the
    system's process-wide counters taken by :meth:`Program.reset_counters`.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.reasons: list[str] = []
        self.baseline: dict[str, int] = {}
        self.baseline_seconds: dict[str, float] = {}
        self.reason_pos: dict[str, int] = {}
        self.work: dict[str, int] = {}
        self.work_seconds: dict[str, float] = {}


def describe_range(dim) -> str:
    """``"b in [2, 64]"`` (``inf`` for an unbounded dim): a dim's exported range in words."""
    return f"{dim.name} in {interval_text(*export_range(dim))}"


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """Jobs of a backend the quick profile leaves out: cases matching the glob
    ``case``, modes matching ``mode``, because ``why`` (``Backend.quick_leaves_out``;
    :mod:`harness.profiles` keeps the rules that hold for every backend)."""

    case: str
    mode: str
    why: str

    def matches(self, case: str, mode: str) -> bool:
        return fnmatch.fnmatchcase(case, self.case) and fnmatch.fnmatchcase(mode, self.mode)


#: why the quick profile leaves out a model case's job on a backend that compiles the model
MODEL_COST = "a model case's job imports its model library and compiles a whole model"


class Backend:
    """A backend's descriptor: stateless, one per worker process.

    Class attributes:
      name: the backend's name in reports and on the command line.
      forms: program forms it consumes (``einx``, ``torch``, ``jax``).
      modes: modes it offers (``static``, ``bounded``, ``unbounded``, ``bucketed``).
      env: the Python environment its worker runs in (``main`` or ``xla``,
        see ``backends.envs``).
      requires: modules that must be importable in ``env``.
      helper_envs: other environments its helper processes run in (the
        gate marks its items with them, as with ``env``: ``-m "not xla"``).
      timeout_s: wall-clock limit of one job (case, backend, mode).
      counters: per compile stage, a :class:`Counter` saying whether the count
        is the system's own counter or ours, and what event it counts.
      work_counters: per-shape work that is not a compile (e.g. refining a
        module's shapes to a new concrete shape), counted and timed apart
        from the compile stages (``work_stats``/``work_times``): not in
        ``compiles``, not in ``compile_time_s``.
      mode_notes: per mode, a label the report shows beside every row of that
        mode (e.g. that a mode emulates another system).
      opt_in: why a run includes this backend only where ``--backends``
        names it (e.g. a compile too slow for the default profile); empty:
        every run includes it.
      forkable: whether its worker may be forked from the environment's fork
        server (which has torch and numpy imported, nothing initialised;
        ``harness.forkserver``); ``False`` if the backend needs a variable
        that a preloaded module reads at import to differ from job to job.
      preload: modules its jobs import beyond torch and numpy that a fork
        server may import once for a whole run (``jax``).
      warmup: what its jobs import (``module``) or run (``module:function``,
        called without arguments) that resolves a per-job variable (the
        inductor cache directory): a fork server runs these with the per-job
        variables pointing into a scratch directory (``harness.zygote_warm``).
        The worker imports the modules of ``preload`` and ``warmup`` before
        :meth:`startup`, so where the fork server did not, the import is in
        ``startup_s`` and never in a timed call (the harness warns when a job
        imports one that some backend of its environment declares, undeclared
        by its own, after its startup).
      quick_leaves_out: the :class:`LeftOut` rules of this backend's jobs that
        the quick profile leaves out, and why.
      compile_scope: what this backend's compile-time figure
        (``compile_time_s``, the sum of ``compile_times``) includes, in words,
        for the report to show beside it.

    A descriptor keeps no per-job state (that is the :class:`Program`'s); what
    :meth:`startup` starts for the worker process (a helper process, a
    scratch directory) lives in fields its ``__init__`` declares.
    """

    # not a ClassVar: harness.registry's stand-in for a backend that cannot load
    # (Broken) takes the name of the entry point it stands in for, per instance
    name: str = ""
    #: the entry point it was loaded from (``module:Class``), set by harness.registry
    spec: str = ""
    forms: ClassVar[tuple[str, ...]] = ()
    modes: ClassVar[tuple[str, ...]] = ()
    env: ClassVar[str] = "main"
    requires: ClassVar[tuple[str, ...]] = ()
    helper_envs: ClassVar[tuple[str, ...]] = ()
    timeout_s: ClassVar[float] = 900.0
    counters: ClassVar[dict[str, Counter]] = {}
    work_counters: ClassVar[dict[str, Counter]] = {}
    mode_notes: ClassVar[dict[str, str]] = {}
    opt_in: ClassVar[str] = ""
    forkable: ClassVar[bool] = True
    preload: ClassVar[tuple[str, ...]] = ()
    warmup: ClassVar[tuple[str, ...]] = ()
    quick_leaves_out: ClassVar[tuple[LeftOut, ...]] = ()
    compile_scope: ClassVar[str] = ""
    #: the modes it serves with its static program on inputs padded on the host (``backends.padding``)
    host_padded: ClassVar[tuple[str, ...]] = ()

    # -- discovery (runs in the parent process) ---------------------------
    def available(self) -> tuple[bool, str]:
        """``(True, "")`` if the backend can run here, else ``(False, reason)``.

        Must not import heavy frameworks; the default checks ``requires``
        with ``find_spec`` in the backend's environment.
        """
        from . import envs

        return envs.modules_available(self.env, self.requires)

    def unsupported_reason(self, case, mode: str) -> str | None:
        """Why ``case`` cannot run in ``mode`` here, or ``None`` if it can."""
        if mode not in case.modes:
            return f"case {case.name} has no {mode} mode (it has {', '.join(case.modes)})"
        if mode not in self.modes:
            return f"{self.name} offers no {mode} mode (it offers {', '.join(self.modes)})"
        if not set(self.forms) & set(case.forms):
            return f"case {case.name} has no {'/'.join(self.forms)} form (it has {', '.join(case.forms) or 'none'})"
        return None

    # -- the harness's process -------------------------------------------
    def job_env(self, env: dict[str, str]) -> dict[str, str]:
        """Variables to add to a job's environment, in the harness's process
        before the job starts; ``env`` is the job's, less what changes from job
        to job. For a service the run keeps for all of a backend's jobs (the
        export-server zygote of :mod:`backends.torch_xla_stablehlo`). Default: none."""
        return {}

    # -- the worker process -------------------------------------------------
    def startup(self) -> None:
        """Import the frameworks and start helper processes, once per worker
        (timed as the job's ``startup_s``, with the worker's own start).
        Default: import ``requires``."""
        for module in self.requires:
            importlib.import_module(module)

    def teardown(self) -> None:
        """Stop what ``startup`` started (after the job's last record; not timed)."""

    def prepare(self, case, mode: str) -> Program:
        """The :class:`Program` of ``case`` in ``mode``: a callable on the
        native inputs its ``convert`` returns, counting this job's compiles
        from the moment it is made. Compiling lazily (on the first call) is
        fine and is what makes the first call's latency include the compile.
        Raises :class:`Unsupported` where the case cannot run here."""
        raise NotImplementedError


class Program:
    """One job's program (``case`` in ``mode`` on ``backend``), made by
    :meth:`Backend.prepare`; all its state is in the fields ``__init__`` declares.

    Call and timing. ``program(*args)`` runs ``call`` (given, or the subclass's
    :meth:`run`); the harness times it + ``sync`` on the inputs :meth:`convert`
    made, the same in every mode. What a user does once per input (host padding,
    the host → device copy, marking dims dynamic) is ``convert``'s, timed apart
    (``pad_s``: what it records with ``io_timing("pad_s")``; ``h2d_s``: the
    rest); ``to_numpy`` (device → host, slicing a padded output back) is ``d2h_s``.

    Compile counting. :meth:`compile_stats` gives this job's cumulative counts
    per stage: ours through :meth:`count` / :meth:`counting` (with the time and
    the reason), a system's process-wide counter read in :meth:`system_stats`
    and baselined when the program is made (:meth:`reset_counters`). The
    harness reads them around every call: each count lands on its call.
    """

    def __init__(self, backend: Backend, case, mode: str, call: Callable[..., Any] | None = None):
        self.backend, self.case, self.mode = backend, case, mode
        #: what ``program(*args)`` runs
        self.call: Callable[..., Any] = call if call is not None else self.run
        #: this job's own counts; the system's baselines
        self.ledger = Ledger()
        #: the ``convert`` steps timed since the last :meth:`take_io`
        self.io: dict[str, float] = {}
        self.reset_counters()

    def __call__(self, *args):
        return self.call(*args)

    def run(self, *args):
        """The call where a subclass defines it as a method (else ``call`` is given)."""
        raise NotImplementedError(f"{type(self).__name__}: no call given")

    # -- inputs and outputs ------------------------------------------------
    def convert(self, arrays: Sequence[np.ndarray]) -> list:
        """NumPy inputs to native inputs, in the form the call takes them
        (padded, on the device): not part of the call's time; timed as
        ``pad_s`` + ``h2d_s``."""
        return list(arrays)

    def sync(self, out: Any) -> None:
        """Block until ``out`` is computed on the device (timed: part of the call)."""

    def to_numpy(self, out: Any) -> np.ndarray:
        """The call's output as a NumPy array, sliced back to the live sizes
        where the call ran padded (not part of the call; timed as ``d2h_s``)."""
        return np.asarray(out)

    def guards(self) -> list[str]:
        """Specialisations the program made on concrete sizes (for the record)."""
        return []

    def call_breakdown(self) -> dict | None:
        """The last call's split into parts, where the system reports one."""
        return None

    @contextlib.contextmanager
    def io_timing(self, step: str) -> Iterator[None]:
        """Add the block's seconds to ``step`` (``pad_s``) of the current
        ``convert``, for :meth:`take_io`."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.note_io(step, time.perf_counter() - t0)

    def note_io(self, step: str, seconds: float) -> None:
        """Add ``seconds`` to ``step`` of the current ``convert`` (a step its system timed)."""
        self.io[step] = self.io.get(step, 0.0) + seconds

    def take_io(self) -> dict[str, float]:
        """The steps :meth:`io_timing` recorded since the last call (drains)."""
        out, self.io = self.io, {}
        return out

    # -- compile counting ----------------------------------------------------
    def count(self, stage: str, n: int = 1, seconds: float | None = None, reason: str | None = None) -> None:
        """Record ``n`` compiles of ``stage`` that we made ourselves."""
        led = self.ledger
        led.counts[stage] = led.counts.get(stage, 0) + n
        if seconds is not None:
            led.seconds[stage] = led.seconds.get(stage, 0.0) + seconds
        if reason:
            led.reasons.append(f"{stage}: {reason}")

    @contextlib.contextmanager
    def counting(self, stage: str, reason: str | None = None) -> Iterator[None]:
        """Count one ``stage`` compile, timed, when the block completes; an
        exception leaving it is marked with ``stage`` (:func:`failed_stage`)
        unless an inner block or the refusal itself named one."""
        t0 = time.perf_counter()
        try:
            yield
        except Exception as e:
            if failed_stage(e) is None:
                with contextlib.suppress(AttributeError):  # an exception type with __slots__
                    e.dynshape_stage = stage  # type: ignore[attr-defined]
            raise
        self.count(stage, 1, time.perf_counter() - t0, reason)

    def narrowed(self) -> dict | None:
        """The range this job runs under where the system narrowed the case's declared
        one (the record's ``narrowed``: declared, ran, why), else ``None``."""
        return None

    def add_seconds(self, stage: str, seconds: float) -> None:
        """Add compile seconds to ``stage`` with no count: a timed part of a
        counted compile (e.g. the refinement before an XLA compile)."""
        led = self.ledger
        led.seconds[stage] = led.seconds.get(stage, 0.0) + seconds

    def count_work(self, stage: str, seconds: float) -> None:
        """Record one unit of ``stage`` (a key of ``work_counters``) taking ``seconds``."""
        led = self.ledger
        led.work[stage] = led.work.get(stage, 0) + 1
        led.work_seconds[stage] = led.work_seconds.get(stage, 0.0) + seconds

    def system_stats(self) -> dict[str, int]:
        """The system's own cumulative, process-wide counters per stage."""
        return {}

    def system_seconds(self) -> dict[str, float]:
        """The system's own cumulative compile seconds per stage, where it reports them."""
        return {}

    def system_reason_logs(self) -> dict[str, list[str]]:
        """Per stage, a process-wide, append-only log of compile reasons the
        system (or a shared cache of ours) keeps; this job reads the lines
        appended since :meth:`reset_counters`."""
        return {}

    def reset_counters(self) -> None:
        """Start this job's counts at zero: our ledger is cleared and the
        system's counters and reason logs are snapshotted (when the program is made)."""
        led = self.ledger = Ledger()
        led.baseline = dict(self.system_stats())
        led.baseline_seconds = dict(self.system_seconds())
        led.reason_pos = {stage: len(log) for stage, log in self.system_reason_logs().items()}

    def compile_stats(self) -> dict[str, int]:
        """Exact compile counts of this job so far, per stage.

        Stages name where the work happened (``{"export": 1, "xla": 50}``);
        the harness records their sum as ``compiles``. Every stage in the
        backend's ``counters`` is present, at 0 until it moves.
        """
        led = self.ledger
        out = {stage: 0 for stage in self.backend.counters}
        for stage, n in self.system_stats().items():
            out[stage] = out.get(stage, 0) + n - led.baseline.get(stage, 0)
        for stage, n in led.counts.items():
            out[stage] = out.get(stage, 0) + n
        return out

    def compile_times(self) -> dict[str, float]:
        """Cumulative compile seconds of this job per stage, where known."""
        led = self.ledger
        out = {}
        for stage, s in self.system_seconds().items():
            out[stage] = s - led.baseline_seconds.get(stage, 0.0)
        for stage, s in led.seconds.items():
            out[stage] = out.get(stage, 0.0) + s
        return out

    def compile_time_s(self) -> float | None:
        """Total compile time of this job so far, where known."""
        times = self.compile_times()
        return float(sum(times.values())) if times else None

    def compile_reasons(self) -> list[str]:
        """Why the system compiled since the last call of this method (drains).

        One line per compile, as the system gives it where it does (dynamo's
        guard failures, jax's cache-miss explanation, our cache keys)."""
        led = self.ledger
        out, led.reasons = led.reasons, []
        for stage, log in self.system_reason_logs().items():
            out += [f"{stage}: {r}" for r in log[led.reason_pos.get(stage, 0) :]]
            led.reason_pos[stage] = len(log)
        return out

    def work_stats(self) -> dict[str, int]:
        """Cumulative counts of this job's non-compile per-shape work, per stage
        (every stage of the backend's ``work_counters`` present)."""
        return {stage: 0 for stage in self.backend.work_counters} | dict(self.ledger.work)

    def work_times(self) -> dict[str, float]:
        """Cumulative seconds of this job's non-compile per-shape work, per stage."""
        return dict(self.ledger.work_seconds)


class BoundsChecked:
    """Program mixin (before the arrays mixin): ``convert`` refuses an input
    above its bound in bounded mode naming the case's dim (:func:`check_bounds`),
    where the system's own refusal would not say it as plainly."""

    case: Any
    mode: str

    def convert(self, arrays):
        check_bounds(self.case, self.mode, arrays)
        return super().convert(arrays)  # type: ignore[misc]


def torch_dims(case, mode: str) -> list[dict[int, Any]]:
    """``torch.export.Dim`` objects per input axis for ``case`` in ``mode``
    (:func:`engines.torch_export_tools.torch_dims` of the case's export spec)."""
    from engines import torch_export_tools

    return torch_export_tools.torch_dims(torch_export_tools.export_spec(case.dynamic_axes(mode)))
