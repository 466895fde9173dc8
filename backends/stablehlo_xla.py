"""The ``stablehlo_xla`` backend: our StableHLO lowering of torch.export programs, on XLA CPU (see :mod:`backends.stablehlo_base`)."""

from __future__ import annotations

from .base import MODEL_COST, BoundsChecked, LeftOut
from .stablehlo_base import LOWERING, REFINE, XLA, XLA_SCOPE, StablehloTorch, TorchLowered, XlaArrays, xla_executor


class StablehloXlaProgram(BoundsChecked, TorchLowered, XlaArrays):
    """Lowered at the first call, run by the mode's XLA program; bounded and
    bucketed inputs padded on the host. ``convert`` names the case's dim of an
    input above its bound, not only the argument's axis."""

    host_modes = ("bounded", "bucketed")

    def executor_for(self, module):
        return xla_executor(self, module)


# the quick profile keeps the bounded row (one lowering + one XLA compile for every size)
# on one model of each kind (GPT-2, BERT, GCN): the other six's lowering and bounded XLA compile
# took 1-9 s each on 2026-12-03 (under load), ~1 min that `make test`'s gate (this profile) cannot spare
_MODEL_BOUNDED = (
    MODEL_COST + ": the StableHLO bounded row runs on one model of each kind (GPT-2, BERT, GCN); "
    "the others' lowering and bounded XLA compile take 1-9 s each, ~1 min the gate does not spend"
)


class StablehloXla(StablehloTorch):
    name = "stablehlo_xla"
    modes = ("bounded", "unbounded", "bucketed")
    counters = {"lowering": LOWERING, "xla": XLA}
    work_counters = {"refine": REFINE}
    compile_scope = "torch.export + our StableHLO lowering, once, in the first call ('lowering'); " + XLA_SCOPE
    program = StablehloXlaProgram
    quick_leaves_out = (
        LeftOut("model_[lvrs]*", "bounded", _MODEL_BOUNDED),
        LeftOut("model_gat", "bounded", _MODEL_BOUNDED),
        LeftOut("model_*", "unbounded", MODEL_COST + " (an XLA compile per shape, by construction)"),
    )
