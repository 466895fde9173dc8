"""The per-shape ``xla`` program: ``@main`` refined to each call's concrete shapes and
compiled by the PJRT CPU client (:class:`XlaProgram`), and the jax runtime
helpers the backends share (``cpu``, ``load_runtime``, ``device_put``,
``to_host``).

Inputs are jax arrays on the CPU device. A call looks up the executable by
the arguments' shapes and runs it (``execute_sharded``), returning device
arrays. A new shape is checked against the signature (rank, static dims,
dtype, ``#stablehlo.bounds``), ``@main`` gets the call's concrete argument
types, ``jax.extend.mlir.refine_polymorphic_shapes`` propagates them (through
``get_dimension_size``/``dynamic_*``; it also evaluates jax's
``shape_assertion`` custom calls) and the PJRT CPU client compiles the result
(``compile_and_load``): one compile per new shape, reported to
``on_compile(seconds, reason)``.
"""
from __future__ import annotations

import functools
import io
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..lowering import types as T
from .module import ExecutionError, Module, Report, format_shapes, main_types


@functools.lru_cache(maxsize=None)
def cpu():
    """(PJRT CPU client, its first device)."""
    import jax.extend.backend as jb

    client = jb.get_backend("cpu")
    return client, client.devices()[0]


def load_runtime() -> None:
    """Import jax's MLIR tools and start the CPU client (for a backend's ``startup``)."""
    import jax.extend.mlir  # noqa: F401

    from ..lowering.verify import make_context

    cpu()
    make_context()


def device_put(arrays) -> list:
    """NumPy arrays -> jax arrays on the CPU device, dtypes kept (64-bit too)."""
    import jax

    _, dev = cpu()
    with jax.enable_x64(True):  # else device_put narrows int64/float64
        return list(jax.device_put([np.asarray(a) for a in arrays], dev))  # one batched transfer


def to_host(out):
    """A program's output (an array or a tuple of them) as NumPy."""
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


@dataclass
class XlaStats:
    compiles: int = 0
    cache_hits: int = 0
    compile_seconds: List[float] = field(default_factory=list)
    refine_seconds: List[float] = field(default_factory=list)


def refine(text: str, arg_types: Sequence, label: str = "module") -> bytes:
    """Module bytecode with @main specialised to ``arg_types`` [(shape, np dtype)] and refined."""
    import jax.extend.mlir as jm
    from jaxlib.mlir import ir

    from ..lowering.verify import make_context

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(T.strip_bounds(text))
        main = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                main = op
        if main is None:
            raise ExecutionError("module has no @main")
        from jaxlib.mlir.dialects import stablehlo

        ft = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        new_inputs = []
        for (shape, dtype), old in zip(arg_types, ft.inputs):
            elt = ir.RankedTensorType(old).element_type
            new_inputs.append(ir.RankedTensorType.get(list(shape), elt))
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, ft.results))
        block = main.regions[0].blocks[0]
        # Static arg types + a shape-only `stablehlo.convert` back to the
        # original `?` type (what jax does when it calls an exported module):
        # every use (incl. func.call into private functions) stays valid and
        # the refinement pass folds the converts away.
        for i, t in enumerate(new_inputs):
            arg = block.arguments[i]
            old_t = arg.type
            arg.set_type(t)
            if str(old_t) != str(t):
                conv = stablehlo.convert(old_t, arg, ip=ir.InsertionPoint.at_block_begin(block))
                arg.replace_all_uses_except(conv, conv.owner.operation)
        buf = io.BytesIO()
        module.operation.write_bytecode(file=buf)
        bytecode = buf.getvalue()
    try:
        return jm.refine_polymorphic_shapes(bytecode, enable_shape_assertions=True, validate_static_shapes=True,
                                           enable_shardy=True)
    except Exception as e:
        raise ExecutionError(f"{label}: shape refinement failed for argument shapes "
                             f"{format_shapes(s for s, _ in arg_types)}: {e}") from e


def result_handlers(refined: bytes, label: str) -> list:
    """jax's C++ result handlers for the refined module's (static) results:
    ``execute_sharded(...).consume_with_handlers`` turns the raw buffers into
    jax arrays without the Python work of ``disassemble_into_single_device_arrays``."""
    import jax
    from jax._src import core
    from jaxlib import xla_client as xc

    _, dev = cpu()
    sharding = jax.sharding.SingleDeviceSharding(dev)
    handlers = []
    for i, (shape, dt, _) in enumerate(main_types(refined)[1]):
        if None in shape or dt not in T.MLIR_TO_NUMPY:
            raise ExecutionError(f"{label}: result {i} is {dt}{list(shape)} after refinement: not static / unknown dtype")
        aval = core.ShapedArray(shape, T.MLIR_TO_NUMPY[dt])
        handlers.append(xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True))
    return handlers


class XlaProgram:
    """``@main`` of one module on XLA CPU: one executable per concrete argument shapes.

    Call it on the jax arrays :meth:`convert` makes; it returns a list of jax
    arrays (not waited for)."""

    def __init__(self, module: Module, on_compile: Optional[Report] = None, stats: Optional[XlaStats] = None):
        self.module = module
        self.on_compile = on_compile
        self.stats = stats if stats is not None else XlaStats()
        self._exes: Dict[tuple, tuple] = {}

    def convert(self, arrays, canonicalize: bool = False) -> list:
        """NumPy inputs -> device arrays in @main's dtypes (see :meth:`Module.cast`)."""
        return device_put(self.module.cast(arrays, canonicalize))

    def __call__(self, *args) -> list:
        hit = self._exes.get(tuple([a.shape for a in args]))
        if hit is None:
            hit = self._compile(args)
        exe, handlers = hit
        return exe.execute_sharded(args).consume_with_handlers(handlers)

    def _compile(self, args) -> tuple:
        import jax

        shapes = self.module.admit(args, jax.Array, "the device arrays")
        client, _ = cpu()
        t0 = time.perf_counter()
        refined = refine(self.module.text, [(s, a.dtype) for s, a in zip(shapes, args)], self.module.label)
        t1 = time.perf_counter()
        exe = client.compile_and_load(refined, client.devices()[:1])
        handlers = result_handlers(refined, self.module.label)
        t2 = time.perf_counter()
        self.stats.compiles += 1
        self.stats.refine_seconds.append(t1 - t0)
        self.stats.compile_seconds.append(t2 - t1)
        if self.on_compile is not None:
            self.on_compile(t2 - t0, f"new argument shapes {format_shapes(shapes)} for {self.module.label}")
        self._exes[shapes] = hit = (exe, handlers)
        return hit
