"""dynshape: run your own dynamic-shape programs through every compiler.

    import dynshape
    c = dynshape.case(model, inputs={"x": ("b", 16)}, sweep={"b": [2, 3, 5]})
    df = dynshape.run(c, backends="torch_eager,torch_export,lazy", modes="static,unbounded")
    print(df[["backend", "mode", "shape", "compiles", "status"]])
    print(dynshape.report(df, html="report.html"))

:func:`case` makes a case (torch ``nn.Module`` or function, jax function, einx
call; the oracle defaults to the program in float64); :func:`run` runs it in
worker processes and returns one row per job and shape; :func:`check`
measures the float32-vs-float64 error and proposes the tolerance;
:func:`report` writes the summary. ``dynshape run --cases-from FILE`` and
``dynshape check FILE`` do the same from a file, and the ``dynshape`` pytest
plugin (:mod:`dynshape.pytest_plugin`) asserts compile counts in your tests.
Nothing here imports a framework until it is called.
"""

from __future__ import annotations

from cases.model import Case, CaseError, Dim, EinxForm, Input, Tolerance, bounded, static, unbounded
from cases.program_check import check

from . import _libs
from ._case import case, einx_call
from ._run import records, report, run, shapes

_libs.install()


def __getattr__(name: str):
    # ``dynshape.inputs``: the input generators of :mod:`cases.inputs` (graph
    # batches, masks from lengths), for ``make_inputs`` hooks; imported on use
    if name == "inputs":
        import importlib

        return importlib.import_module("cases.inputs")
    raise AttributeError(f"module 'dynshape' has no attribute {name!r}")


__all__ = [
    "Case",
    "CaseError",
    "Dim",
    "EinxForm",
    "Input",
    "Tolerance",
    "bounded",
    "case",
    "check",
    "einx_call",
    "records",
    "report",
    "run",
    "shapes",
    "static",
    "unbounded",
]
