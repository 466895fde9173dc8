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

import numpy as np

from .base import Backend, Counter, Unsupported, torch_dims

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


def xla_reporting(backend):
    """``(stats, on_compile, on_check)`` for an XLA program of ``backend``:
    each compile counted in stage ``xla`` with the XLA compile's seconds, the
    refinement before it timed as ``xla_refine`` (no count of its own), and
    each per-shape check counted as work ``refine``."""
    from engines.stablehlo.execution.xla import XlaStats

    stats = XlaStats()

    def on_compile(seconds, why):
        refine = stats.refine_seconds[-1] if stats.refine_seconds else 0.0
        backend.count("xla", 1, max(seconds - refine, 0.0), why)
        backend.add_seconds("xla_refine", refine)

    return stats, on_compile, lambda seconds: backend.count_work("refine", seconds)


PARSE = Counter("ours", "the interpreter worker parses/specialises the module for a new concrete argument shape")


def single(outs):
    """One output as itself, several as a tuple; a padded program's
    ``PaddedResults`` as it is (still on the device: ``to_numpy`` slices it)."""
    if not isinstance(outs, (list, tuple)):
        return outs
    return outs[0] if len(outs) == 1 else tuple(outs)


#: modes whose programs pad their inputs on the host (in ``convert``)
HOST_MODES = ("bucketed",)


class XlaArrays:
    """Mixin: inputs and outputs are jax arrays on the CPU device, dtypes kept
    (no x64 canonicalisation, unless ``canonical_dtypes``). In the modes whose
    programs pad on the host (``host_modes``), ``convert`` stages the padded
    inputs on the device (the program's ``convert``: its ``pad_s`` is the
    record's); ``startup`` loads jax's CPU client and MLIR tools."""

    host_modes = HOST_MODES
    #: cast inputs within a kind to @main's dtypes (int64 -> int32), as jax does with x64 off
    canonical_dtypes = False

    def startup(self):
        from engines.stablehlo.execution.executors import load_runtime

        super().startup()
        load_runtime()

    def host_inputs(self, mode) -> None:
        """Set by ``prepare``: whether this job's program takes NumPy inputs."""
        self._host = mode in self.host_modes

    def convert(self, arrays):
        from engines.stablehlo.execution.executors import device_put

        if not getattr(self, "_host", False):
            return device_put(arrays)
        program = getattr(self, "_program", None)
        if program is None:  # the first call makes the program at its shapes, and stages them itself
            return [np.ascontiguousarray(a) for a in arrays]
        args = program.convert(arrays, canonicalize=self.canonical_dtypes)
        self.note_io("pad_s", args[0].pad_s)
        return args

    def sync(self, out):
        # timed: no import here (executors imports torch, so not at module level either)
        for o in out if isinstance(out, tuple) else (out,):
            o.block_until_ready()  # a NumPy output (work done in the call) fails here

    def to_numpy(self, out):
        from engines.stablehlo.execution.executors import to_host

        return to_host(out)


class InterpreterHost:
    """Mixin: the reference interpreter's worker process, started in ``startup``;
    inputs and outputs are NumPy arrays."""

    def startup(self):
        from engines.stablehlo.execution.executors import load_runtime

        super().startup()
        load_runtime()
        self.interpreter().start()

    def interpreter(self):
        """This backend's interpreter worker (created on first use)."""
        from engines.stablehlo.execution.executors import InterpreterWorker

        if getattr(self, "_interp", None) is None:
            self._interp = InterpreterWorker()
        return self._interp

    def host_inputs(self, mode) -> None:
        """Inputs are always NumPy arrays here."""

    def convert(self, arrays):
        return [np.ascontiguousarray(a) for a in arrays]

    def sync(self, out):
        """Nothing to wait for: the worker answered with the outputs."""

    def to_numpy(self, out):
        from engines.stablehlo.execution.executors import to_host

        return to_host(out)

    def call_breakdown(self):
        """The last call's split (see ``InterpreterProgram.call_breakdown``), or None."""
        program = getattr(self, "_program", None)
        return program.call_breakdown() if program is not None else None

    def teardown(self):
        self.close()

    def close(self):
        """Stop the interpreter worker."""
        if getattr(self, "_interp", None) is not None:
            self._interp.close()


class StablehloTorch(Backend):
    """A torch-form backend that exports and lowers at the first call's sizes."""

    forms = ("torch",)
    modes = ("bounded", "unbounded")
    requires = ("torch", "jax", "jaxlib")
    preload = ("jax", "jax.numpy", "torch._dynamo", "torch.export._trace")  # XLA's runtime; torch.export

    def prepare(self, case, mode):
        self._job = (case, mode)
        self._program = None
        state = {}
        self.host_inputs(mode)
        # built here, as every torch-form backend builds it: a model case's library import
        # and model build (seconds) are not its first call's
        fn = case.torch_fn()

        def program(*args):
            run = state.get("run")
            if run is None:
                run = state["run"] = self._program_for(case, mode, args, fn)
            return single(run(*args))

        return program

    def _program_for(self, case, mode, args, fn):
        """Export ``fn`` (the case's torch program) and lower it at the first call's
        sizes; this backend's program for the module."""
        import torch

        from engines.stablehlo import LoweringError, Module, lower
        from engines.torch_export_tools import export_sample

        from .torch_export import export

        shapes = ", ".join(str(tuple(a.shape)) for a in args)
        spec = [{ax: (d.name, max(2, d.min), d.max) for ax, d in axes.items()} for axes in case.dynamic_axes(mode)]
        sample = export_sample([torch.from_numpy(np.array(a)) for a in args], spec)
        reason = f"torch.export + StableHLO lowering of {case.name} ({mode}) at argument shapes {shapes}"
        if any(tuple(s.shape) != tuple(a.shape) for s, a in zip(sample, args, strict=False)):
            reason += f" (exported from a sample at {', '.join(str(tuple(s.shape)) for s in sample)}: every dynamic dim >= 2)"
        with self.counting("lowering", reason):
            ep = export(fn, sample, tuple(torch_dims(case, mode)), case.name, oblivious_retry=True)
            try:
                text = lower(ep, bounded=(mode == "bounded"))
            except LoweringError as e:
                raise Unsupported(f"StableHLO lowering: {e}") from e
            module = Module(text, f"{case.name} ({mode})", [inp.name for inp in case.inputs])
        self._program = self._executor_program(module, mode)
        return self._program
