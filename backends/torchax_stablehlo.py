"""The ``torchax_stablehlo`` backend: torchax's torch.export → StableHLO
lowering (``torchax.export.exported_program_to_stablehlo``), on the same XLA
executors as ours (:mod:`backends.stablehlo_xla`) — the third lowering of the
same exported program, beside ours and torch-mlir's.

torchax runs the exported program's aten ops as jax functions and exports that
with ``jax.export`` under the symbolic shapes it builds from
``ep.range_constraints``: a ``jax.export.Exported`` whose module keeps ``?``
dims, computes sizes with ``get_dimension_size`` and checks torch.export's dim
ranges with ``shape_assertion`` custom calls (as ``jax_export``'s modules do).
Its ``@main`` takes the program's weights first, then the inputs; jax's x64 is
off, so int64 inputs are cast to int32 (as ``jax_export`` does).

Environment: torchax 0.0.13 (the newest release) cannot be imported beside
torch 2.13 (``torchax/amp.py`` names ``aten.prod.dim_Dimname``, an overload
torch 2.13 no longer has); it imports beside torch 2.9.1, so this backend runs
in the ``xla`` environment (``make xla-env``: torch 2.9.1, with jax/jaxlib 0.10.2
and torchax added for it), where our executors run on that jaxlib.

Stages: ``lowering`` (torch.export + torchax + jax.export, in the first call)
and ``xla`` (one compile per concrete shape, as for every `?` module). Bounded
mode: torchax writes the bound as a constraint, not as ``#stablehlo.bounds``,
so its bounded module compiles per shape too.
"""

from __future__ import annotations

import numpy as np

from .base import MODEL_COST, Counter, LeftOut, Unsupported
from .stablehlo_base import REFINE, XLA, XLA_SCOPE, StablehloTorch, single
from .stablehlo_xla import StablehloXlaProgram

LOWERING = Counter(
    "ours",
    "torch.export + torchax's exported_program_to_stablehlo (aten ops as jax functions, then jax.export "
    "with symbolic shapes from ep.range_constraints)",
)


def lower_with_torchax(ep):
    """``(text, weights)``: the StableHLO text of ``ep`` lowered by torchax
    (``@main(weights..., inputs...)``) and the weights as NumPy arrays, in @main's order."""
    import jax
    import numpy as np
    from torchax.export import exported_program_to_stablehlo

    weights, exported = exported_program_to_stablehlo(ep)
    return exported.mlir_module(), [np.asarray(w) for w in jax.tree_util.tree_leaves(weights)]


