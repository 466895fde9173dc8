"""einx_symbolic on torch tensors: one graph per call signature, not per shape.

``unbounded``: the symbolic graph is built once per case (sizes are read at
run time), so a case costs exactly 1 compile however many shapes it sees.
``static`` is offered for comparison: it emulates per-shape specialisation
with one graph cache per concrete input shape, i.e. one build per novel shape,
like einx 0.4.3 (a shape seen before finds its graph again).
"""

from __future__ import annotations

from .base import Backend, TorchArrays


class EinxSymbolic(TorchArrays, Backend):
    name = "einx_symbolic"
    forms = ("einx",)
    modes = ("static", "unbounded")
    requires = ("einx", "torch")

    def prepare(self, case, mode):
        from backends import einx_symbolic as ex

        form = case.einx
        op = getattr(ex, form.op)
        description, params = form.description, dict(form.params)

        from backends.einx_symbolic import api

        if mode == "static":

            def program(*args):
                api.select_cache(tuple(tuple(a.shape) for a in args))
                return op(description, *args, **params)
        else:

            def program(*args):
                return op(description, *args, **params)

            api.select_cache(None)

        return program

    def compile_stats(self):
        from backends import einx_symbolic as ex

        return {"einx_symbolic_graph": ex.compile_count()}
