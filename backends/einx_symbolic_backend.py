"""einx_symbolic on torch tensors: one graph per call signature, not per shape.

``unbounded``: the symbolic graph is built once per case (sizes are read at
run time), so a case costs exactly 1 compile however many shapes it sees.
``static`` is offered for comparison: it emulates per-shape specialisation
with one graph per concrete input shape, i.e. one build per novel shape,
like einx 0.4.3 (a shape seen before finds its graph again). The emulation
keeps its per-shape graphs itself (``api.build_for``), outside einx_symbolic's
shared caches.

Counts are ours: unbounded reads einx_symbolic's log of graphs built through
its caches (process-wide, baselined; reason: the new signature); static counts
its own per-shape builds (reason: the new input shapes it keys on).
"""

from __future__ import annotations

from .base import Backend, Counter, TorchArrays

STAGE = "einx_symbolic_graph"


class EinxSymbolic(TorchArrays, Backend):
    name = "einx_symbolic"
    forms = ("einx",)
    modes = ("static", "unbounded")
    requires = ("einx", "torch")
    counters = {
        STAGE: Counter("ours", "graphs einx_symbolic builds: one per new call signature (static mode: one per "
                               "new input shape, emulated)")
    }
    mode_notes = {"static": "emulates einx 0.4.3's per-shape graph builds (one build per new input shape) for comparison"}

    def startup(self):
        import torch  # noqa: F401

        from backends import einx_symbolic  # noqa: F401

    def prepare(self, case, mode):
        from backends import einx_symbolic as ex
        from backends.einx_symbolic import api

        form = case.einx
        op = getattr(ex, form.op)
        description, params = form.description, dict(form.params)

        if mode == "static":
            graphs: dict = {}

            def program(*args):
                key = tuple(tuple(a.shape) for a in args)
                run = graphs.get(key)
                if run is None:
                    with self.counting(STAGE, f"new input shapes {key}"):
                        run = graphs[key] = api.build_for(form.op, description, args, params)
                return run(*args)
        else:

            def program(*args):
                return op(description, *args, **params)

        return program

    # -- compile counting: graphs built through einx_symbolic's caches ---------
    def system_stats(self):
        from backends.einx_symbolic import api

        return {STAGE: len(api.BUILD_LOG)}

    def system_seconds(self):
        from backends.einx_symbolic import api

        return {STAGE: api.BUILD_S[0]}

    def reset_counters(self):
        from backends.einx_symbolic import api

        super().reset_counters()
        self._log_pos = len(api.BUILD_LOG)

    def compile_reasons(self):
        from backends.einx_symbolic import api

        out = super().compile_reasons()
        pos = getattr(self, "_log_pos", 0)
        out += [f"{STAGE}: {r}" for r in api.BUILD_LOG[pos:]]
        self._log_pos = len(api.BUILD_LOG)
        return out
