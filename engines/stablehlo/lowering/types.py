"""Tensor types for the StableHLO lowering: `?` dims, `#stablehlo.bounds`, dtypes.

A value's *symbolic shape* is a tuple whose entries are ``int`` (static) or a
:class:`engines.sizes.Expr` (dynamic).  Its MLIR type prints static entries as numbers and
dynamic ones as ``?``; when bounds are enabled, a dynamic entry whose upper
bound is finite (``torch.export.Dim(max=...)`` and expressions of such dims) is
recorded in a ``#stablehlo.bounds<...>`` encoding (static dims get ``?`` there,
as the StableHLO spec requires).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch


def _torch_to_mlir() -> dict:
    import torch

    return {
        torch.float32: "f32",
        torch.float64: "f64",
        torch.float16: "f16",
        torch.bfloat16: "bf16",
        torch.int64: "i64",
        torch.int32: "i32",
        torch.int16: "i16",
        torch.int8: "i8",
        torch.uint8: "ui8",
        torch.bool: "i1",
        torch.complex64: "complex<f32>",
        torch.complex128: "complex<f64>",
    }


def __getattr__(name: str) -> Any:
    """``TORCH_TO_MLIR``, made on first use: the executors read this module's MLIR types
    in environments without torch (jax_export's, under a jax release with no torch)."""
    if name == "TORCH_TO_MLIR":
        table = globals()[name] = _torch_to_mlir()
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MLIR_TO_NUMPY = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "i16": np.dtype(np.int16),
    "i8": np.dtype(np.int8),
    "ui8": np.dtype(np.uint8),
    "ui32": np.dtype(np.uint32),  # (the random generator's bits and state)
    "ui64": np.dtype(np.uint64),
    "i1": np.dtype(np.bool_),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}
try:  # bf16 through ml_dtypes (a jax dependency)
    import ml_dtypes

    MLIR_TO_NUMPY["bf16"] = np.dtype(ml_dtypes.bfloat16)
except Exception:  # pragma: no cover
    pass

NUMPY_TO_MLIR = {v: k for k, v in MLIR_TO_NUMPY.items()}

FLOAT_TYPES = {"f32", "f64", "f16", "bf16"}
INT_TYPES = {"i64", "i32", "i16", "i8", "ui8"}
#: each complex type's component type
COMPLEX_PARTS = {"complex<f32>": "f32", "complex<f64>": "f64"}

# Shape arithmetic (get_dimension_size results, shape operands) uses i32, like
# torch_xla's lowering; SymInt *outputs* are widened to i64.
SHAPE_DTYPE = "i32"


def mlir_dtype(dt: torch.dtype) -> str:
    try:
        return __getattr__("TORCH_TO_MLIR")[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} has no StableHLO mapping") from None


def is_float(dt: str) -> bool:
    return dt in FLOAT_TYPES


def is_static(d) -> bool:
    return isinstance(d, int)


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int | None, ...]  # None = dynamic (`?`)
    dtype: str
    bounds: tuple[int | None, ...] | None = None  # per dim; None = `?`

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = ""
        if self.bounds is not None and any(b is not None for b in self.bounds):
            enc = ", #stablehlo.bounds<" + ", ".join("?" if b is None else str(b) for b in self.bounds) + ">"
        return f"tensor<{dims}{self.dtype}{enc}>"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


_BOUNDS_RE = re.compile(r",\s*#stablehlo\.bounds<[^>]*>")


def strip_bounds(text: str) -> str:
    """Drop every ``#stablehlo.bounds`` encoding (bounded ``?`` -> plain ``?``).

    Neither jaxlib's shape refinement (it reports bounded types as "dynamic
    shapes") nor its reference interpreter ("dynamic result types are not
    supported", process abort) accepts bounded types, so the executors run the
    bound-free module after checking the call's sizes against the bounds.
    """
    return _BOUNDS_RE.sub("", text)


_TENSOR_RE = re.compile(r"tensor<([^<>]*?(?:<[^<>]*>[^<>]*?)?)>")


def parse_tensor_type(s: str) -> tuple[tuple[int | None, ...], str, tuple[int | None, ...] | None]:
    """Parse ``tensor<?x3xf32, #stablehlo.bounds<64, ?>>`` -> (shape, dtype, bounds)."""
    s = s.strip()
    if not (s.startswith("tensor<") and s.endswith(">")):
        raise ValueError(f"not a ranked tensor type: {s}")
    body = s[len("tensor<") : -1]
    bounds = None
    if "," in body:
        body, enc = body.split(",", 1)
        m = re.search(r"#stablehlo\.bounds<([^>]*)>", enc)
        if m:
            bounds = tuple(None if b.strip() == "?" else int(b) for b in m.group(1).split(","))
    dims, dtype = _DIMS_RE.match(body).groups()  # (not split on "x": "complex<f32>" has one)
    shape = tuple(None if p == "?" else int(p) for p in dims.split("x")[:-1])
    return shape, dtype, bounds


_DIMS_RE = re.compile(r"((?:(?:\?|\d+)x)*)(.*)")


def signature_types(text: str) -> tuple[list, list]:
    """(arg types, result types) of ``@main`` as strings, from MLIR text."""
    m = re.search(
        r"func\.func\s+(?:public\s+)?@main\((.*?)\)\s*->\s*(\(.*?\)|tensor<[^{]*?>)\s*(?:attributes\b[^{]*)?\{", text, re.S
    )
    if not m:
        raise ValueError("no @main function in module text")
    args = [t for t in _split_types(m.group(1))]
    res = m.group(2).strip()
    if res.startswith("("):
        res = res[1:-1]
    return args, [t for t in _split_types(res)]


def _split_types(s: str) -> list:
    out = []
    for m in re.finditer(r"tensor<", s):
        i = m.start() + len("tensor<")
        depth = 1
        while depth:
            if s[i] == "<":
                depth += 1
            elif s[i] == ">":
                depth -= 1
            i += 1
        out.append(s[m.start() : i])
    return out
