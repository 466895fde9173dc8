"""A StableHLO module as the executors take it: the text with its ``@main``
signature, parsed and hashed once (:class:`Module`), and the errors the
executors raise."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from ..lowering import types as T

#: ``on_compile`` / ``on_parse`` callbacks: (seconds, reason)
Report = Callable[[float, str], None]


class ExecutionError(Exception):
    pass


class AssertionFailed(ExecutionError):
    """A torch.export runtime assertion of the module is false at these argument shapes:
    the exported program covers only the sizes where it holds (a branch torch.export took
    at the sample's sizes, deferred to run time), so these sizes are outside its range."""


#: the words the lowering puts in every torch.export runtime assertion's message
ASSERTION_MARK = "torch.export runtime assertion"


class PadderUnsupported(ExecutionError):
    """The bounded rewrite cannot serve this module (names the op and why)."""

    def __init__(self, msg: str, op: str = ""):
        super().__init__(msg)
        self.op = op


def main_signature(text: str):
    """[(shape, dtype, bounds)] of @main's args and results (shape: None = `?`)."""
    return main_types(text)


def main_types(source):
    """:func:`main_signature` of MLIR text or bytecode (the refined modules)."""
    from jaxlib.mlir import ir

    from ..lowering.verify import make_context

    with make_context():
        module = ir.Module.parse(source)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                return ([T.parse_tensor_type(str(t)) for t in ft.inputs], [T.parse_tensor_type(str(t)) for t in ft.results])
    raise ExecutionError("module has no @main")


def digest(text: str) -> str:
    """Short content hash naming a module (in reasons and to the interpreter worker)."""
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def format_shapes(shapes) -> str:
    return ", ".join(str(tuple(s)) for s in shapes)


class Module:
    """StableHLO text with its ``@main`` signature, parsed and hashed once.

    ``label`` names the module in errors and reasons (e.g. the case and mode);
    ``names`` names @main's arguments (e.g. the case's inputs)."""

    def __init__(self, text: str, label: str = "", names: Sequence[str] | None = None):
        self.text = text
        self.digest = digest(text)
        self.label = f"{label} [{self.digest}]" if label else f"module {self.digest}"
        self.inputs, self.results = main_signature(text)
        self.names = list(names) if names is not None else None

    def arg(self, i: int) -> str:
        return f"argument {i}" + (f" ({self.names[i]})" if self.names and i < len(self.names) else "")

    def _arity(self, n: int) -> None:
        if n != len(self.inputs):
            raise ExecutionError(f"{self.label}: @main takes {len(self.inputs)} arguments, got {n}")

    def cast(self, arrays, canonicalize: bool = False) -> list[np.ndarray]:
        """NumPy ``arrays`` in @main's dtypes. ``canonicalize`` converts within a
        kind (int64 -> int32, float64 -> float32), as jax does for the modules it
        exports with x64 off; otherwise a dtype mismatch is an error."""
        self._arity(len(arrays))
        out = []
        for i, (a, (_, dt, _)) in enumerate(zip(arrays, self.inputs, strict=False)):
            a = np.asarray(a)
            want = T.MLIR_TO_NUMPY.get(dt)
            if want is not None and a.dtype != want:
                if not (canonicalize and a.dtype.kind == want.kind):
                    raise ExecutionError(f"{self.label}: {self.arg(i)}: dtype {a.dtype} but @main expects {dt} ({want})")
                a = a.astype(want)
            out.append(a)
        return out

    def admit(self, args, kind, what: str) -> tuple:
        """The argument shapes of a call, after checking each argument is a ``kind`` (``what``:
        the arrays a program takes, for the message) and fits the module's types."""
        for i, a in enumerate(args):
            if not isinstance(a, kind):
                raise ExecutionError(
                    f"{self.label}: {self.arg(i)} is a {type(a).__name__}; the program takes {what} its convert() makes"
                )
        shapes = tuple(tuple(a.shape) for a in args)
        self.check(shapes, [a.dtype for a in args])
        return shapes

    def check(self, shapes, dtypes) -> None:
        """Check concrete argument shapes and dtypes against the signature."""
        self._arity(len(shapes))
        for i, ((shape, dt, bounds), got, dtype) in enumerate(zip(self.inputs, shapes, dtypes, strict=False)):
            want = T.MLIR_TO_NUMPY.get(dt)
            where = f"{self.label}: {self.arg(i)}"
            if want is not None and np.dtype(dtype) != want:
                raise ExecutionError(f"{where}: dtype {np.dtype(dtype)} but @main expects {dt} ({want})")
            if len(got) != len(shape):
                raise ExecutionError(f"{where}: rank {len(got)} but @main expects rank {len(shape)}")
            for d, (s, n) in enumerate(zip(shape, got, strict=False)):
                if s is not None and s != n:
                    raise ExecutionError(f"{where}: dim {d} is {n} but @main fixes it to {s}")
                if bounds is not None and bounds[d] is not None and n > bounds[d]:
                    raise ExecutionError(f"{where}: dim {d} is {n}, above its bound {bounds[d]}")
