"""lazy_stablehlo: the lazy trace lowered to StableHLO with symbolic sizes, run by XLA.

Every call traces the case's torch form on lazy leaves (``engines.lazy``, as
the ``lazy`` backend does); a miss of the lazy graph cache is lowered through
torch.export and our StableHLO lowering (``engines.lazy.to_stablehlo``): size
variables become ``?`` dims (``#stablehlo.bounds`` in bounded mode) and size
arithmetic stays arithmetic (``x.shape[0] * 2`` is ``get_dimension_size ->
multiply`` feeding the broadcast). Our XLA executor refines ``@main`` to each
call's shapes and compiles it. Stages, each counted by us:

  trace     misses of the lazy graph cache (keyed by structure and guards;
            static mode: and the shapes), each traced to an FX module;
  lowering  torch.export of that module + the StableHLO lowering, per trace;
  xla       XLA compiles of a refined module, one per concrete argument shape.

static compiles every stage per shape (torch_xla LazyTensor's behaviour);
unbounded traces and lowers once, XLA per shape; bounded compiles every stage
once: the module runs on the compile-once bounded executor
(``BoundedXlaProgram``, inputs padded to the bounds on the host). A data-dependent
size (``nonzero``, a boolean mask) splits the step in two modules with the count
taken on the host between them, each compiled as above. Ops the path cannot
express (random ops, autograd, an aten op the lowering lacks) are ``unsupported``
rows naming the op.
"""

from __future__ import annotations

from .base import MODEL_COST, Counter, LeftOut
from .lazy import Lazy
from .stablehlo_base import XLA, XlaRuntime

TRACE, LOWERING = "trace", "lowering"


class LazyStablehlo(XlaRuntime, Lazy):
    name = "lazy_stablehlo"
    requires = ("torch", "jax", "jaxlib")
    preload = ("jax", "jax.numpy")  # XLA's runtime
    warmup = ("torch._dynamo", "torch.export._trace")  # torch.export
    counters = {
        TRACE: Counter(
            "ours",
            "misses of the lazy graph cache (keyed by graph structure, guards, and in static "
            "mode the concrete shapes), each traced to an FX module",
        ),
        LOWERING: Counter(
            "ours",
            "torch.export of the lazy graph's FX module (one Dim per size variable) + our "
            "StableHLO lowering (`?` dims, bounds in bounded mode)",
        ),
        "xla": XLA,
    }
    compile_scope = (
        "per lazy cache miss: the trace to FX ('trace') + torch.export and our StableHLO lowering "
        "('lowering') + the XLA CPU compile ('xla'; bounded: once, on the padded entry)"
    )
    mode_notes = {"bounded": "XLA compiles once: inputs padded to the bounds on the host, live sizes passed (BoundedXlaProgram)"}
    quick_leaves_out = (LeftOut("model_*", "*", MODEL_COST),)

    def context(self, program):
        from engines import lazy
        from engines.lazy.to_stablehlo import StablehloCompiler

        case, mode = program.case, program.mode
        compiler = StablehloCompiler(
            mode,
            case.name,
            on_lowering=lambda s, why: program.count(LOWERING, 1, s, why),
            on_xla=lambda s, why: program.count("xla", 1, s, why),
            minima={d.name: d.min for d in case.dynamic_dims},
        )

        def on_trace(seconds, reason):  # the context's compile time includes the lowering's
            program.count(TRACE, 1, max(seconds - compiler.lowering_s, 0.0), reason)

        return lazy.LazyContext(mode, on_compile=on_trace, compiler=compiler)
