"""The ``jax_export`` peer: ``jax.export`` with symbolic shapes, run by our executors.

    exp = export_jax(fn, [("b, 3", np.float32), ((4,), np.float32)], constraints=["b <= 64"])
    text = module_text(exp)                    # exp.mlir_module()
    outs = run(text, args, executor="interpreter")

jax expresses bounds as *constraints* (``b <= 64``), checked at run time by
``stablehlo.custom_call @shape_assertion(pred, ...)`` ops in ``@main``; its
types stay unbounded ``?``.  Executing that text:

* ``xla``: ``refine_polymorphic_shapes(enable_shape_assertions=True)``
  evaluates every assertion on the call's concrete shapes (they fold to
  constants) and fails with jax's own message when one is false; the
  assertions are gone from the refined module that XLA compiles.
* ``interpreter``: the reference interpreter has no ``custom_call`` (it would
  abort the process), so :func:`check_shape_assertions` first evaluates them
  the same way (shape refinement only, no XLA compile), then
  :func:`strip_shape_assertions` removes them (they have no results, so
  nothing else changes) and the stripped module runs shape-agnostically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .executors import execute
from .module import ExecutionError
from .xla import refine

ShapeSpec = str | tuple[int, ...] | Sequence


def export_jax(fn, specs: Sequence[tuple[ShapeSpec, object]], constraints: Iterable[str] = (), *, platforms=("cpu",)):
    """``jax.export`` of ``fn`` for args described by (shape, dtype) pairs.

    A shape given as a string (``"b, 3"``) is symbolic; all strings share one
    ``SymbolicScope`` carrying ``constraints`` (e.g. ``["b <= 64"]``).
    """
    import jax
    from jax import export

    scope = export.SymbolicScope(list(constraints))
    avals = []
    for shape, dtype in specs:
        if isinstance(shape, str):
            shape = export.symbolic_shape(shape, scope=scope)
        avals.append(jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype)))
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return export.export(jitted, platforms=platforms)(*avals)


def module_text(exported) -> str:
    """The exported module's own StableHLO text (``Exported.mlir_module()``)."""
    return exported.mlir_module()


def _walk(op, fn):
    for region in op.regions:
        for block in region.blocks:
            for child in list(block.operations):
                _walk(child.operation, fn)
                fn(child.operation)


def strip_shape_assertions(text: str) -> tuple[str, int]:
    """Remove ``custom_call @shape_assertion`` ops; returns (text, number removed)."""
    from jaxlib.mlir import ir

    from ..lowering.verify import make_context

    ctx = make_context()
    doomed = []
    with ctx:
        module = ir.Module.parse(text)

        def visit(op):
            if op.name == "stablehlo.custom_call" and "call_target_name" in op.attributes:
                if ir.StringAttr(op.attributes["call_target_name"]).value == "shape_assertion":
                    doomed.append(op)

        _walk(module.operation, visit)
        others = []

        def visit_cc(op):
            if op.name == "stablehlo.custom_call" and op not in doomed:
                others.append(ir.StringAttr(op.attributes["call_target_name"]).value)

        for op in doomed:
            op.erase()
        _walk(module.operation, visit_cc)
        if others:
            raise ExecutionError(f"module has custom_calls the interpreter cannot run: {sorted(set(others))}")
        module.operation.verify()
        return module.operation.get_asm(enable_debug_info=False), len(doomed)


def check_shape_assertions(text: str, args: Sequence[np.ndarray]) -> None:
    """Evaluate jax's shape assertions for these argument shapes (raises ExecutionError)."""
    args = [np.asarray(a) for a in args]
    check_shapes(text, [a.shape for a in args])


def check_shapes(text: str, shapes: Sequence[Sequence[int]]) -> None:
    """:func:`check_shape_assertions` on argument shapes (refinement only, no compile)."""
    refine(text, [(tuple(s), None) for s in shapes])


def run(text: str, args: Sequence[np.ndarray], executor: str = "xla", *, isolated: bool = True) -> list[np.ndarray]:
    """Execute a jax.export module with our executors (assertions checked)."""
    if executor == "xla":
        return execute(text, args, "xla")
    check_shape_assertions(text, args)
    stripped, _ = strip_shape_assertions(text)
    return execute(stripped, args, "interpreter", isolated=isolated)
