"""The ``torch_mlir_stablehlo`` backend: torch-mlir's torch.export → StableHLO
lowering, on the same XLA executors as ours (:mod:`backends.stablehlo_xla`).

A second, independent lowering of the same exported program: the
differential check of ours. torch-mlir keeps ``?`` dims, but computes the
sizes its dynamic ops take in the ``shape``/``tensor``/``arith`` dialects and
keeps weights as ``dense_resource`` blobs, neither of which XLA's parser
takes; :mod:`engines.stablehlo.shape_dialect` rewrites both into StableHLO.
It writes no ``#stablehlo.bounds``, so bounded mode runs its module as the
unbounded one does (a compile per concrete shape), and says so beside every
bounded row. Stages: ``lowering`` (torch.export + torch-mlir + our rewrite, in
the first call) and ``xla``.
"""

from __future__ import annotations

from .base import MODEL_COST, Counter, LeftOut, Unsupported
from .stablehlo_base import REFINE, XLA, XLA_SCOPE, StablehloTorch
from .stablehlo_xla import StablehloXlaProgram

LOWERING = Counter(
    "ours",
    "torch.export + torch-mlir's fx.export_and_import(output_type='stablehlo') + our rewrite of its "
    "shape/tensor/arith size ops into StableHLO",
)


def lower_with_torch_mlir(ep) -> str:
    """StableHLO text of the exported program ``ep`` by torch-mlir
    (``fx.export_and_import(ep, output_type="stablehlo")``), its size
    arithmetic and weights written as StableHLO (:mod:`engines.stablehlo.shape_dialect`)
    so that XLA's parser takes it."""
    import warnings

    from torch_mlir import fx, ir

    from engines.stablehlo.shape_dialect import inline_resources, legalize

    with warnings.catch_warnings():  # its importer's pytree deprecation warning, once per export
        warnings.simplefilter("ignore", FutureWarning)
        module = fx.export_and_import(ep, output_type="stablehlo")
    legalize(module, ir)
    return inline_resources(str(module))


class TorchMlirProgram(StablehloXlaProgram):
    """Exported at the first call as ours is, lowered by torch-mlir."""

    host_modes = ("bucketed",)

    def stablehlo(self, ep) -> str:
        from torch_mlir.compiler_utils import TorchMlirCompilerError

        from engines.stablehlo.shape_dialect import ShapeDialectError

        try:
            return lower_with_torch_mlir(ep)
        except (ShapeDialectError, NotImplementedError, ValueError) as e:
            raise Unsupported(f"torch-mlir lowering: {type(e).__name__}: {e}", stage="lowering") from e
        except TorchMlirCompilerError as e:  # torch-mlir's own compiler errors name their pass on an "error:" line
            detail = next((line.strip() for line in str(e).splitlines() if "error:" in line), "")
            raise Unsupported(f"torch-mlir lowering: {detail + chr(10) if detail else ''}{e}", stage="lowering") from e


class TorchMlirStablehlo(StablehloTorch):
    name = "torch_mlir_stablehlo"
    modes = ("bounded", "unbounded", "bucketed")
    requires = ("torch", "jax", "jaxlib", "torch_mlir")
    counters = {"lowering": LOWERING, "xla": XLA}
    work_counters = {"refine": REFINE}
    mode_notes = {"bounded": "torch-mlir writes no bounds: its bounded module compiles per shape"}
    compile_scope = "torch.export + torch-mlir's lowering + our size rewrite, once, in the first call ('lowering'); " + XLA_SCOPE
    program = TorchMlirProgram
    quick_leaves_out = (
        LeftOut("model_*", "*", MODEL_COST + " (an XLA compile per shape, by construction)"),
        # a differential check of ours: the quick profile keeps one family of it (the gnn cases,
        # unbounded); `harness run --whole-matrix` or the full profile runs the rest
        LeftOut("[!g]*", "*", "the torch-mlir lowering runs the gnn cases in the quick profile"),
        LeftOut("*", "b*", "the torch-mlir lowering runs unbounded in the quick profile (it writes no bounds)"),
    )
