"""The ``stablehlo_xla`` backend: our StableHLO lowering of torch.export programs, on XLA CPU (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from .base import check_bounds
from .stablehlo_base import LOWERING, REFINE, XLA, XLA_SCOPE, StablehloTorch, XlaArrays, xla_reporting


class StablehloXla(XlaArrays, StablehloTorch):
    name = "stablehlo_xla"
    modes = ("bounded", "unbounded", "bucketed")
    host_modes = ("bounded", "bucketed")
    counters = {"lowering": LOWERING, "xla": XLA}
    work_counters = {"refine": REFINE}
    compile_scope = "torch.export + our StableHLO lowering, once, in the first call ('lowering'); " + XLA_SCOPE

    def convert(self, arrays):
        check_bounds(*self._job, arrays)  # naming the dim, not only the argument's axis
        return super().convert(arrays)

    def _executor_program(self, module, mode):
        from engines.stablehlo import BoundedXlaProgram, BucketedXlaProgram, XlaProgram

        stats, report, check = xla_reporting(self)
        if mode == "bounded":
            return BoundedXlaProgram(module, on_compile=report, stats=stats, on_check=check)
        if mode == "bucketed":
            return BucketedXlaProgram(module, on_compile=report, stats=stats, on_check=check)
        return XlaProgram(module, on_compile=report, stats=stats)
