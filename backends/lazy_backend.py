"""lazy: the lazy-tensor path with symbolic sizes (``backends.lazy``).

Every call traces the case's torch form on lazy leaves and syncs the output;
the compile cache is keyed by the graph's structure. Modes:
  static     sizes collapse to constants, the key holds the concrete shapes:
             one compile per shape (what torch_xla's LazyTensor does);
  unbounded  the case's dynamic dims are size variables: one compile;
  bounded    as unbounded with the case's maxima in the key: one compile for
             the bound; an input past it raises ``BoundError`` naming dim and bound.
Guards (sizes the program forced) are reported per distinct guard.
"""

from __future__ import annotations

from .base import Backend, TorchArrays, Unsupported

_contexts: list = []


class Lazy(TorchArrays, Backend):
    name = "lazy"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)

    def prepare(self, case, mode):
        from backends import lazy

        axes = case.dynamic_axes(mode)
        dims = [{ax: d.name for ax, d in a.items()} for a in axes]
        bounds = [{ax: d.max for ax, d in a.items() if d.max is not None} for a in axes]
        fn = lazy.LazyFunction(case.torch_fn(), mode, dims, bounds)
        _contexts.append(fn)

        def program(*args):
            try:
                return fn(*args)
            except lazy.Unsupported as e:
                raise Unsupported(str(e)) from e

        return program

    def compile_stats(self):
        return {"lazy_fx": sum(f.ctx.compiles() for f in _contexts)}

    def compile_time_s(self):
        return sum(f.ctx.compile_time_s for f in _contexts)

    def guards(self):
        seen: dict = {}
        for f in _contexts:
            seen.update(f.guard_log)
        return list(seen)
