"""The ``stablehlo_xla`` backend: our StableHLO lowering of torch.export programs, on XLA CPU (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from .base import check_bounds
from .stablehlo_base import LOWERING, XLA, StablehloTorch, XlaArrays


class StablehloXla(XlaArrays, StablehloTorch):
    name = "stablehlo_xla"
    modes = ("bounded", "unbounded", "bucketed")
    host_modes = ("bounded", "bucketed")
    counters = {"lowering": LOWERING, "xla": XLA}

    def convert(self, arrays):
        check_bounds(*self._job, arrays)  # naming the dim, not only the argument's axis
        return super().convert(arrays)

    def _executor_program(self, module, mode):
        from engines.stablehlo import BoundedXlaProgram, BucketedXlaProgram, XlaProgram

        report = lambda s, why: self.count("xla", 1, s, why)  # noqa: E731
        if mode == "bounded":
            return BoundedXlaProgram(module, on_compile=report)
        if mode == "bucketed":
            return BucketedXlaProgram(module, on_compile=report)
        return XlaProgram(module, on_compile=report)
