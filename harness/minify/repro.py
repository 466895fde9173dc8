"""What a minimised script runs: its program as a case of its own, on the backend
that failed, checked against torch eager (:mod:`harness.minify.script`)."""

from __future__ import annotations

import sys

import numpy as np


def case_of(program, inputs: list[list[np.ndarray]], spec: dict):
    """A :class:`cases.Case` running ``program`` on exactly ``inputs`` (per sweep entry,
    the script's sizes, one list of arrays; their shapes over the spec's dims)."""
    import torch

    from cases.model import Case, Dim, Input, Tolerance

    dims = tuple(Dim(d["name"], d["kind"], size=d["size"], min=d["min"], max=d["max"]) for d in spec["dims"])
    specs = tuple(Input(f"x{i}", tuple(s), str(a.dtype)) for i, (a, s) in enumerate(zip(inputs[0], spec["shapes"], strict=True)))
    dynamic = [d.name for d in dims if d.dynamic]

    def arrays(sizes):
        return inputs[[{k: s[k] for k in dynamic} for s in spec["sizes"]].index({k: sizes[k] for k in dynamic})]

    def reference(*promoted):
        args = [
            torch.from_numpy(np.ascontiguousarray(a.astype(i.dtype, copy=False))) for a, i in zip(promoted, specs, strict=True)
        ]
        with torch.no_grad():
            return program(*args).detach().numpy()

    out = reference(*inputs[0])
    return Case(
        name="minified",
        tags=("minified",),
        dims=dims,
        inputs=specs,
        sweep=tuple(spec["sizes"]),
        quick=tuple(range(len(spec["sizes"]))),
        oracle=reference,
        out_shape=(),
        out_dtype=str(out.dtype),
        torch_fn=lambda: program,
        inputs_fn=lambda sizes, rng: [a.copy() for a in arrays(sizes)],
        tolerance=Tolerance(*spec["tolerance"]),
    )


def check(program, inputs: list[list[np.ndarray]], spec: dict) -> int:
    """1 (and the failure on stderr) while the program fails as the spec says, else 0."""
    from harness import registry

    from .failure import WRONG_MARGIN, observe

    backend = registry.get(spec["backend"])
    backend.startup()
    margin = spec.get("margin", WRONG_MARGIN)  # scripts written before --margin have none
    got = observe(case_of(program, inputs, spec), backend, spec["mode"], spec["sizes"], margin)
    if got is not None and got.kind == spec["kind"] and (got.kind != "error" or got.signature == spec["signature"]):
        print(f"still fails: {got.kind}: {got.detail}", file=sys.stderr)
        return 1
    print(f"does not fail as recorded ({spec['kind']}): {got.detail if got else 'passes'}", file=sys.stderr)
    return 0
