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

from .base import Backend, Counter, TorchArrays, check_bounds, torch_dims
from .torch_compile import warm_inductor
from .torch_export import export


class TorchAoti(TorchArrays, Backend):
    name = "torch_aoti"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    preload = ("torch._dynamo", "torch.export._trace", "backends.torch_compile:warm_inductor")
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

    def startup(self):
        import torch
        import torch._inductor
        import torch.export  # noqa: F401

        warm_inductor()  # the vector-ISA probe is in startup_s, not in the package build's time

        self._dir = tempfile.mkdtemp(prefix="dynshape-aoti-")
        self._n = 0

    def teardown(self):
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)

    def _package(self, case, fn, mode, args, why: str):
        """Export ``fn`` (the case's torch program) at ``args`` (dynamic per ``mode``),
        AOT-compile and load it."""
        import torch

        dynamic = None if mode == "static" else tuple(torch_dims(case, mode))
        with self.counting("export", why):
            ep = export(fn, args, dynamic, case.name)
        self._n += 1
        path = f"{self._dir}/{case.name}-{mode}-{self._n}.pt2"
        with self.counting("aoti", why):
            path = torch._inductor.aoti_compile_and_package(ep, package_path=path)
        return torch._inductor.aoti_load_package(path)

    def convert(self, arrays):
        check_bounds(*self._job, arrays)  # the package's own guard names only a symbol: name the case's dim
        return super().convert(arrays)

    def prepare(self, case, mode):
        self._job = (case, mode)
        fn = case.torch_fn()  # a model case's import and build: not a static first call's
        if mode != "static":
            import torch

            dims = {d.name: d for axes in case.dynamic_axes(mode) for d in axes.values()}
            ranges = ", ".join(f"{d.name} in [{max(2, d.min)}, {d.max if d.max is not None else 'inf'}]" for d in dims.values())
            sample = [torch.from_numpy(a) for a in case.make_inputs(case.sweep[0], seed=0)]
            run = self._package(
                case, fn, mode, sample, f"one package for dynamic dims {ranges} (exported at {dict(case.sweep[0])})"
            )
            return lambda *args: _single(run(*args))
        programs: dict = {}

        def program(*args):
            key = tuple(tuple(a.shape) for a in args)
            run = programs.get(key)
            if run is None:
                run = programs[key] = self._package(case, fn, mode, args, f"new input shapes {key}")
            return _single(run(*args))

        return program


def _single(out):
    if isinstance(out, (list, tuple)):
        return out[0] if len(out) == 1 else tuple(out)
    return out
