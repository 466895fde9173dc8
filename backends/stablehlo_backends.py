"""Harness backends for the StableHLO reference path (``backends/stablehlo``).

``stablehlo_xla``
    torch form -> torch.export with ``Dim`` (``Dim(max=)`` in bounded mode)
    -> ``backends.stablehlo.lower`` (`?` / ``#stablehlo.bounds`` types) ->
    XLA CPU: refine to the call's shapes and compile once per concrete shape.
    Stages: ``lowering`` (1 export+lower) + ``xla`` (one per shape).
``stablehlo_interp``
    the same module on the StableHLO reference interpreter
    (``stablehlo.eval_module``), shape-agnostic: ``lowering`` 1, nothing else.
    It runs in an isolated worker subprocess, so an interpreter abort (ops it
    lacks) becomes an error row instead of killing the job's worker.
``jax_export``
    jax form -> ``jax.export`` with ``symbolic_shape`` (bounds as constraints
    ``b <= max``) -> that module's own text on our XLA executor (its
    ``shape_assertion`` custom calls are checked during refinement).
    Stages: ``export`` 1 + ``xla`` per shape.

Programs are lowered lazily on the first call (its sizes are the export
sample), like ``torch_export``; inputs and outputs are NumPy arrays.
"""

from __future__ import annotations

import time

from .base import Backend, Unsupported, torch_dims

_STATS: dict = {}


def _stats_for(name: str) -> dict:
    return _STATS.setdefault(name, {"lowering": 0, "export": 0, "lowering_s": 0.0})


def _single(outs):
    return outs[0] if len(outs) == 1 else tuple(outs)


class _StablehloTorch(Backend):
    forms = ("torch",)
    modes = ("bounded", "unbounded")
    requires = ("torch", "jax", "jaxlib")
    executor = "xla"

    def prepare(self, case, mode):
        from backends.stablehlo import LoweringError, execute, lower

        from .torch_export import export

        fn = case.torch_fn()
        dynamic = tuple(torch_dims(case, mode))
        state = {}
        _stats = _stats_for(self.name)

        def program(*args):
            text = state.get("text")
            if text is None:
                import torch

                t0 = time.perf_counter()
                ep = export(fn, [torch.from_numpy(a) for a in args], dynamic, case.name)
                try:
                    text = state["text"] = lower(ep, bounded=(mode == "bounded"))
                except LoweringError as e:
                    raise Unsupported(f"StableHLO lowering: {e}") from e
                _stats["lowering"] += 1
                _stats["lowering_s"] += time.perf_counter() - t0
            return _single(execute(text, args, executor=self.executor, isolated=True))

        return program


class StablehloXla(_StablehloTorch):
    name = "stablehlo_xla"
    executor = "xla"

    def compile_stats(self):
        from backends.stablehlo import compile_count

        return {"lowering": _stats_for(self.name)["lowering"], "xla": compile_count()}

    def compile_time_s(self):
        from backends.stablehlo import xla_stats

        s = xla_stats()
        return _stats_for(self.name)["lowering_s"] + sum(s.compile_seconds) + sum(s.refine_seconds)


class StablehloInterp(_StablehloTorch):
    name = "stablehlo_interp"
    executor = "interpreter"

    def compile_stats(self):
        return {"lowering": _stats_for(self.name)["lowering"]}

    def compile_time_s(self):
        return _stats_for(self.name)["lowering_s"]


class JaxExport(Backend):
    name = "jax_export"
    forms = ("jax",)
    modes = ("bounded", "unbounded")
    requires = ("jax", "jaxlib")

    def prepare(self, case, mode):
        import numpy as np

        from backends.stablehlo import jax_export as JE

        axes = case.dynamic_axes(mode)
        static = case.all_sizes({})
        specs, constraints, seen = [], [], set()
        for inp, spec in zip(case.inputs, axes):
            parts = []
            for i, ax in enumerate(inp.shape):
                if i in spec:
                    d = spec[i]
                    parts.append(d.name)
                    if d.name not in seen:
                        seen.add(d.name)
                        if d.max is not None:
                            constraints.append(f"{d.name} <= {d.max}")
                        if d.min > 1:
                            constraints.append(f"{d.name} >= {d.min}")
                else:
                    parts.append(str(static[ax] if isinstance(ax, str) else ax))
            specs.append((", ".join(parts) if parts else (), np.dtype(inp.dtype)))
        t0 = time.perf_counter()
        try:
            exp = JE.export_jax(case.jax_fn(), specs, constraints)
        except Exception as e:  # shape-polymorphism failures are the system's answer
            raise Unsupported(f"jax.export with symbolic shapes failed: {type(e).__name__}: {e}") from e
        text = JE.module_text(exp)
        _stats = _stats_for(self.name)
        _stats["export"] += 1
        _stats["lowering_s"] += time.perf_counter() - t0
        from backends.stablehlo.executors import main_signature
        from backends.stablehlo.types import MLIR_TO_NUMPY

        # jax canonicalises dtypes (x64 off: int64 -> int32), so the module's
        # @main takes what jax.jit would be given; convert like device_put does.
        want = [MLIR_TO_NUMPY.get(dt) for _, dt, _ in main_signature(text)[0]]

        def program(*args):
            args = [np.asarray(a, dtype=w) if w is not None and np.asarray(a).dtype.kind == w.kind else a
                    for a, w in zip(args, want)]
            return _single(JE.run(text, args, "xla"))

        return program

    def compile_stats(self):
        from backends.stablehlo import compile_count

        return {"export": _stats_for(self.name)["export"], "xla": compile_count()}

    def compile_time_s(self):
        from backends.stablehlo import xla_stats

        s = xla_stats()
        return _stats_for(self.name)["lowering_s"] + sum(s.compile_seconds) + sum(s.refine_seconds)
