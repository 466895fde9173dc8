"""Harness backends for the StableHLO reference path (``engines/stablehlo``).

``stablehlo_xla``
    torch form -> torch.export with ``Dim`` (``Dim(max=)`` in bounded mode)
    -> ``engines.stablehlo.lowering.lower`` (`?` / ``#stablehlo.bounds`` types) ->
    XLA CPU. ``unbounded``: refine to the call's shapes and compile once per
    concrete shape. ``bounded``: one compile for every size up to the bounds
    (XLA's dynamic padder, ``engines.stablehlo.execution.xla_padded``). ``bucketed``: the
    `?` module compiled once per power-of-two bucket of its sizes
    (``engines.sizes.buckets``). Stages: ``lowering`` (1 export+lower, in the first
    call) + ``xla``. Inputs and outputs are jax arrays on the CPU device;
    in bounded and bucketed mode ``convert`` pads the inputs on the host and
    copies them to the device (``PaddedArgs``), the call returns the padded
    results on the device (``PaddedResults``) and ``to_numpy`` slices them.
    The first call of a job exports and lowers at its argument shapes, so
    it receives host arrays and stages them itself.
``stablehlo_interp``
    the same module on the StableHLO reference interpreter
    (``stablehlo.eval_module``) in a worker subprocess started by
    ``startup`` (an interpreter abort on an op it lacks becomes an error row
    instead of killing the job). The worker parses the module once per
    concrete argument shape: stages ``lowering`` 1 + ``parse`` per shape.
    Inputs and outputs are NumPy arrays; ``call_breakdown()`` splits the last
    call into interpretation and overhead.
``jax_export``
    jax form -> ``jax.export`` with ``symbolic_shape`` (bounds as constraints
    ``b <= max``), in ``prepare`` -> that module's own text on our XLA
    executor (its ``shape_assertion`` custom calls are checked during
    refinement). Stages: ``export`` 1 + ``xla`` per shape; in ``bucketed``
    mode (no constraints) ``xla`` once per bucket, the assertions checked by
    refinement alone on each new concrete shape. Inputs are cast to
    the module's dtypes (jax canonicalises int64 -> int32) by ``convert``.

Each call of an XLA program is: look up the executable by the arguments'
shapes, ``execute_sharded``, return device arrays; ``sync`` waits on them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .base import Backend, Counter, Program, Unsupported, torch_dims
from .torch_export import NarrowedExport, Narrowing


class OutsideExported(Unsupported):
    """Sizes where a torch.export runtime assertion of the lowered program is false (a
    branch the export took at the sample's sizes, deferred to run time): outside what the
    one exported program computes, reported apart from errors, as ``out_of_range``."""

    status = "out_of_range"


LOWERING = Counter("ours", "torch.export + our StableHLO lowering of the program")
XLA = Counter(
    "ours",
    "our XLA executor compiles @main (PJRT CPU compile_and_load): refined to each new "
    "concrete argument shape, or once per bounded module / per bucket (padded entry)",
)
#: per-shape work that is not a compile (``Backend.work_counters``)
REFINE = Counter(
    "ours",
    "MLIR parse + shape refinement of the module at each new concrete argument shape, to "
    "check its shape assertions; compiles nothing (the bucket's or bound's executable runs it)",
)
#: what the XLA stages' compile time includes
XLA_SCOPE = (
    "per new shape, bucket or bound: our refinement of @main to static shapes (time 'xla_refine'; "
    "for a padded entry also the bounded rewrite) + the XLA CPU compile ('xla'); refinement at a new "
    "shape that compiles nothing is work 'refine', not compile time"
)


def xla_reporting(program):
    """``(stats, on_compile, on_check)`` for an XLA program of ``program``'s job:
    each compile counted in stage ``xla`` with the XLA compile's seconds, the
    refinement before it timed as ``xla_refine`` (no count of its own), and
    each per-shape check counted as work ``refine``."""
    from engines.stablehlo.execution.xla import XlaStats

    stats = XlaStats()

    def on_compile(seconds, why):
        refine = stats.refine_seconds[-1] if stats.refine_seconds else 0.0
        program.count("xla", 1, max(seconds - refine, 0.0), why)
        program.add_seconds("xla_refine", refine)

    return stats, on_compile, lambda seconds: program.count_work("refine", seconds)


def xla_executor(program, module, check=None):
    """The XLA program (``engines.stablehlo.xla_program``) that runs ``module`` in
    ``program``'s mode, its compiles counted on ``program``."""
    from engines.stablehlo import xla_program
    from engines.stablehlo.execution.xla import DataDependentSize

    stats, report, on_check = xla_reporting(program)
    try:
        return xla_program(module, program.mode, on_compile=report, stats=stats, on_check=on_check, check=check)
    except DataDependentSize as e:  # refused before any compile: the job is unsupported, not an error
        raise Unsupported(str(e), stage="xla") from e  # a module we built that XLA's executor cannot run


PARSE = Counter("ours", "the interpreter worker parses/specialises the module for a new concrete argument shape")


def single(outs):
    """One output as itself, several as a tuple; a padded program's
    ``PaddedResults`` as it is (still on the device: ``to_numpy`` slices it)."""
    if not isinstance(outs, (list, tuple)):
        return outs
    return outs[0] if len(outs) == 1 else tuple(outs)


#: modes whose programs pad their inputs on the host (in ``convert``)
HOST_MODES = ("bucketed",)


class ModuleProgram(Program):
    """A job's program that runs one StableHLO module on an executor of
    ``engines.stablehlo`` (``executor``: made in ``prepare``, or by the first
    call where the module is exported at that call's shapes)."""

    def __init__(self, backend, case, mode, call=None):
        #: the engine's program for the module (``XlaProgram``, ``InterpreterProgram``, ...)
        self.executor: Any = None
        super().__init__(backend, case, mode, call)


class XlaArrays(ModuleProgram):
    """Inputs and outputs are jax arrays on the CPU device, dtypes kept (no x64
    canonicalisation, unless ``canonical_dtypes``). In the modes whose
    programs pad on the host (``host_modes``), ``convert`` stages the padded
    inputs on the device (the executor's ``convert``: its ``pad_s`` is the
    record's)."""

    host_modes: ClassVar[tuple[str, ...]] = HOST_MODES
    #: cast inputs within a kind to @main's dtypes (int64 -> int32), as jax does with x64 off
    canonical_dtypes: ClassVar[bool] = False

    @property
    def host(self) -> bool:
        """Whether this job's executor takes NumPy inputs (and pads them itself)."""
        return self.mode in self.host_modes

    def convert(self, arrays):
        from engines.stablehlo.execution.executors import device_put

        if not self.host:
            return device_put(arrays)
        if self.executor is None:  # the first call makes the executor at its shapes, and stages them itself
            return [np.ascontiguousarray(a) for a in arrays]
        args = self.executor.convert(arrays, canonicalize=self.canonical_dtypes)
        self.note_io("pad_s", args[0].pad_s)
        return args

    def sync(self, out):
        # timed: no import here (executors imports torch, so not at module level either)
        for o in out if isinstance(out, tuple) else (out,):
            o.block_until_ready()  # a NumPy output (work done in the call) fails here

    def to_numpy(self, out):
        from engines.stablehlo.execution.executors import to_host

        return to_host(out)


class InterpreterArrays(ModuleProgram):
    """Inputs and outputs are NumPy arrays; the executor runs on the backend's
    interpreter worker (:class:`InterpreterHost`)."""

    def interpreter_executor(self, module):
        """The module on the backend's interpreter worker, each parse counted as ``parse``."""
        from engines.stablehlo import InterpreterProgram

        return InterpreterProgram(module, self.backend.interpreter(), on_parse=lambda s, why: self.count("parse", 1, s, why))

    def convert(self, arrays):
        return [np.ascontiguousarray(a) for a in arrays]

    def sync(self, out):
        """Nothing to wait for: the worker answered with the outputs."""

    def to_numpy(self, out):
        from engines.stablehlo.execution.executors import to_host

        return to_host(out)

    def call_breakdown(self):
        """The last call's split (see ``InterpreterProgram.call_breakdown``), or None."""
        return self.executor.call_breakdown() if self.executor is not None else None


class XlaRuntime:
    """Descriptor mixin: ``startup`` loads jax's CPU client and MLIR tools."""

    def startup(self):
        from engines.stablehlo.execution.executors import load_runtime

        super().startup()  # type: ignore[misc]
        load_runtime()


class InterpreterHost(XlaRuntime):
    """Descriptor mixin: the reference interpreter's worker process, one per
    worker, started in ``startup`` and stopped in ``teardown``."""

    def __init__(self):
        super().__init__()
        #: the interpreter worker process (started by ``startup``)
        self.interp: Any = None

    def startup(self):
        super().startup()
        self.interpreter().start()

    def interpreter(self):
        """This worker's interpreter process (created on first use)."""
        from engines.stablehlo.execution.executors import InterpreterWorker

        if self.interp is None:
            self.interp = InterpreterWorker()
        return self.interp

    def teardown(self):
        self.close()

    def close(self):
        """Stop the interpreter worker."""
        if self.interp is not None:
            self.interp.close()


class TorchLowered(NarrowedExport):
    """Program mixin (before the arrays class): the first call exports the case's
    torch program and lowers it at its argument shapes; :meth:`executor_for`
    (the concrete program's) runs the module. Where torch.export refuses the declared
    range and suggests a narrower one, the export is retried with it as the torch_export
    peer's is (:class:`NarrowedExport`): the module serves the narrowed range, and a size
    outside it is ``out_of_range``."""

    case: Any
    mode: str
    executor: Any
    count: Any
    counting: Any

    def __init__(self, backend, case, mode):
        # built in prepare, as every torch-form backend builds it: a model case's library
        # import and model build (seconds) are not its first call's
        self.fn = case.torch_fn()
        self.narrowing = Narrowing()
        super().__init__(backend, case, mode)  # type: ignore[call-arg]

    def executor_for(self, module):
        raise NotImplementedError

    def convert(self, arrays):
        self._check_narrowed(arrays)
        return super().convert(arrays)  # type: ignore[misc]

    def run(self, *args):
        from engines.stablehlo.execution.module import AssertionFailed

        if self.executor is None:
            self.executor = self.executor_for(self.lower(args))
            self._check_narrowed(args)  # converted before the export narrowed: later calls check in convert
        try:
            return single(self.executor(*args))
        except AssertionFailed as e:  # the export's own range, as torch_export's narrowing is
            raise OutsideExported(
                f"outside the exported program's range (torch.export deferred a guard to a runtime assertion): {e}",
                stage="export",
            ) from e

    def lower(self, args):
        """Export ``fn`` (the case's torch program) and lower it at the first call's
        sizes: the module."""
        import torch

        from engines.stablehlo import Module
        from engines.torch_export_tools import export_sample, export_spec

        from .torch_export import export

        case, mode = self.case, self.mode
        shapes = ", ".join(str(tuple(a.shape)) for a in args)
        spec = export_spec(case.dynamic_axes(mode))
        sample = export_sample([torch.from_numpy(np.array(a)) for a in args], spec)
        reason = f"torch.export + StableHLO lowering of {case.name} ({mode}) at argument shapes {shapes}"
        if any(tuple(s.shape) != tuple(a.shape) for s, a in zip(sample, args, strict=False)):
            reason += f" (exported from a sample at {', '.join(str(tuple(s.shape)) for s in sample)}: every dynamic dim >= 2)"
        with self.counting("lowering", reason):
            ep = self.export_program(export, sample)
            return Module(self.stablehlo(ep), f"{case.name} ({mode})", [inp.name for inp in case.inputs])

    def export_program(self, export, sample):
        """The exported program of ``fn`` at the torch tensors ``sample``, by ``export``
        (:func:`backends.torch_export.export`); a lowering that needs another export overrides this."""
        dims = tuple(torch_dims(self.case, self.mode))
        return export(self.fn, sample, dims, self.case.name, oblivious_retry=True, narrow=self.narrowing)

    def stablehlo(self, ep) -> str:
        """The StableHLO text of the exported program ``ep``: our lowering (another
        lowering's program overrides this); refused as :class:`Unsupported`."""
        from engines.stablehlo import LoweringError, lower

        try:
            return lower(ep, bounded=(self.mode == "bounded"))
        except LoweringError as e:
            raise Unsupported(f"StableHLO lowering: {e}", stage="lowering") from e


class StablehloTorch(XlaRuntime, Backend):
    """A torch-form backend that exports and lowers at the first call's sizes
    (its ``program`` class: :class:`TorchLowered` + the arrays it runs on)."""

    forms = ("torch",)
    modes = ("bounded", "unbounded")
    requires = ("torch", "jax", "jaxlib")
    preload = ("jax", "jax.numpy")  # XLA's runtime
    warmup = ("torch._dynamo", "torch.export._trace")  # torch.export
    program: ClassVar[type[Program]]

    def prepare(self, case, mode):
        return self.program(self, case, mode)
