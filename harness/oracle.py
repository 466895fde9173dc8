"""Compare a backend's output with the case's NumPy float64 oracle."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Verdict:
    ok: bool
    max_abs_err: float | None
    max_rel_err: float | None
    message: str = ""


def compare(out, expected: np.ndarray, out_dtype: str, rtol: float, atol: float) -> Verdict:
    """Shape, dtype, NaN, inf and value check (``|out - exp| <= atol + rtol * |exp|``).

    Integer and boolean outputs must match exactly; NaN must meet NaN, and
    ±inf the same inf with its sign (no tolerance makes a number equal inf).
    ``rtol = atol = 0`` demands bit-for-bit equal values (a case declared exact).
    """
    if not isinstance(out, np.ndarray):
        return Verdict(False, None, None, f"output is {type(out).__name__}, not an array")
    if out.shape != expected.shape:
        return Verdict(False, None, None, f"shape {out.shape} != expected {expected.shape}")
    if str(out.dtype) != out_dtype:
        return Verdict(False, None, None, f"dtype {out.dtype} != expected {out_dtype}")
    if out.size == 0:
        return Verdict(True, 0.0, 0.0)
    if out.dtype.kind in "biu":
        bad = int(np.count_nonzero(out != expected))
        worst = float(np.max(np.abs(out.astype(np.float64) - expected.astype(np.float64))))
        msg = f"{bad} of {out.size} elements differ" if bad else ""
        return Verdict(bad == 0, worst, worst, msg)
    got = out.astype(np.float64)
    exp = expected.astype(np.float64)
    nan_got, nan_exp = np.isnan(got), np.isnan(exp)
    if np.any(nan_got & ~nan_exp):
        n = int(np.count_nonzero(nan_got & ~nan_exp))
        return Verdict(False, float("nan"), float("nan"), f"{n} NaN where the oracle has a number")
    if np.any(nan_exp & ~nan_got):
        n = int(np.count_nonzero(nan_exp & ~nan_got))
        return Verdict(False, None, None, f"{n} numbers where the oracle has NaN")
    inf_got, inf_exp = np.isinf(got), np.isinf(exp)
    wrong_inf = (inf_got | inf_exp) & ~(nan_got | nan_exp) & (got != exp)
    if np.any(wrong_inf):
        n = int(np.count_nonzero(wrong_inf))
        first = tuple(int(k) for k in np.argwhere(wrong_inf)[0])
        return Verdict(
            False,
            float("inf"),
            float("inf"),
            f"{n} of {out.size} elements differ from the oracle's ±inf (first at {first}: "
            f"got {got[first]!r}, expected {exp[first]!r})",
        )
    finite = ~(nan_exp | inf_exp)
    err = np.abs(got[finite] - exp[finite])
    mag = np.abs(exp)[finite]
    max_abs = float(err.max()) if err.size else 0.0
    max_rel = float((err / np.maximum(mag, np.finfo(np.float64).tiny)).max()) if err.size else 0.0
    bad = int(np.count_nonzero(err > atol + rtol * mag))
    if bad:
        return Verdict(False, max_abs, max_rel, f"{bad} of {out.size} elements outside rtol={rtol} atol={atol}")
    return Verdict(True, max_abs, max_rel)
