"""The ``stablehlo_interp`` backend: our StableHLO lowering on the StableHLO reference interpreter (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from .base import BoundsChecked, LeftOut
from .stablehlo_base import LOWERING, PARSE, InterpreterArrays, InterpreterHost, StablehloTorch, TorchLowered


class StablehloInterpProgram(BoundsChecked, TorchLowered, InterpreterArrays):
    """Lowered at the first call, run on the backend's interpreter worker."""

    def executor_for(self, module):
        return self.interpreter_executor(module)


class StablehloInterp(InterpreterHost, StablehloTorch):
    name = "stablehlo_interp"
    modes = ("bounded", "unbounded")
    counters = {"lowering": LOWERING, "parse": PARSE}
    compile_scope = (
        "torch.export + our StableHLO lowering, once, in the first call ('lowering') + the interpreter "
        "worker's parse/specialisation per new argument shape ('parse')"
    )
    program = StablehloInterpProgram
    # measured in the quick run of 2026-12-01 (its records' timestamps): 530 of the
    # ~1,250 CPU-seconds of all the profile's jobs, seq_sdpa_mask 120 s a mode
    quick_leaves_out = (
        LeftOut(
            "*",
            "*",
            "the StableHLO reference interpreter runs the module stablehlo_xla compiles, op by op "
            "(5-120 s a job here): it runs on the reports' cases",
        ),
    )
