"""Reference lowering of torch.export programs to StableHLO with dynamic dims.

    text = lower(ep)                                   # `?` / bounded dims, verified
    outs = execute(text, [x, y], executor="xla")       # bounded: 1 compile; `?`: per shape
    outs = execute(text, [x, y], bucketed=True)        # `?`: 1 compile per power-of-two bucket
    outs = execute(text, [x, y], executor="interpreter")  # stablehlo.eval_module, isolated
    compile_count()                                    # XLA compiles so far (exact)

Backends hold a program per module instead (no per-call conversion):

    prog = XlaProgram(Module(text, "case (mode)"), on_compile=report)
    out = prog(*prog.convert([x, y]))                  # device arrays in and out
"""

from .execution.executors import (
    BoundedXlaProgram,
    BucketedXlaProgram,
    ExecutionError,
    InterpreterCrashed,
    InterpreterExecutor,
    InterpreterLimitation,
    InterpreterProgram,
    InterpreterWorker,
    Module,
    PadderUnsupported,
    XlaExecutor,
    XlaProgram,
    compile_count,
    execute,
    interpreter_executor,
    xla_executor,
    xla_program,
    xla_stats,
)

#: the lowering's names, imported on first use: it imports torch, and the executors
#: serve jax_export where there is none (a jax release's environment)
_LOWERING = {
    "LoweringError": ".lowering.builder",
    "covered_ops": ".lowering.lower",
    "lower": ".lowering.lower",
    "param_arrays": ".lowering.lower",
    "reaching": ".lowering.registry",
}


def __getattr__(name: str):
    if name in _LOWERING:
        import importlib

        value = getattr(importlib.import_module(_LOWERING[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BoundedXlaProgram",
    "BucketedXlaProgram",
    "ExecutionError",
    "InterpreterCrashed",
    "InterpreterExecutor",
    "InterpreterLimitation",
    "InterpreterProgram",
    "InterpreterWorker",
    "LoweringError",
    "Module",
    "PadderUnsupported",
    "XlaExecutor",
    "XlaProgram",
    "compile_count",
    "covered_ops",
    "execute",
    "interpreter_executor",
    "lower",
    "param_arrays",
    "reaching",
    "xla_executor",
    "xla_program",
    "xla_stats",
]
