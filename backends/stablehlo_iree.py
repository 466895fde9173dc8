"""The ``stablehlo_iree`` backend: our StableHLO lowering of torch.export
programs (``engines.stablehlo.lower``, ``?`` dims), compiled **once** by IREE for
the host CPU and run at every size (:mod:`engines.stablehlo.execution.iree_executor`).

``unbounded``: the `?` module, rewritten into op forms IREE's ``stablehlo``
input accepts (:mod:`engines.stablehlo.iree_compat`). ``bounded``: the module
with ``#stablehlo.bounds``, its bounds given to IREE as range hints
(``util.assume.int``); it still computes at the call's sizes (nothing is
padded), unlike the bounded XLA row. Stages: ``lowering`` (torch.export + our
lowering, in the first call) + ``iree_compile`` (the rewrite + ``iree-compile``,
once). Inputs and outputs are ``iree.runtime`` device arrays on the worker's
``local-task`` device.
"""

from __future__ import annotations

import numpy as np

from .base import BoundsChecked, Counter, Unsupported
from .iree_runtime import IreeRuntime
from .stablehlo_base import LOWERING, ModuleProgram, StablehloTorch, TorchLowered, single

IREE_COMPILE = Counter(
    "ours",
    "our rewrite of the module for IREE's stablehlo input + iree.compiler.compile_str(llvm-cpu): once, `?` dims kept",
)


class IreeArrays(ModuleProgram):
    """Inputs and outputs are ``iree.runtime`` device arrays on the backend's device."""

    def convert(self, arrays):
        import iree.runtime as rt

        device = self.backend.runtime_config().device
        return [rt.asdevicearray(device, np.ascontiguousarray(a)) for a in arrays]

    def to_numpy(self, out):
        if isinstance(out, tuple):
            return tuple(np.array(o.to_host()) for o in out)
        return np.array(out.to_host())  # a copy: the runtime may reuse its buffer


class StablehloIreeProgram(BoundsChecked, TorchLowered, IreeArrays):
    """Lowered at the first call (from its arrays, copied back to the host), compiled once by IREE."""

    def executor_for(self, module):
        from engines.stablehlo.iree_compat import IreeCompatError

        try:
            return self.iree_executable(module)
        except IreeCompatError as e:  # a form IREE refuses or computes wrong: refused, not run
            raise Unsupported(f"IREE input: {e}") from e

    def iree_executable(self, module):
        from engines.stablehlo.execution.iree_executor import IreeExecutable

        return IreeExecutable(
            module,
            self.backend.runtime_config(),
            hints=self.mode == "bounded",
            on_compile=lambda seconds, why: self.count("iree_compile", 1, seconds, why),
        )

    def run(self, *args):
        if self.executor is None:
            host = [np.asarray(a.to_host()) for a in args]
            self.executor = self.executor_for(self.lower(host))
        return single(self.executor(*args))


class StablehloIree(IreeRuntime, StablehloTorch):
    name = "stablehlo_iree"
    modes = ("bounded", "unbounded")
    requires = ("torch", "jax", "jaxlib", "iree.compiler", "iree.runtime")
    counters = {"lowering": LOWERING, "iree_compile": IREE_COMPILE}
    compile_scope = (
        "torch.export + our StableHLO lowering, once, in the first call ('lowering'); our rewrite for IREE's "
        "stablehlo input + iree-compile for llvm-cpu, once ('iree_compile'); the runtime compiles nothing at a call"
    )
    program = StablehloIreeProgram
    # each job lowers (seconds on a model) and runs iree-compile (seconds): minutes over the quick profile
    opt_in = "our lowering + an iree-compile per job (seconds each): minutes over the quick profile"
