"""Running StableHLO text with `?` (and bounded) dims: the default executors.

A :class:`~.module.Module` is the text with ``@main``'s signature, parsed and
hashed once. A program runs one module; it takes the inputs its ``convert``
makes (``@main``'s dtypes), so a call does no host work beyond a cache lookup.

``xla`` (:class:`~.xla.XlaProgram`, :mod:`.xla`)
    refine ``@main`` to the call's concrete shapes and compile it with the
    PJRT CPU client: one compile per new shape. A module with
    ``#stablehlo.bounds`` compiles once for every size up to its bounds
    (:class:`~.xla_padded.BoundedXlaProgram`); ``bucketed`` compiles a `?` module
    once per power-of-two bucket (:class:`~.xla_padded.BucketedXlaProgram`).
``interpreter`` (:class:`~.interpreter.InterpreterProgram`, :mod:`.interpreter`)
    the reference interpreter, in a worker subprocess by default (an abort
    becomes :class:`InterpreterCrashed`); one parse per new shape, no compile.

This module holds the default executors behind :func:`execute` and re-exports
the names the backends use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# re-exported: this module is the executors' one import point (engines.stablehlo, backends)
from .interpreter import (  # noqa: F401
    InterpreterCrashed,
    InterpreterExecutor,
    InterpreterLimitation,
    InterpreterProgram,
    InterpreterWorker,
    LocalInterpreter,
)
from .module import ExecutionError, Module, Report, digest, format_shapes, main_signature  # noqa: F401
from .xla import (  # noqa: F401
    XlaProgram,
    XlaStats,
    cpu,
    device_put,
    load_runtime,
    refine,
    to_host,
)
from .xla_executor import XlaExecutor
from .xla_padded import BoundedXlaProgram, BucketedXlaProgram, PadderUnsupported  # noqa: F401


def xla_program(
    module: Module,
    mode: str,
    on_compile: Report | None = None,
    stats: XlaStats | None = None,
    on_check=None,
    check=None,
):
    """The XLA program that runs ``module`` in ``mode`` (the one place the mode
    picks it): ``bucketed``, one compile per bucket (:class:`BucketedXlaProgram`,
    ``check(shapes)`` once per new concrete shape); ``bounded`` on a module whose
    ``@main`` carries ``#stablehlo.bounds`` (our lowering's), one compile for
    every size up to them (:class:`BoundedXlaProgram`); else, a module without
    bounds (jax.export's constraints, torch_xla's dropped bounds) included, one
    compile per concrete argument shape (:class:`XlaProgram`)."""
    if mode == "bucketed":
        return BucketedXlaProgram(module, on_compile=on_compile, stats=stats, check=check, on_check=on_check)
    if mode == "bounded" and any(bounds is not None for _, _, bounds in module.inputs):
        return BoundedXlaProgram(module, on_compile=on_compile, stats=stats, on_check=on_check)
    return XlaProgram(module, on_compile=on_compile, stats=stats)


_XLA = XlaExecutor()
_INTERP = {True: None, False: None}


def xla_executor() -> XlaExecutor:
    return _XLA


def interpreter_executor(isolated: bool = True) -> InterpreterExecutor:
    if _INTERP[isolated] is None:
        _INTERP[isolated] = InterpreterExecutor(isolated=isolated)
    return _INTERP[isolated]


def execute(
    text: str,
    args: Sequence,
    executor: str = "xla",
    *,
    isolated: bool = True,
    on_unsupported: str = "error",
    bucketed: bool = False,
) -> list[np.ndarray]:
    """Run ``@main`` of StableHLO ``text`` on NumPy ``args``; returns NumPy arrays.

    executor: "xla" (a module with ``#stablehlo.bounds`` compiles once for every
    size up to its bounds, :mod:`.xla_padded`; where XLA's dynamic padder cannot
    serve it this raises naming the op, unless ``on_unsupported="per_shape"``;
    ``bucketed=True`` compiles a `?` module once per power-of-two bucket of its
    sizes; otherwise refine + compile per concrete shape, cached) or
    "interpreter" (reference interpreter; ``isolated`` runs it in a worker
    subprocess so an abort becomes :class:`InterpreterCrashed`).
    """
    if executor == "xla":
        return _XLA.run(text, args, on_unsupported, bucketed)
    if executor in ("interpreter", "interp"):
        return interpreter_executor(isolated).run(text, args)
    raise ValueError(f"unknown executor {executor!r} (want 'xla' or 'interpreter')")


def compile_count() -> int:
    """XLA compiles done by the default xla executor in this process."""
    return _XLA.stats.compiles


def xla_stats() -> XlaStats:
    return _XLA.stats
