"""A lazy-tensor path that traces sizes symbolically.

Ops on a :class:`LazyTensor` record IR nodes; ``x.shape[0]`` is a
:class:`SymSize` whose arithmetic is traced (``sym_size -> mul -> expand``).
Materialising (``numpy()``, ``item()``, printing, ``bool()``, ``sync()``)
runs the pipeline in :mod:`.passes` -- trace, key, canonicalise,
materialise_sizes, lower_fx, codegen -- and caches the FX module by the
graph's symbolic structure, so a new shape reuses it.

    f = jit(lambda x, emb: emb.expand(x.shape[0] * 2, -1, -1))
    f(torch.zeros(3, 2), torch.ones(1, 1, 4)); f(torch.zeros(5, 2), torch.ones(1, 1, 4))
    f.ctx.compiles()  # 1

Layers (each imports only those before it): memo (the one bounded memo
table) -> symbolic (size variables and SymSize over :mod:`engines.sizes`) -> ir (nodes, dump, verify) -> tensor (the
proxy and its operators) -> replay (a step's calls, as the next step replays them) ->
ops (the registry: one module per op family) -> passes -> runtime (with misses: why a
key missed; hooks: what ``tracing()`` swaps into torch; steplog: a jit step's key) ->
jit (a function traced every call). A
leaf is made by ``LazyContext.leaf``, an op node by ``ops.registry.record``, and both are
logged by ``StepLog.add``; a step that repeats the last one replays its calls
(:mod:`.replay`). ``python -m benchmarks.scripts.lazy`` measures a step.
"""

from engines.sizes import Expr
from engines.sizes.modes import BoundError

from . import ops  # noqa: F401  (fills the op tables)
from .hooks import tracing
from .ir import IRError, dump, verify
from .jit import LazyFunction, jit
from .ops import ShapeError
from .runtime import Guard, LazyContext
from .symbolic import FinishedStep, SymBool, SymSize
from .tensor import LazyTensor, UntraceableOp

_default: LazyContext | None = None


def default_context() -> LazyContext:
    global _default
    if _default is None:
        _default = LazyContext("unbounded")
    return _default


def tensor(t, dims=True, bounds=None, ctx: LazyContext | None = None) -> LazyTensor:
    """A lazy leaf over the torch tensor ``t`` (see :meth:`LazyContext.input`)."""
    return (ctx or default_context()).input(t, dims, bounds)


def sync(*tensors: LazyTensor) -> None:
    """Materialise ``tensors`` (one graph, one compile on a cache miss)."""
    if tensors:
        tensors[0].ctx.sync(list(tensors))


def ir_dump(*tensors: LazyTensor) -> str:
    """The IR text of the pending graph of ``tensors``."""
    return tensors[0].ctx.dump(*tensors)


__all__ = [
    "BoundError",
    "Expr",
    "FinishedStep",
    "Guard",
    "IRError",
    "LazyContext",
    "LazyFunction",
    "LazyTensor",
    "ShapeError",
    "SymBool",
    "SymSize",
    "UntraceableOp",
    "default_context",
    "dump",
    "ir_dump",
    "jit",
    "sync",
    "tensor",
    "tracing",
    "verify",
]
