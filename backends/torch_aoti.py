"""AOTInductor: ``torch.export`` with ``Dim`` ranges, compiled ahead of time to a
C++ package (``torch._inductor.aoti_compile_and_package``) and run by
``torch._inductor.aoti_load_package``: one compile serves the whole ``Dim`` range.

``bounded`` / ``unbounded``: one export (``Dim(max=)`` when bounded) + one AOT
compile, in ``prepare`` (so ``prepare_s`` holds the package build, by the common
timing rule), at the sizes of the case's first sweep entry. ``static``: one
export + one AOT compile per novel shape, in its first call.

Counts: ``export`` (``torch.export.export`` calls) and ``aoti``
(``aoti_compile_and_package`` calls: each a C++ build of a ``.pt2`` package,
~25 s on the 2-core machine), both instrumented, timed, with the reason.
Because of that cost the backend is opt-in (:attr:`opt_in`): a run includes it
when ``--backends`` names it, not by default.
"""

from __future__ import annotations

import shutil
import tempfile

from .base import Backend, BoundsChecked, Counter, Program, TorchArrays, describe_range, torch_dims
from .torch_compile import warm_inductor
from .torch_export import export


class AotiProgram(BoundsChecked, TorchArrays, Program):
    """One AOTInductor package (Dim ranges, built in ``prepare``) or one per input
    shapes (static, built by the first call at each). ``convert`` names the case's
    dim above its bound (the package's own guard names only a symbol)."""

    def __init__(self, backend, case, mode):
        self.fn = case.torch_fn()  # a model case's import and build: not a static first call's
        #: the loaded packages by input shapes (static), or the one package under ``None``
        self.packages: dict = {}
        super().__init__(backend, case, mode)

    def package(self, args, why: str):
        """Export the case's torch program at ``args`` (dynamic per mode), AOT-compile and load it."""
        import torch

        case, mode = self.case, self.mode
        dynamic = None if mode == "static" else tuple(torch_dims(case, mode))
        with self.counting("export", why):
            ep = export(self.fn, args, dynamic, case.name)
        path = self.backend.package_path(case, mode)
        with self.counting("aoti", why):
            path = torch._inductor.aoti_compile_and_package(ep, package_path=path)
        return torch._inductor.aoti_load_package(path)

    def run(self, *args):
        key = None if self.mode != "static" else tuple(tuple(a.shape) for a in args)
        run = self.packages.get(key)
        if run is None:
            run = self.packages[key] = self.package(args, f"new input shapes {key}")
        return _single(run(*args))


class TorchAoti(Backend):
    name = "torch_aoti"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    warmup = ("torch._dynamo", "torch.export._trace", "backends.torch_compile:warm_inductor")
    timeout_s = 1800.0
    opt_in = "one AOTInductor compile is a C++ build of ~25 s, so it runs only where --backends names it"
    counters = {
        "export": Counter("instrumented", "torch.export.export calls"),
        "aoti": Counter("instrumented", "torch._inductor.aoti_compile_and_package calls (a C++ build of a .pt2 package)"),
    }
    compile_scope = (
        "torch.export.export ('export') + aoti_compile_and_package ('aoti': inductor codegen and the "
        "C++ build of the .pt2 package); loading the package is not in it"
    )

    def __init__(self):
        #: this worker's directory of packages, and how many it holds (``startup``)
        self.dir: str | None = None
        self.built = 0

    def startup(self):
        import torch
        import torch._inductor
        import torch.export  # noqa: F401

        warm_inductor()  # the vector-ISA probe is in startup_s, not in the package build's time

        self.dir = tempfile.mkdtemp(prefix="dynshape-aoti-")

    def teardown(self):
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def package_path(self, case, mode) -> str:
        """A new package's path in this worker's directory."""
        if self.dir is None:  # prepared without startup (a test drives it directly)
            self.dir = tempfile.mkdtemp(prefix="dynshape-aoti-")
        self.built += 1
        return f"{self.dir}/{case.name}-{mode}-{self.built}.pt2"

    def prepare(self, case, mode):
        program = AotiProgram(self, case, mode)
        if mode != "static":
            import torch

            dims = {d.name: d for axes in case.dynamic_axes(mode) for d in axes.values()}
            ranges = ", ".join(describe_range(d) for d in dims.values())
            sample = [torch.from_numpy(a) for a in case.make_inputs(case.sweep[0], seed=0)]
            program.packages[None] = program.package(
                sample, f"one package for dynamic dims {ranges} (exported at {dict(case.sweep[0])})"
            )
        return program


def _single(out):
    if isinstance(out, (list, tuple)):
        return out[0] if len(out) == 1 else tuple(out)
    return out
