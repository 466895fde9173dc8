"""The ``stablehlo_interp`` backend: our StableHLO lowering on the StableHLO reference interpreter (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from .base import check_bounds
from .stablehlo_base import LOWERING, PARSE, InterpreterHost, StablehloTorch


class StablehloInterp(InterpreterHost, StablehloTorch):
    name = "stablehlo_interp"
    modes = ("bounded", "unbounded")
    counters = {"lowering": LOWERING, "parse": PARSE}
    compile_scope = (
        "torch.export + our StableHLO lowering, once, in the first call ('lowering') + the interpreter "
        "worker's parse/specialisation per new argument shape ('parse')"
    )

    def convert(self, arrays):
        check_bounds(*self._job, arrays)  # naming the dim, not only the argument's axis
        return super().convert(arrays)

    def _executor_program(self, module, mode):
        from engines.stablehlo import InterpreterProgram

        return InterpreterProgram(module, self.interpreter(), on_parse=lambda s, why: self.count("parse", 1, s, why))
