"""The ``jax_export`` backend: jax.export modules with symbolic shapes on our XLA executor (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Backend, Counter, Unsupported, check_bounds
from .stablehlo_base import REFINE, XLA, XLA_SCOPE, XlaArrays, XlaRuntime, single, xla_executor


def jax_specs(case, mode):
    """``jax.export`` (shape spec, dtype) per input and the bound constraints of ``case`` in ``mode``."""
    axes = case.dynamic_axes(mode)
    static = case.all_sizes({})
    specs, constraints, seen = [], [], set()
    for inp, spec in zip(case.inputs, axes, strict=False):
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
    return specs, constraints


class JaxExportProgram(XlaArrays):
    """The module jax.export made in ``prepare`` (``exported``), on the mode's XLA program."""

    canonical_dtypes = True

    def __init__(self, backend, case, mode):
        #: the jax.export.Exported (the benchmark's jax.jit(exported.call) row runs it)
        self.exported: Any = None
        super().__init__(backend, case, mode)

    def run(self, *args):
        return single(self.executor(*args))

    def convert(self, arrays):
        """Device arrays in the module's dtypes (jax's x64-off canonicalisation).
        Bounded mode: an input above its bound is refused naming dim, size and
        bound (jax's shape assertion gives only the deficit)."""
        check_bounds(self.case, self.mode, arrays)
        if self.host:
            return super().convert(arrays)
        return self.executor.convert(arrays, canonicalize=True)


class JaxExport(XlaRuntime, Backend):
    name = "jax_export"
    forms = ("jax",)
    modes = ("bounded", "unbounded", "bucketed")
    # not torch: its executor (engines.stablehlo.execution) imports the lowering, which needs
    # torch, only on first use, so it runs in the jax 0.12 release environment, which has none
    requires = ("jax", "jaxlib")
    preload = ("jax", "jax.numpy")
    counters = {"export": Counter("instrumented", "jax.export.export calls"), "xla": XLA}
    work_counters = {"refine": REFINE}
    compile_scope = "jax.export of the jax form, once in prepare: jax's trace + lowering to StableHLO ('export'); " + XLA_SCOPE

    def prepare(self, case, mode):
        from engines.stablehlo import Module
        from engines.stablehlo.execution import jax_exported as JE

        program = JaxExportProgram(self, case, mode)
        specs, constraints = jax_specs(case, mode)
        shapes = ", ".join(f"({s})" for s, _ in specs)
        try:
            with program.counting(
                "export", f"jax.export of {case.name} ({mode}) for shapes {shapes} with constraints {constraints}"
            ):
                exp = JE.export_jax(case.jax_fn(), specs, constraints)
        except Exception as e:  # shape-polymorphism failures are the system's answer
            raise Unsupported(f"jax.export with symbolic shapes failed: {type(e).__name__}: {e}") from e
        program.exported = exp
        module = Module(JE.module_text(exp), f"{case.name} ({mode}, jax.export)", [inp.name for inp in case.inputs])
        # bucketed: the assertions checked by refinement alone on each new concrete shape
        program.executor = xla_executor(program, module, check=lambda shapes: JE.check_shapes(module.text, shapes))
        return program
