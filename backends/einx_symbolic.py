"""einx_symbolic on torch tensors: one graph per call signature, not per shape.

``unbounded``: the symbolic graph is built once per case (sizes are read at
run time), so a case costs exactly 1 compile however many shapes it sees.
``static`` is offered for comparison: it emulates per-shape specialisation
with one graph per concrete input shape, i.e. one build per novel shape,
like einx 0.4.3 (a shape seen before finds its graph again, process-wide as
einx's cache is): ``api.specialised`` ops, whose signature includes the input
shapes, in einx_symbolic's one cache.

Counts are ours, both modes: einx_symbolic's log of graphs built (process-wide,
baselined), with its reasons (the new signature; static: the new input shapes).
"""

from __future__ import annotations

from .base import Backend, Counter, Program, TorchArrays

STAGE = "einx_symbolic_graph"


class _Specialised:
    """einx_symbolic's ops, each with one graph per input shapes (``api.specialised``)."""

    def __init__(self, api):
        self._api = api

    def __getattr__(self, op):
        fn = self._api.specialised(op)
        setattr(self, op, fn)
        return fn


class SymbolicProgram(TorchArrays, Program):
    """The case's einx call bound to einx_symbolic; its build log, baselined when it is made."""

    def system_stats(self):
        from engines.einx_symbolic import api

        return {STAGE: len(api.BUILD_LOG)}

    def system_seconds(self):
        from engines.einx_symbolic import api

        return {STAGE: api.BUILD_S[0]}

    def system_reason_logs(self):
        from engines.einx_symbolic import api

        return {STAGE: api.BUILD_LOG}


class EinxSymbolic(Backend):
    name = "einx_symbolic"
    forms = ("einx",)
    modes = ("static", "unbounded")
    requires = ("einx", "torch")
    warmup = ("torch._dynamo",)  # einx 0.4.3 imports it (einx itself is no zygote's: harness.forkserver)
    counters = {
        STAGE: Counter(
            "ours", "graphs einx_symbolic builds: one per new call signature (static mode: one per new input shape, emulated)"
        )
    }
    compile_scope = "einx_symbolic's graph builds (parse, solve, codegen of a call signature) as its own build log times them"
    mode_notes = {"static": "emulates einx 0.4.3's per-shape graph builds (one build per new input shape) for comparison"}

    def startup(self):
        import torch  # noqa: F401

        from engines import einx_symbolic  # noqa: F401

    def prepare(self, case, mode):
        from engines import einx_symbolic as ex
        from engines.einx_symbolic import api

        return SymbolicProgram(self, case, mode, case.einx.bind(_Specialised(api) if mode == "static" else ex))
