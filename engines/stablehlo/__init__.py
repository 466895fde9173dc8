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
from .lowering.builder import LoweringError
from .lowering.lower import covered_ops, lower, param_arrays

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
    "xla_executor",
    "xla_program",
    "xla_stats",
]
