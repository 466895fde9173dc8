"""Lazy graph -> StableHLO -> XLA: the lazy trace's sizes kept symbolic into the compiler IR.

A second back end for :class:`~.runtime.LazyContext` (its ``compiler``):

    lazy graph --(passes.compile_graph)--> FX module reading sizes at run time
               (``size = t0.size(0); mul = size * 2; expand(t1, (mul, -1, -1))``)
    --(torch.export, one ``Dim`` per size variable of the graph)--> ExportedProgram
    --(engines.stablehlo.lowering.lower)--> StableHLO with ``?`` dims
               (``#stablehlo.bounds`` in bounded mode): ``get_dimension_size ->
               multiply -> dynamic_broadcast_in_dim``, the same size expression
               as the lazy IR's ``mul(%size0, 2)``
    --(engines.stablehlo.XlaProgram)--> XLA CPU, refined and compiled per
               concrete argument shape; a bounded module instead runs on
               ``BoundedXlaProgram``, compiled once (see :func:`executor`).

Shared size variables (a user dim name on several inputs) share one ``Dim``;
bounded variables get ``Dim(max=bound)``. Static mode has no variables: the
module is static and the lazy cache key holds the shapes, so every stage runs
once per shape. Inputs and outputs stay torch tensors (zero-copy DLPack to and
from jax arrays), so the lazy runtime is unchanged.

A data-dependent size (``nonzero``, a boolean mask) splits the step as on the
eager compiler (``ops.datadep``): the graph before it is one module, the count
is taken on the host, and the rest is a second module whose count is a size
variable (bounded by the operand's elements in bounded mode): two modules for
every count, a host step between them.

Ops the path cannot express raise :class:`UntraceableOp` naming the op: the lazy
path's own refusals (random ops, autograd) and any aten op the StableHLO
lowering lacks.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from engines.torch_export_tools import EXPORT_MIN, export_dim

from . import passes
from .ir import Graph
from .symbolic import var_of
from .tensor import UntraceableOp


def dynamic_shapes(g: Graph, bounded: bool, minima: dict | None = None) -> tuple:
    """Per graph input, ``{axis: Dim}`` for its symbolic dims (one Dim per variable).

    ``minima``: the least size of a user dim name (the case's ``min``: a conv1d
    over T needs T >= its kernel, and torch.export refuses a Dim whose range
    starts below what the program allows); at least :data:`engines.torch_export_tools.EXPORT_MIN`."""

    made: dict = {}
    out = []
    for leaf in g.inputs:
        spec = {}
        for axis, e in enumerate(leaf.shape):
            if e.is_const:
                continue
            name = var_of(e)
            if name is None:
                raise UntraceableOp(f"lazy_stablehlo: input dim {axis} is the size expression {g.fmt_expr(e)}")
            if name not in made:
                v = g.vars[name]
                least = max(EXPORT_MIN, (minima or {}).get(v.name, 0))
                made[name] = export_dim(g.namer(name), least, v.bound if bounded else None)
            spec[axis] = made[name]
        out.append(spec or None)
    return tuple(out)


def export(g: Graph, gm: torch.fx.GraphModule, bounded: bool, minima: dict | None = None):
    """``torch.export`` of the lazy graph's FX module over its current inputs
    (``minima``: see :func:`dynamic_shapes`)."""

    class Program(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm

        def forward(self, *xs):
            return self.gm(*xs)

    from engines.torch_export_tools import export_oblivious_retry, export_sample

    shapes = dynamic_shapes(g, bounded, minima)
    # sizes 0 and 1 of the first inputs would specialise: export from a sample (see export_sample)
    spec = [{ax: (d.__name__, d.min, d.max if isinstance(d.max, int) else None) for ax, d in (s or {}).items()} for s in shapes]
    args = tuple(export_sample([n.data for n in g.inputs], spec))
    try:
        return export_oblivious_retry(
            lambda **options: torch.export.export(
                Program(), args, dynamic_shapes=(shapes,) if any(shapes) else None, strict=False, **options
            )
        )
    except torch._dynamo.exc.UserError as e:  # a constraint violation: the program fixes a size
        from engines.torch_export_diagnosis import parse

        refused = UntraceableOp(f"lazy_stablehlo: torch.export could not keep the graph's sizes symbolic: {e}")
        found = parse(str(e))
        refused.diagnosis = found.as_record() if found is not None else None  # type: ignore[attr-defined]
        raise refused from e


def executor(module, on_compile, mode):
    """The program that runs a lowered module: for a bounded module the compile-once
    :class:`BoundedXlaProgram` (one executable for every size up to the bounds, NumPy
    in and out), else :class:`XlaProgram`, one compile per concrete argument shape."""
    from engines.stablehlo import xla_program

    return xla_program(module, mode, on_compile=on_compile)


class StablehloCompiler:
    """A ``LazyContext`` compiler: each lazy cache miss is exported, lowered to
    StableHLO and wrapped in an XLA program.

    ``on_lowering(seconds, reason)`` / ``on_xla(seconds, reason)`` report the
    stages (the lazy context reports the trace stage itself); ``modules``
    keeps every lowered text, in order; ``minima`` is the least size of each user
    dim name (see :func:`dynamic_shapes`)."""

    def __init__(self, mode: str, label: str = "lazy", on_lowering=None, on_xla=None, minima: dict | None = None):
        self.mode, self.label, self.minima = mode, label, dict(minima or {})
        self.on_lowering, self.on_xla = on_lowering, on_xla
        self.modules: list = []
        self.lowering_s = 0.0  # seconds of the last lowering (within the lazy context's compile time)

    def __call__(self, g: Graph, stats) -> passes.Compiled:
        from engines.stablehlo import LoweringError, Module, lower

        fx_entry = passes.compile_graph(g, stats)
        t0 = time.perf_counter()
        ep = export(g, fx_entry.kernel, self.mode == "bounded", self.minima)
        try:
            text = lower(ep, bounded=self.mode == "bounded")
        except LoweringError as e:
            raise UntraceableOp(f"lazy_stablehlo: {e}") from e
        shapes = ", ".join(str(tuple(n.data.shape)) for n in g.inputs)
        module = Module(text, f"{self.label} ({self.mode}) #{len(self.modules)}")
        dt = self.lowering_s = time.perf_counter() - t0
        stats["stablehlo"] += 1
        self.modules.append(text)
        if self.on_lowering is not None:
            self.on_lowering(
                dt, f"torch.export + StableHLO lowering of lazy graph #{len(self.modules) - 1} at input shapes {shapes}"
            )
        program = executor(module, self.on_xla, self.mode)
        run = _host_runner(program) if self.mode == "bounded" else _runner(program)
        return passes.Compiled(fx_entry.kernel, fx_entry.ir, text, run=run)


def _host_runner(program):
    """torch tensors in and out through NumPy (zero-copy views on CPU), for a program that
    pads on the host (the bounded executor)."""

    def run(*inputs):
        outs = program(*[t.detach().contiguous().numpy() for t in inputs])
        return [torch.from_numpy(np.require(o, requirements="W")) for o in outs]  # a read-only result is copied

    return run


def _runner(program):
    """torch tensors in, torch tensors out (DLPack, zero-copy), the module run by ``program``."""
    import jax
    import jax.dlpack

    wide = (torch.int64, torch.float64, torch.complex128)

    def run(*inputs):
        if any(t.dtype in wide for t in inputs):
            with jax.enable_x64(True):  # else jax narrows 64-bit arrays
                args = [jax.dlpack.from_dlpack(t.contiguous()) for t in inputs]
        else:
            args = [jax.dlpack.from_dlpack(t.contiguous()) for t in inputs]
        outs = program(*args)
        for o in outs:
            o.block_until_ready()
        return [torch.from_dlpack(o) for o in outs]

    return run
