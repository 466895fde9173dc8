"""One op-sample table for both reference paths (issue 48): each :class:`Sample` is a
program, its inputs at any size, its dynamic dims (the export spec), its reference (a NumPy
float64 oracle where one is written, else torch eager), its tolerance and sizes, and what
each path that claims it promises: ``lazy`` (``engines.lazy``), ``lowered`` (torch.export ->
``engines.stablehlo`` -> XLA and the interpreter) and ``lazy_hlo`` (the lazy trace lowered
to StableHLO). ``tests/op_samples`` runs every sample through every path that claims it,
and checks that the samples and the pinned OpInfo entries reach every lazy op and every
lowering target.

The rows, by the table they came from: :mod:`.lowering` (the lowering's per-op samples,
NumPy oracles), :mod:`.programs` and :mod:`.programs_nn` (what exported programs use beyond single ops),
:mod:`.lazy_numeric` (lazy forms with NumPy oracles), :mod:`.lazy_ops` (the lazy ops added
for real models), :mod:`.spellings` (the lazy ops only another spelling reaches).
"""

from __future__ import annotations

from . import lazy_numeric, lazy_ops, lowering, programs, programs_nn, spellings
from .sample import BOUNDED_SIZES, SCALAR, Fn, Lazy, LazyHlo, Lowered, Sample, as_torch, export_shapes, flat


def build() -> list[Sample]:
    """Every sample (names unique)."""
    out = lowering.build() + programs.build() + programs_nn.build() + lazy_numeric.build() + lazy_ops.build() + spellings.build()
    seen: set[str] = set()
    for s in out:
        if s.name in seen:
            raise ValueError(f"two op samples named {s.name!r}")
        seen.add(s.name)
    return out


SAMPLES = build()
BY_NAME = {s.name: s for s in SAMPLES}

__all__ = [
    "BOUNDED_SIZES",
    "BY_NAME",
    "SAMPLES",
    "SCALAR",
    "Fn",
    "Lazy",
    "LazyHlo",
    "Lowered",
    "Sample",
    "as_torch",
    "build",
    "export_shapes",
    "flat",
]
