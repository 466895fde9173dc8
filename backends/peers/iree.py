"""``iree``: the case's ``torch.export`` program imported by torch-mlir
(``torch_mlir.fx.export_and_import``, the ``torch`` dialect, dims ``?``), then
``iree.compiler.compile_str(..., input_type="torch", target_backends=["llvm-cpu"])``
once, run by ``iree.runtime`` (``local-task``). Static mode: a static export and
a compile per input shape. (IREE's own torch route, iree-turbine, is tested on
torch releases below 2.13; torch-mlir's importer is the same FX importer.)

Our own unbounded StableHLO (``engines.stablehlo.lower``) is refused by IREE's
StableHLO input pipeline: IREE 3.13 marks ``stablehlo.dynamic_reshape`` and
``stablehlo.dynamic_broadcast_in_dim`` illegal whatever form their shape
operand takes (:func:`compile_stablehlo` and tests/test_peers.py pin it);
``stablehlo_iree`` (:mod:`backends.stablehlo_iree`) rewrites them first
(:mod:`engines.stablehlo.iree_compat`) and compiles our module once.

Underneath: IREE compiles its dispatches with dynamic dims ahead of time; the
runtime at a new shape computes sizes and allocates, and compiles nothing."""

from __future__ import annotations

import numpy as np

from ..base import Counter
from ..iree_runtime import IreeRuntime
from .common import EXPORT, Peer, PeerProgram, export_program, export_reason

#: the host CPU's features: without it IREE warns and targets a generic CPU
FLAGS = ("--iree-llvmcpu-target-cpu=host",)


def torch_dialect(ep) -> str:
    """torch-mlir's import of an ExportedProgram, as MLIR text in the ``torch`` dialect."""
    from torch_mlir import fx

    return str(fx.export_and_import(ep, output_type="torch"))


def compile_text(text: str, input_type: str) -> bytes:
    """``iree.compiler.compile_str`` for the host CPU: the VM flatbuffer."""
    import iree.compiler as ic

    return ic.compile_str(text, input_type=input_type, target_backends=["llvm-cpu"], extra_args=list(FLAGS))


def compile_stablehlo(text: str) -> bytes:
    """IREE on a StableHLO module (ours has ``?`` dims: refused, see the module docstring)."""
    return compile_text(text, "stablehlo")


def load(vmfb: bytes, config):
    """The compiled module's ``main`` in a fresh context on ``config`` (an ``iree.runtime.Config``)."""
    import iree.runtime as rt

    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    return ctx.modules.module["main"]


class IreeProgram(PeerProgram):
    """One export + IREE compile (static: per input shape); inputs are device arrays on the worker's device."""

    def build(self, host):
        case, mode = self.case, self.mode
        with self.counting("export", export_reason(case, mode, host)):
            ep = export_program(case, mode, self.fn, host)
        with self.counting("iree_compile", f"torch-mlir + iree-compile of {case.name} ({mode}) at {[a.shape for a in host]}"):
            return load(compile_text(torch_dialect(ep), "torch"), self.backend.runtime_config())

    def convert(self, arrays):
        import iree.runtime as rt

        device = self.backend.runtime_config().device
        return [rt.asdevicearray(device, a) for a in super().convert(arrays)]

    def host_arrays(self, args):
        return [a.to_host() for a in args]

    def to_numpy(self, out):
        if isinstance(out, (tuple, list)):
            out = out[0]
        return np.array(out.to_host())


class Iree(IreeRuntime, Peer):
    name = "iree"
    modes = ("static", "unbounded")
    requires = ("torch", "torch_mlir", "iree.compiler", "iree.runtime")
    counters = {
        "export": EXPORT,
        "iree_compile": Counter("instrumented", "torch_mlir.fx.export_and_import + iree.compiler.compile_str(llvm-cpu) calls"),
    }
    compile_scope = (
        "torch.export ('export') and torch-mlir's import + iree-compile for llvm-cpu ('iree_compile'): once with "
        "? dims, per input shape in static mode; the runtime compiles nothing at a call"
    )
    program = IreeProgram
