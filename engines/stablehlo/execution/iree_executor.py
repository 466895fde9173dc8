"""Our StableHLO module on IREE: rewritten for IREE's ``stablehlo`` input
(:mod:`engines.stablehlo.iree_compat`), compiled once by ``iree-compile`` for
the host CPU (``llvm-cpu``) with its ``?`` dims, and run by ``iree.runtime`` at
every size: IREE's dispatches take their sizes at run time, so a new shape
compiles nothing. A bounded module's bounds become IREE range hints.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .module import Module

#: the host CPU's features: without it IREE warns and targets a generic CPU
FLAGS = ("--iree-llvmcpu-target-cpu=host",)


def compile_module(text: str, hints: bool = False) -> bytes:
    """The VM flatbuffer of our module ``text`` (rewritten for IREE first; ``hints``:
    its bounds stated as range hints), for the host CPU."""
    import iree.compiler as ic

    from ..iree_compat import rewrite

    return ic.compile_str(
        rewrite(text, hints=hints), input_type="stablehlo", target_backends=["llvm-cpu"], extra_args=list(FLAGS)
    )


class IreeExecutable:
    """``module`` compiled once (``on_compile(seconds, why)`` reports it) and loaded
    in a fresh context on ``config`` (an ``iree.runtime.Config``): called with
    device arrays, it returns a tuple of device arrays, one per result."""

    def __init__(self, module: Module, config, hints: bool = False, on_compile: Callable[[float, str], None] | None = None):
        import iree.runtime as rt

        t0 = time.perf_counter()
        vmfb = compile_module(module.text, hints=hints)
        if on_compile is not None:
            why = f"iree-compile (llvm-cpu) of {module.label}, once for every size" + (
                " (bounds as range hints)" if hints else ""
            )
            on_compile(time.perf_counter() - t0, why)
        self.module = module
        ctx = rt.SystemContext(config=config)
        vm = rt.VmModule.copy_buffer(ctx.instance, vmfb)
        ctx.add_vm_module(vm)
        #: @main of the compiled module (a VM module is named after the MLIR module: ours `dynshape`)
        self.main = ctx.modules[vm.name]["main"]

    def __call__(self, *args) -> tuple:
        out = self.main(*args)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
