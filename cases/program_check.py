"""``dynshape.check``: does a case's program agree with its oracle, and what
tolerance does the float32-vs-float64 error call for?

The proposal is the project's one tolerance rule,
:meth:`cases.model.Tolerance.from_error`, of the largest float32-vs-float64
error over the sweep. A check refuses an oracle that ignores its
inputs and a stated tolerance over :data:`WIDE` times the measured error
without a ``Tolerance.reason``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

import numpy as np

from . import packs
from .model import TOLERANCE_MARGIN as MARGIN
from .model import Case, CaseError, Tolerance
from .models_base import PARTLY_FLOAT32

#: a stated tolerance wider than this many times the measured error needs a reason
WIDE = 100


@dataclasses.dataclass
class CaseCheck:
    """One case's check: the error per sweep entry, the proposal, and what is refused."""

    case: str
    errors: list[tuple[dict, float, float]]  # (sizes, max abs err, max rel err)
    proposed: Tolerance
    problems: list[str]
    notes: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        lines = [f"case {self.case}: {'ok' if self.ok else 'REFUSED'}"]
        lines += [f"  {sizes}: max abs err {a:.3g}, max rel err {r:.3g}" for sizes, a, r in self.errors]
        lines.append(
            f"  proposed: Tolerance(rtol=0.0, atol={self.proposed.atol:.1g})  "
            f"# {MARGIN}x the float32-vs-float64 max abs err, rounded up"
        )
        lines += [f"  refused: {p}" for p in self.problems] + [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclasses.dataclass
class Report:
    """Every case's :class:`CaseCheck`; ``ok`` when none is refused."""

    checks: list[CaseCheck]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def __str__(self) -> str:
        return "\n".join(map(str, self.checks))


def check(target: Case | str | os.PathLike | Iterable[Case], seed: int = 0) -> Report:
    """Run program and oracle on every sweep entry of each case (a case, cases,
    or a cases file), measure the float32-vs-float64 error, propose the
    tolerance and list what is refused (``Report.ok``). Called while a worker
    loads the file that calls it, it stops the load, as :func:`dynshape.run` does."""
    if packs.loading():
        raise packs.StopLoading
    if isinstance(target, Case):
        found: list[Case] = [target]
    elif isinstance(target, (str, os.PathLike)):
        found = list(packs.load_file(target))
    else:
        found = list(target)
    return Report([check_case(c, seed) for c in found])


def check_case(case: Case, seed: int = 0) -> CaseCheck:
    program = _program(case)
    errors, problems, notes = [], [], []
    for sizes in (dict(s) for s in (case.sweep or ({},))):
        inputs = case.make_inputs(sizes, seed)
        want = case.expected(inputs)
        got = _call(case, program, inputs)
        if got.shape != want.shape:
            problems.append(f"on {sizes} the program returns shape {got.shape}, the oracle {want.shape}")
            continue
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        a = float(np.nanmax(diff)) if diff.size else 0.0
        r = float(np.nanmax(diff / np.maximum(np.abs(want), np.finfo(np.float64).tiny))) if diff.size else 0.0
        errors.append((sizes, a, r))
        tol = case.tol()
        if diff.size and not np.allclose(got, want, rtol=tol.rtol, atol=tol.atol, equal_nan=True):
            problems.append(f"on {sizes} program and oracle differ by {a:.3g} (tolerance rtol={tol.rtol}, atol={tol.atol})")
        problems += _ignored(case, program, sizes, inputs, want, got)
    measured = max((a for _, a, _ in errors), default=0.0)
    proposed = Tolerance.from_error(measured)
    problems += _too_wide(case, measured)
    partly = PARTLY_FLOAT32.get(case.name)
    if partly:
        notes.append(f"the oracle is partly float32: {', '.join(partly)} still gave float32 in its float64 run")
    return CaseCheck(case.name, errors, proposed, list(dict.fromkeys(problems)), notes)


def _too_wide(case: Case, measured: float) -> list[str]:
    tol = case.tolerance
    if tol is None or case.exact or tol.reason:
        return []
    widest = max(tol.atol, tol.rtol)
    if widest <= WIDE * measured:
        return []
    times = "an error of 0" if measured == 0 else f"{widest / measured:.0f}x the measured max abs err {measured:.3g}"
    return [
        f"tolerance rtol={tol.rtol}, atol={tol.atol} is {times} (over {WIDE}x): "
        "narrow it, or say why in Tolerance(..., reason=...)"
    ]


def _ignored(case: Case, program, sizes, inputs, want, got) -> list[str]:
    """An oracle that ignores its inputs: its output unchanged when the float
    inputs change (all, or one the program's output depends on)."""
    floats = [i for i, a in enumerate(inputs) if a.dtype.kind == "f" and a.size]
    if not floats:
        return []
    rng = np.random.default_rng(12345)

    def nudged(only):
        return [
            (a + rng.standard_normal(a.shape).astype(a.dtype) * 0.5).astype(a.dtype) if i in only else a
            for i, a in enumerate(inputs)
        ]

    out = []
    changed = nudged(floats)
    if np.array_equal(case.expected(changed), want, equal_nan=True):
        return [f"the oracle ignores its inputs: on {sizes} its output is unchanged when every float input changes"]
    if len(floats) > 1:
        for i in floats:
            one = nudged([i])
            if np.array_equal(case.expected(one), want, equal_nan=True) and not np.array_equal(
                _call(case, program, one), got, equal_nan=True
            ):
                out.append(f"the oracle ignores input {case.inputs[i].name!r}: on {sizes} the program's output changes with it")
    return out


def _program(case: Case):
    if case.torch_fn is not None:
        return ("torch", case.torch_fn())
    if case.jax_fn is not None:
        return ("jax", case.jax_fn())
    if case.einx is not None:
        import einx

        return ("einx", case.einx.bind(einx))
    raise CaseError(f"case {case.name!r}: no program form (torch_fn, jax_fn or einx) to check")


def _call(case: Case, program, inputs) -> np.ndarray:
    kind, fn = program
    if kind == "torch":
        import torch

        with torch.no_grad():
            out = fn(*(torch.from_numpy(a.copy()) for a in inputs))
        return out.detach().numpy()
    return np.asarray(fn(*inputs))
