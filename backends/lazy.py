"""lazy: the lazy-tensor path with symbolic sizes (``engines.lazy``).

Every call traces the case's torch form on lazy leaves and syncs the output;
the compile cache is keyed by the graph's structure. Modes:
  static     sizes collapse to constants, the key holds the concrete shapes:
             one compile per shape (what torch_xla's LazyTensor does);
  unbounded  the case's dynamic dims are size variables: one compile;
  bounded    as unbounded with the case's maxima in the key: one compile for
             the bound; an input past it raises ``BoundError`` naming dim and bound;
  bucketed   static, on inputs padded on the host to their power-of-two
             bucket (``backends.padding``): one compile per bucket.
Guards (sizes the program forced) are reported per distinct guard.

Counts are ours (the lazy context's cache misses), recorded through the
backend's ledger with each compile's time and the part of the cache key
that was new (``engines.lazy.runtime.explain_miss``).
"""

from __future__ import annotations

from .base import MODEL_COST, Backend, Counter, LeftOut, Program, TorchArrays, Unsupported
from .padding import host_padding

STAGE = "lazy_fx"


class LazyProgram(TorchArrays, Program):
    """The case's torch form traced on lazy leaves every call (``engines.lazy``),
    its context's cache misses counted on this program (``Backend.context``)."""

    def __init__(self, backend, case, mode):
        from engines import lazy

        super().__init__(backend, case, mode)
        axes = case.dynamic_axes(mode)
        dims = [{ax: d.name for ax, d in a.items()} for a in axes]
        bounds = [{ax: d.max for ax, d in a.items() if d.max is not None} for a in axes]
        #: the lazy function (its ``guard_log``: the sizes the program forced)
        self.fn = lazy.LazyFunction(case.torch_fn(), mode, dims, bounds, ctx=backend.context(self))
        self.refused = lazy.UntraceableOp  # bound once: no import in the timed call

    def run(self, *args):
        try:
            return self.fn(*args)
        except self.refused as e:
            raise Unsupported(str(e), diagnosis=getattr(e, "diagnosis", None)) from e

    def guards(self):
        return list(self.fn.guard_log)


@host_padding("bucketed")
class Lazy(Backend):
    name = "lazy"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    counters = {
        STAGE: Counter(
            "ours",
            "misses of the lazy graph cache (keyed by graph structure, guards, and in static "
            "mode the concrete shapes), each lowered to one FX module",
        )
    }
    compile_scope = (
        "the lazy context's cache misses: tracing the lazy graph to an FX module + compiling it "
        "(our passes); the per-call trace that hits the cache is timed as the call"
    )
    quick_leaves_out = (LeftOut("model_*", "bounded", MODEL_COST + " (the unbounded row's trace, checked against the bound)"),)

    def startup(self):
        from engines import lazy  # noqa: F401  (imports torch and fills the op tables)

    def prepare(self, case, mode):
        return LazyProgram(self, case, mode)

    def context(self, program):
        """The lazy context of ``program``'s job: its cache misses are counted as ``lazy_fx``."""
        from engines import lazy

        return lazy.LazyContext(program.mode, on_compile=lambda seconds, reason: program.count(STAGE, 1, seconds, reason))
