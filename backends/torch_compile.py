"""torch.compile: static = ``dynamic=False`` (one graph per shape); unbounded
and bounded = the case's dynamic axes marked with ``mark_dynamic`` (with
``max`` when bounded), every other axis static.

Counts: dynamo's ``unique_graphs`` (each graph is compiled once by the
chosen compiler backend, inductor by default). The recompile limit is lifted
and hitting it is an error, so a cache thrash is never silently run eagerly.
"""

from __future__ import annotations

import os

from .base import Backend, TorchArrays


class TorchCompile(TorchArrays, Backend):
    name = "torch_compile"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    #: the torch.compile backend; DYNSHAPE_TORCH_COMPILE_BACKEND overrides
    #: (``eager`` keeps dynamo's graph capture but skips inductor's C++ build)
    compiler = "inductor"

    def __init__(self, compiler: str | None = None):
        self.compiler = compiler or os.environ.get("DYNSHAPE_TORCH_COMPILE_BACKEND") or self.compiler

    def prepare(self, case, mode):
        import torch
        import torch._dynamo

        cfg = torch._dynamo.config
        cfg.recompile_limit = 10**6
        cfg.accumulated_recompile_limit = 10**6
        cfg.fail_on_recompile_limit_hit = True
        fn = case.torch_fn()
        if mode == "static":
            return torch.compile(fn, dynamic=False, backend=self.compiler)
        compiled = torch.compile(fn, backend=self.compiler)
        marks = [
            [(axis, max(2, dim.min), dim.max) for axis, dim in axes.items()] for axes in case.dynamic_axes(mode)
        ]

        def program(*args):
            for arg, spec in zip(args, marks):
                for axis, lo, hi in spec:
                    if hi is None:
                        # torch 2.13: min= without max= fails inside dynamo
                        # ("not simple sympy type NoneType"), so unbounded
                        # dims get the default range
                        torch._dynamo.mark_dynamic(arg, axis)
                    else:
                        torch._dynamo.mark_dynamic(arg, axis, min=lo, max=hi)
            return compiled(*args)

        return program

    def compile_stats(self):
        from torch._dynamo.utils import counters

        return {"dynamo_graph": int(counters["stats"]["unique_graphs"])}

    def compile_time_s(self):
        from torch._dynamo.utils import get_compilation_metrics

        total = sum((m.entire_frame_compile_time_s or 0.0) for m in get_compilation_metrics())
        return float(total)