class TorchaxProgram(StablehloXlaProgram):
    """Exported at the first call as ours is, lowered by torchax; its weights
    are passed ahead of the inputs on every call (staged on the device once)."""

    host_modes = ("bucketed",)
    canonical_dtypes = True  # jax's x64 is off under torchax: int64 indices are i32 in @main

    def __init__(self, backend, case, mode):
        #: the weights @main takes first, as NumPy arrays (from the lowering) and staged on the device
        self.host_weights: list = []
        self.weights: list = []
        super().__init__(backend, case, mode)

    def convert(self, arrays):
        if self.executor is None:  # the first call lowers at its shapes and stages its inputs itself
            return super().convert(arrays)
        if self.host:  # the padded executor pads and stages every argument of @main, weights first
            args = self.executor.convert([*self.host_weights, *arrays], canonicalize=True)
            self.note_io("pad_s", args[0].pad_s)
            return args
        from engines.stablehlo.execution.executors import device_put

        # @main's dtypes (int64 -> i32) for the inputs; the weights, staged once, are not in the call's arguments
        cast = self.executor.module.cast([*self.host_weights, *arrays], canonicalize=True)
        return device_put(cast[len(self.host_weights) :])

    def run(self, *args):
        if self.executor is None:
            from engines.stablehlo.execution.executors import device_put

            module = self.lower(args)
            self.executor = self.executor_for(module)
            host = [np.asarray(a) for a in args]
            if self.host:
                args = tuple(self.convert(host))
            else:  # @main's dtypes (int64 -> i32), on the device: the weights once, the inputs as convert does
                staged = device_put(module.cast([*self.host_weights, *host], canonicalize=True))
                self.weights, args = staged[: len(self.host_weights)], tuple(staged[len(self.host_weights) :])
        return single(self.executor(*self.weights, *args))

    def lower(self, args):
        from engines.stablehlo import Module

        module = super().lower(args)
        names = [f"weight {i}" for i in range(len(self.host_weights))] + [inp.name for inp in self.case.inputs]
        return Module(module.text, f"{self.case.name} ({self.mode}, torchax)", names)

    def export_program(self, export, sample):
        """torch.export of the case's program as a module with one parameter per input:
        torch 2.9's ``ExportedProgram`` of a ``forward(*xs)`` carries a ``_guards_fn``
        that fails (``NameError: name 'L' is not defined``) when torchax's interpreter runs
        ``run_decompositions``' graph (:func:`backends.torch_xla_export.named_module`)."""
        import torch

        from .base import torch_dims
        from .torch_xla_export import named_module

        module = named_module(self.fn, [inp.name for inp in self.case.inputs])
        dims = tuple(d or None for d in torch_dims(self.case, self.mode))

        def run(**options):
            return torch.export.export(module, tuple(sample), dynamic_shapes=dims, strict=False, **options)

        from engines.torch_export_tools import export_oblivious_retry

        try:
            return export_oblivious_retry(run)
        except torch._dynamo.exc.UserError as e:  # constraint violations: the dim is not dynamic
            from engines.torch_export_diagnosis import parse

            from .torch_export import refusal

            raise refusal(self.case.name, e, parse(str(e))) from e

    def stablehlo(self, ep) -> str:
        try:
            text, self.host_weights = lower_with_torchax(ep)
        except (NotImplementedError, TypeError, ValueError, AssertionError) as e:
            # an aten op torchax has no jax function for, or a jax.export shape-polymorphism refusal
            raise Unsupported(f"torchax lowering: {type(e).__name__}: {e}", stage="lowering") from e
        return text


class TorchaxStablehlo(StablehloTorch):
    name = "torchax_stablehlo"
    env = "xla"  # torchax 0.0.13 imports beside torch 2.9.1, not torch 2.13 (module docstring)
    modes = ("bounded", "unbounded", "bucketed")
    requires = ("torch", "jax", "jaxlib", "torchax")
    counters = {"lowering": LOWERING, "xla": XLA}
    work_counters = {"refine": REFINE}
    mode_notes = {
        "bounded": "torchax writes bounds as jax constraints, not as bounded types: its bounded module compiles per shape"
    }
    compile_scope = "torch.export + torchax's lowering + jax.export, once, in the first call ('lowering'); " + XLA_SCOPE
    program = TorchaxProgram
    preload = ("jax", "jax.numpy", "torchax", "torchax.export")  # ~10 s of imports: once per zygote, not per job
    # named, it runs in the xla env's workers; the quick profile's jobs of it (the reports' cases in
    # every mode, the gnn cases unbounded: 18, ~9 s each on the loaded machine) would add minutes to
    # `make test`'s gate, which tests/test_torchax.py's two jobs stand in for
    opt_in = "a worker in the xla env per job (torch 2.9.1 + torchax): minutes over the quick profile"
    quick_leaves_out = (
        LeftOut("model_*", "*", MODEL_COST + " (an XLA compile per shape, by construction)"),
        # a differential check of ours, as torch_mlir_stablehlo: the gnn cases, unbounded, in the quick profile
        LeftOut("[!g]*", "*", "the torchax lowering runs the gnn cases in the quick profile"),
        LeftOut("*", "b*", "the torchax lowering runs unbounded in the quick profile (it writes no bounds)"),
    )
