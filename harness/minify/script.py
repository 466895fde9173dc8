"""The minimised program as a standalone script with its inputs.

``<out>.py`` holds the reduced graph's code (torch ``aten`` calls, as the
exported graph has them) in a ``torch.nn.Module``, and ``<out>.npz`` its inputs
at the first failing size and its weights. Run, the script computes torch
eager's answer and the backend's (:func:`harness.minify.repro.check`: a case
of its own with the original dims, so the backend exports it as the job did),
and exits 1 while the failure reproduces.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

TEMPLATE = '''"""Minimised by `dynshape minify` from {case} on {backend} ({mode}).

Fails: {kind}: {detail}
Program: {ops} ops; inputs (first size) {inputs}. Run: python {script} (exit 1: still fails)."""

import sys
from math import inf, nan  # noqa: F401  (the graph's code writes constants as inf, nan)
from pathlib import Path

import numpy as np
import torch

DATA = np.load(Path(__file__).with_suffix(".npz"))


class Program(torch.nn.Module):
    def __init__(self):
        super().__init__()
{attrs}
{forward}

if __name__ == "__main__":
    from harness.minify.repro import check

    spec = {spec}
    inputs = [[DATA[f"input_{{k}}_{{name}}"] for name in {names!r}] for k in range(len(spec["sizes"]))]
    sys.exit(check(Program(), inputs, spec))
'''


def write(
    path: Path, source, cut, failure, backend: str, mode: str, sizes: list[dict[str, int]], margin: float | None = None
) -> tuple[Path, Path]:
    """Write ``path`` (.py) and its .npz for ``cut``'s program of ``source`` (its inputs
    at each of ``sizes``, as the search ran it, wrong past ``margin`` times the
    tolerance: the search's, None the default); both paths."""
    program = source.program(cut)
    inputs, body = source.slice(cut)
    case = source.reduced_case(cut)
    per_size = [case.make_inputs(s, seed=k) for k, s in enumerate(sizes)]
    arrays = per_size[0]
    data = {f"input_{k}_{n}": a for k, arrays_k in enumerate(per_size) for n, a in zip(inputs, arrays_k, strict=True)}
    attrs = []
    for node in program.graph.nodes:
        if node.op == "get_attr":
            value = getattr(program, node.target)
            key = "attr_" + node.target.replace(".", "_")
            data[key] = value.detach().numpy()
            attrs.append(f"        self.{node.target} = torch.from_numpy(DATA[{key!r}])")
    forward = textwrap.indent(program.code.strip(), "    ")
    spec = {
        "backend": backend,
        "mode": mode,
        "kind": failure.kind,
        "signature": failure.signature,
        "dims": [{"name": d.name, "kind": d.kind, "size": d.size, "min": d.min, "max": d.max} for d in source.case.dims],
        "shapes": [list(i.shape) for i in case.inputs],
        "sizes": sizes,
        "tolerance": [case.tol().rtol, case.tol().atol],
    }
    if margin is not None:
        spec["margin"] = margin
    path = path.with_suffix(".py")
    text = TEMPLATE.format(
        case=source.case.name,
        backend=backend,
        mode=mode,
        kind=failure.kind,
        detail=failure.detail.replace('"""', "'''"),
        ops=source.ops(body),
        inputs=", ".join(f"{n} {tuple(a.shape)} {a.dtype}" for n, a in zip(inputs, arrays, strict=True)),
        script=path.name,
        attrs="\n".join(attrs) or "        pass",
        forward=forward,
        names=list(inputs),
        spec=repr(spec),
    )
    path.write_text(text)
    np.savez(path.with_suffix(".npz"), **data)
    return path, path.with_suffix(".npz")
