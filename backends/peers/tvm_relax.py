"""``tvm_relax``: ``tvm.relax.frontend.torch.from_exported_program`` of the
case's ``torch.export`` program (symbolic dims become TIR variables, a
``Dim``'s range becomes ``tir_var_lower_bound``/``tir_var_upper_bound``), then
``relax.build(mod, "llvm")`` once and a ``relax.VirtualMachine`` on the CPU.
Static mode: a static export and a build per input shape.

Underneath: ``relax.build`` compiles every kernel and the shape functions ahead
of time; the VM at a new shape evaluates the shape functions and allocates, and
compiles nothing (there is no JIT in it), so the ``relax_build`` count is all
of TVM's compile work."""

from __future__ import annotations

import numpy as np

from ..base import Counter
from .common import EXPORT, Peer, PeerProgram, export_program, export_reason


def relax_build(ep):
    """The Relax module of an ExportedProgram, built for ``llvm``: a VM's ``main``."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    mod = from_exported_program(ep)
    executable = relax.build(mod, "llvm")
    return relax.VirtualMachine(executable, tvm.cpu())["main"]


def first_output(out):
    """The program's one output (the torch frontend returns a tuple of outputs)."""
    import tvm

    while not isinstance(out, tvm.runtime.Tensor) and len(out) == 1:
        out = out[0]
    return out


class TvmProgram(PeerProgram):
    """One export + Relax build (static: per input shape); inputs are ``tvm.runtime.Tensor``s."""

    def build(self, host):
        case, mode = self.case, self.mode
        with self.counting("export", export_reason(case, mode, host)):
            ep = export_program(case, mode, self.fn, host)
        with self.counting("relax_build", f"relax.build of {case.name} ({mode}) exported at {[a.shape for a in host]}"):
            main = relax_build(ep)

        def run(*args):
            return first_output(main(*args))

        return run

    def convert(self, arrays):
        import tvm

        return [tvm.runtime.tensor(a) for a in super().convert(arrays)]

    def host_arrays(self, args):
        return [a.numpy() for a in args]

    def to_numpy(self, out):
        return np.array(out.numpy())


class TvmRelax(Peer):
    name = "tvm_relax"
    modes = ("static", "bounded", "unbounded")
    requires = ("torch", "tvm", "tvm_ffi")
    counters = {
        "export": EXPORT,
        "relax_build": Counter("instrumented", "tvm.relax.frontend.torch.from_exported_program + relax.build(mod, 'llvm') calls"),
    }
    compile_scope = (
        "torch.export ('export') and the Relax import + relax.build for llvm ('relax_build'): once with symbolic dims "
        "(bounded: with TVM's upper bounds), per input shape in static mode; the VM compiles nothing at a call"
    )
    program = TvmProgram
