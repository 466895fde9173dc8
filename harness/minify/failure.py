"""How a job fails, as a signature two programs can share ("fails the same way").

:func:`observe` runs a case on a backend as the worker does (``prepare``, then
``convert`` + call + ``sync`` + ``to_numpy`` per shape, the output checked
against the case's oracle) at a few sizes, in this process, and returns a
:class:`Failure` or None:

``wrong``
    an output off the oracle by more than ``margin`` (default :data:`WRONG_MARGIN`)
    times the case's tolerance (a margin: a reduced program's oracle is float32
    torch eager, not the float64 NumPy one, and rounding must not count as the
    failure; a job off by less, a precision loss, needs a smaller one);
``error``
    an exception, signed by its type and its first line with numbers, SSA
    names and source locations taken out (``iree-compile``'s diagnostics name
    ``<stdin>:12:5`` and ``%42``, which change as the program shrinks);
``recompile``
    a compile after the first shape (the job was to compile once);
``undefined``
    a wrong output whose reference reads memory nothing wrote (``torch.empty``,
    ``new_empty``: the reference changes when torch fills uninitialised memory): a cut
    that keeps an empty tensor but drops what filled it "fails" on garbage, not on the
    system, so it never matches a ``wrong`` failure.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

#: an output is wrong where |out - ref| > WRONG_MARGIN * (atol + rtol * |ref|) somewhere
WRONG_MARGIN = 10.0

KINDS = ("wrong", "error", "recompile", "undefined")


@dataclasses.dataclass(frozen=True)
class Failure:
    """``kind`` (:data:`KINDS`) and ``signature`` (what must match); ``detail``: for the reader."""

    kind: str
    signature: str
    detail: str = ""

    def same(self, other: Failure | None) -> bool:
        return other is not None and other.kind == self.kind and other.signature == self.signature


def signature(e: BaseException) -> str:
    """An exception's type and first meaningful line, without what changes as a program shrinks."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    line = next((x for x in lines if "error:" in x), lines[0] if lines else "")
    line = line[line.index("error:") :] if "error:" in line else line
    line = re.sub(r"<stdin>:\d+:\d+|loc\([^)]*\)", "", line)
    line = re.sub(r"%[\w#]+", "%_", line)
    line = re.sub(r"\d+", "N", line)
    return f"{type(e).__name__}: {line[:200]}"


def badness(out, ref: np.ndarray, rtol: float, atol: float) -> float:
    """The worst ``|out - ref| / (atol + rtol * |ref|)``; inf on a shape, dtype kind or NaN mismatch."""
    out = np.asarray(out)
    if out.shape != ref.shape:
        return float("inf")
    if out.size == 0:
        return 0.0
    got, exp = out.astype(np.float64), np.asarray(ref).astype(np.float64)
    if np.any(np.isnan(got) != np.isnan(exp)):
        return float("inf")
    keep = ~np.isnan(exp)
    g, x = got[keep], exp[keep]
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: an equal infinity is no error
        diff = np.where(g == x, 0.0, np.abs(g - x))
    if diff.size == 0:
        return 0.0
    if np.any(np.isinf(diff)):
        return float("inf")
    return float(np.max(diff / (atol + rtol * np.abs(exp[keep]) + 1e-30)))


def defined(case, inputs, ref) -> bool:
    """Whether ``case``'s reference ``ref`` at ``inputs`` stays the same when torch fills the
    memory its empty tensors get (NaN, or an integer's maximum): it reads only what it wrote."""
    import torch
    import torch.utils.deterministic as det

    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    fill = det.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)  # the fill works only in this mode
    det.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        filled = case.expected(inputs)
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        det.fill_uninitialized_memory = fill  # type: ignore[attr-defined]
    a, b = np.asarray(filled), np.asarray(ref)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def observe(case, backend, mode: str, sizes: list[dict[str, int]], margin: float = WRONG_MARGIN) -> Failure | None:
    """How ``case`` fails on ``backend`` in ``mode`` over ``sizes`` (None: it passes); an
    output is wrong past ``margin`` times the case's tolerance."""
    tol = case.tol()
    try:
        program = backend.prepare(case, mode)
        first: dict[str, int] | None = None
        for i, s in enumerate(sizes):
            inputs = case.make_inputs(s, seed=i)
            out = program(*program.convert(inputs))
            program.sync(out)
            got = program.to_numpy(out)
            if isinstance(got, tuple):
                got = got[0]
            ref = case.expected(inputs)
            worst = badness(got, ref, max(tol.rtol, 1e-6), max(tol.atol, 1e-7))
            if worst > margin:
                if not defined(case, inputs, ref):
                    return Failure("undefined", "", f"at {s}: the reference reads uninitialised memory")
                return Failure("wrong", "", f"at {s}: |out - ref| is {worst:.3g}x the tolerance")
            stats = program.compile_stats()
            if first is None:
                first = stats
            elif stats != first:
                return Failure("recompile", "", f"at {s}: compiles {first} -> {stats}")
    except Exception as e:
        return Failure("error", signature(e), f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    return None
