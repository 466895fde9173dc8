"""The emission state every op lowering works with: :class:`Value`,
:class:`LoweringContext`, :class:`LoweringError`.

A :class:`LoweringContext` writes ops in MLIR's generic form (each carrying
``loc("<fx node name>")``) into the body of ``@main`` and offers the helpers
the op families share: types with `?` / ``#stablehlo.bounds`` dims,
constants, shape tensors, broadcasts, reshapes, slices, reductions. Sizes are
``int`` or :class:`engines.sizes.Expr` (see :mod:`.symbolic`); a dynamic
size becomes a ``tensor<i32>`` through :meth:`LoweringContext.dim`.

Imported by the op families (``ops/*``) and the driver (:mod:`.lower`); it
imports neither.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engines import sizes

from . import types as T
from .symbolic import SymbolicEmitter, as_dim
from .types import SHAPE_DTYPE, TensorType


class LoweringError(Exception):
    """An op could not be lowered. ``.op`` is the aten op, ``.node`` the fx node name."""

    def __init__(self, message: str, op: str | None = None, node: str | None = None):
        super().__init__(message)
        self.op = op
        self.node = node


@dataclass(frozen=True)
class Value:
    name: str  # SSA name, e.g. "%v12"
    sym_shape: tuple  # ints and (non-constant) sizes.Expr
    dtype: str  # mlir element type
    is_sym: bool = False  # a SymInt/SymFloat/SymBool or scalar input (a Python number for type promotion)

    @property
    def rank(self) -> int:
        return len(self.sym_shape)

    def __repr__(self):
        return f"Value({self.name}, {self.sym_shape}, {self.dtype})"


Spec = tuple[tuple, str]  # (sym_shape, dtype)


def _fmt_float(x: float, dtype: str) -> str:
    if np.isfinite(x):
        s = repr(float(x))
        # MLIR's float literal needs a dot: repr's "1e-15" is "1.0e-15" there
        return s.replace("e", ".0e", 1) if "e" in s and "." not in s else s
    bits = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
    if dtype in bits:
        return "0x" + np.array(x, dtype=bits[dtype]).tobytes()[::-1].hex().upper()
    if dtype == "bf16":
        return "0x" + np.array(x, dtype=np.float32).tobytes()[::-1].hex().upper()[:4]
    raise ValueError(dtype)


def _dense_literal(arr: np.ndarray, dtype: str) -> str:
    if arr.ndim == 0 or (arr.size == 1 and np.all(arr == arr.flat[0])):
        v = arr.reshape(-1)[0] if arr.size else 0
        if dtype == "i1":
            return "true" if bool(v) else "false"
        if T.is_float(dtype):
            return _fmt_float(float(v), dtype)
        if dtype in T.COMPLEX_PARTS:  # (re, im)
            part = T.COMPLEX_PARTS[dtype]
            return f"({_fmt_float(complex(v).real, part)}, {_fmt_float(complex(v).imag, part)})"
        return str(int(v))
    if dtype == "i1":
        return "[" + ", ".join("true" if b else "false" for b in arr.reshape(-1)) + "]" if arr.ndim == 1 else _nested_bool(arr)
    npdt = T.MLIR_TO_NUMPY[dtype]
    return '"0x' + np.ascontiguousarray(arr.astype(npdt)).astype(npdt.newbyteorder("<")).tobytes().hex().upper() + '"'


def _nested_bool(arr):
    if arr.ndim == 0:
        return "true" if bool(arr) else "false"
    return "[" + ", ".join(_nested_bool(a) for a in arr) + "]"


class LoweringContext:
    """Emission state + helpers shared by every op lowering."""

    def __init__(self, ep, bounded: bool = True):
        self.ep = ep
        self.bounded = bounded
        self.ranges = _ranges(ep)
        self._counter = 0
        self._buffers: list[list[str]] = [[]]
        self._const_cache: dict = {}
        self._bound_cache: dict = {}
        self.loc = "main"
        self.node = None
        self.sym = SymbolicEmitter(self)

    # ---------------------------------------------------------------- basics
    def fresh(self, prefix="v") -> str:
        self._counter += 1
        return f"%{prefix}{self._counter}"

    def emit_line(self, line: str) -> None:
        self._buffers[-1].append(line)

    @contextlib.contextmanager
    def at(self, node):
        prev = (self.node, self.loc)
        self.node, self.loc = node, node.name
        try:
            yield
        finally:
            self.node, self.loc = prev

    def bound_of(self, expr) -> int | None:
        """The upper bound of a size from the ``Dim(max=)`` ranges, or None."""
        if isinstance(expr, int):
            return None
        b = self._bound_cache.get(expr, False)
        if b is False:
            hi = sizes.bounds(expr, self.ranges)[1]
            b = self._bound_cache[expr] = int(hi) if -(2**62) < hi < 2**62 else None
        return b

    def type_of(self, spec) -> TensorType:
        if isinstance(spec, TensorType):
            return spec
        if isinstance(spec, Value):
            spec = (spec.sym_shape, spec.dtype)
        shape, dtype = spec
        shape = tuple(as_dim(d) for d in shape)
        dims = tuple(d if isinstance(d, int) else None for d in shape)
        bounds = None
        if self.bounded and any(d is None for d in dims):
            bs = tuple(None if isinstance(d, int) else self.bound_of(d) for d in shape)
            if any(b is not None for b in bs):
                bounds = bs
        return TensorType(dims, dtype, bounds)

    def _spec(self, r) -> Spec:
        if isinstance(r, TensorType):
            if not r.is_static:
                raise ValueError("TensorType result spec must be static; pass (sym_shape, dtype)")
            return (r.shape, r.dtype)
        if isinstance(r, Value):
            return (r.sym_shape, r.dtype)
        shape, dtype = r
        return (tuple(as_dim(d) for d in shape), dtype)

    # ------------------------------------------------------------------- ops
    def op(
        self,
        name: str,
        operands: Sequence[Value],
        results,
        attrs: dict[str, str] | None = None,
        regions: Sequence[str] | None = None,
    ):
        """Emit one op in generic form; returns a Value (or list for multi-result)."""
        multi = isinstance(results, list)
        specs = [self._spec(r) for r in (results if multi else [results])]
        if self.sym.data_symbols:
            for sp in specs:
                self.sym.check_shape(sp[0])
        for o in operands:
            if not isinstance(o, Value):
                raise TypeError(f"{name}: operand {o!r} is not a lowered tensor value")
        res_name = self.fresh()
        ops = ", ".join(o.name for o in operands)
        optypes = ", ".join(str(self.type_of(o)) for o in operands)
        rtypes = [str(self.type_of(s)) for s in specs]
        lhs = ""
        if len(specs) == 1:
            lhs = f"{res_name} = "
        elif len(specs) > 1:
            lhs = f"{res_name}:{len(specs)} = "
        reg = ""
        if regions:
            reg = " (" + ", ".join(regions) + ")"
        at = ""
        if attrs:
            at = " {" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}"
        rt = rtypes[0] if len(rtypes) == 1 else "(" + ", ".join(rtypes) + ")"
        self.emit_line(f'{lhs}"{name}"({ops}){reg}{at} : ({optypes}) -> {rt} loc("{self.loc}")')
        if len(specs) == 1:
            v = Value(res_name, specs[0][0], specs[0][1])
            return [v] if multi else v
        vals = [Value(f"{res_name}#{i}", s[0], s[1]) for i, s in enumerate(specs)]
        return vals if multi else vals[0]

    def region(self, arg_specs: Sequence, body, terminator: str = "stablehlo.return") -> str:
        """Build a one-block region; ``body(ctx, *block_args)`` returns the Values to return.

        Sizes first emitted inside the region stay inside it (the size memo is
        restored after), while values from above may be used (captured)."""
        self._buffers.append([])
        memo = dict(self.sym.memo)
        args = [Value(self.fresh("a"), tuple(self._spec(s)[0]), self._spec(s)[1]) for s in arg_specs]
        try:
            outs = body(self, *args)
        finally:
            self.sym.memo = memo
        if isinstance(outs, Value):
            outs = [outs]
        self.emit_line(
            f'"{terminator}"('
            + ", ".join(o.name for o in outs)
            + ") : ("
            + ", ".join(str(self.type_of(o)) for o in outs)
            + f') -> () loc("{self.loc}")'
        )
        lines = self._buffers.pop()
        header = "^bb0(" + ", ".join(f"{a.name}: {self.type_of(a)}" for a in args) + "):"
        return "{\n" + header + "\n" + "\n".join("  " + l for l in lines) + "\n}"

    def while_loop(self, init: Sequence[Value], cond, body) -> list[Value]:
        """``stablehlo.while`` over loop-carried ``init``: ``cond(ctx, *vals)`` -> i1
        scalar, ``body(ctx, *vals)`` -> the next values (same types)."""
        specs = [(v.sym_shape, v.dtype) for v in init]
        res = self.op("stablehlo.while", list(init), list(specs), regions=[self.region(specs, cond), self.region(specs, body)])
        return res

    def scalar_region(self, dtype: str, opname: str) -> str:
        return self.region([((), dtype), ((), dtype)], lambda c, a, b: c.op(opname, [a, b], ((), dtype)))

    # ------------------------------------------------------------- constants
    def constant(self, value, dtype: str, sym_shape: tuple = ()) -> Value:
        """A scalar constant broadcast to ``sym_shape`` (may be dynamic)."""
        key = (repr(value), dtype, self.loc if len(self._buffers) > 1 else None)
        top = len(self._buffers) == 1
        if top and key in self._const_cache:
            c = self._const_cache[key]
        else:
            npdt = T.MLIR_TO_NUMPY.get(dtype, np.dtype(np.float32))
            lit = _dense_literal(np.array(value, dtype=npdt if dtype != "bf16" else np.float32), dtype)
            c = self.op("stablehlo.constant", [], ((), dtype), attrs={"value": f"dense<{lit}> : tensor<{dtype}>"})
            if top:
                self._const_cache[key] = c
        if sym_shape:
            return self.broadcast_to(c, sym_shape)
        return c

    def dense_constant(self, arr: np.ndarray, dtype: str) -> Value:
        shape = tuple(int(d) for d in arr.shape)
        lit = _dense_literal(np.asarray(arr), dtype)
        ty = self.type_of((shape, dtype))
        return self.op("stablehlo.constant", [], (shape, dtype), attrs={"value": f"dense<{lit}> : {ty}"})

    # ---------------------------------------------------------------- shapes
    def dim(self, expr) -> Value:
        """``tensor<i32>`` value of a size expression."""
        return self.sym.emit(expr)

    def shape_tensor(self, sym_shape: Sequence) -> Value:
        """``tensor<Nxi32>`` for an output shape (static parts become constants)."""
        sym_shape = tuple(as_dim(d) for d in sym_shape)
        top = len(self._buffers) == 1
        key = ("shape",) + sym_shape
        if top and key in self._const_cache:
            return self._const_cache[key]
        if all(isinstance(d, int) for d in sym_shape):
            r = self.dense_constant(np.array(sym_shape, dtype=np.int32), SHAPE_DTYPE)
        else:
            pieces = []
            for d in sym_shape:
                k1 = ("shape1", d)
                p = self._const_cache.get(k1) if top else None
                if p is None:
                    p = self.op("stablehlo.reshape", [self.dim(d)], ((1,), SHAPE_DTYPE))
                    if top:
                        self._const_cache[k1] = p
                pieces.append(p)
            r = (
                pieces[0]
                if len(pieces) == 1
                else self.op("stablehlo.concatenate", pieces, ((len(pieces),), SHAPE_DTYPE), attrs={"dimension": "0 : i64"})
            )
        if top:
            self._const_cache[key] = r
        return r

    def out_spec(self, node, index: int | None = None) -> Spec:
        val = node.meta.get("val")
        if index is not None:
            val = val[index]
        if not isinstance(val, torch.Tensor):
            raise LoweringError(f"node {node.name} has no tensor metadata (val={val!r})")
        return (tuple(as_dim(d) for d in val.shape), T.mlir_dtype(val.dtype))

    def out_shape(self, node, index=None) -> tuple:
        return self.out_spec(node, index)[0]

    def out_dtype(self, node, index=None) -> str:
        return self.out_spec(node, index)[1]

    # ------------------------------------------------------- common helpers
    def convert(self, v: Value, dtype: str) -> Value:
        if v.dtype == dtype:
            return v
        if dtype == "i1" and v.dtype != "i1":  # torch bool(x) == (x != 0)
            return self.compare(v, self.constant(0, v.dtype, v.sym_shape), "NE")
        return self.op("stablehlo.convert", [v], (v.sym_shape, dtype))

    def scalar(self, x, dtype: str) -> Value:
        """Python number / SymInt value / 0-d Value -> scalar Value of ``dtype``."""
        if isinstance(x, Value):
            return self.convert(x, dtype)
        if isinstance(x, (bool, int, float)):
            return self.constant(x, dtype)
        raise TypeError(f"cannot use {x!r} as a scalar")

    def tensor(self, x, dtype: str, sym_shape: tuple | None = None) -> Value:
        """Any operand -> Value of ``dtype``, broadcast to ``sym_shape`` if given."""
        v = self.scalar(x, dtype) if not isinstance(x, Value) else self.convert(x, dtype)
        if sym_shape is not None:
            v = self.broadcast_to(v, sym_shape)
        return v

    def same_shape(self, a, b) -> bool:
        a = tuple(as_dim(d) for d in a)
        b = tuple(as_dim(d) for d in b)
        return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=False))

    def broadcast_to(self, v: Value, sym_shape: tuple, dims: Sequence[int] | None = None) -> Value:
        sym_shape = tuple(as_dim(d) for d in sym_shape)
        if dims is None:
            if v.rank > len(sym_shape):
                raise ValueError(f"cannot broadcast rank {v.rank} to rank {len(sym_shape)}")
            dims = list(range(len(sym_shape) - v.rank, len(sym_shape)))
            if self.same_shape(v.sym_shape, sym_shape):
                return v
        v, dims = self._broadcast_ones(v, sym_shape, list(dims))
        dims_attr = "array<i64" + (": " + ", ".join(str(d) for d in dims) if dims else "") + ">"
        if all(isinstance(d, int) for d in sym_shape):
            return self.op("stablehlo.broadcast_in_dim", [v], (sym_shape, v.dtype), attrs={"broadcast_dimensions": dims_attr})
        shp = self.shape_tensor(sym_shape)
        return self.op(
            "stablehlo.dynamic_broadcast_in_dim", [v, shp], (sym_shape, v.dtype), attrs={"broadcast_dimensions": dims_attr}
        )

    def _broadcast_ones(self, v: Value, sym_shape: tuple, dims: list) -> tuple[Value, list]:
        """``v`` without the dynamic dims torch broadcast whose size is at most 1 at every size
        (MPT's ALiBi slice ``bias[:, max(0, 1 - s):]``, of size ``1 - max(0, 1 - s)``), summed
        away (one element, or none where the result is empty too): XLA broadcasts a static 1
        only, not a dynamic dim bounded by 1."""
        ones = [
            i
            for i, od in enumerate(dims)
            if not isinstance(v.sym_shape[i], int)
            and v.sym_shape[i] != sym_shape[od]
            and sizes.bounds(v.sym_shape[i], {k: (0, hi) for k, (_, hi) in self.ranges.items()})[1] <= 1
        ]
        if not ones:
            return v, dims
        v = self.reduce(v, ones, "or" if v.dtype == "i1" else "add")
        return v, [od for i, od in enumerate(dims) if i not in ones]

    def reshape(self, v: Value, sym_shape: tuple) -> Value:
        sym_shape = tuple(as_dim(d) for d in sym_shape)
        if self.same_shape(v.sym_shape, sym_shape):
            return v
        if all(isinstance(d, int) for d in sym_shape) and all(isinstance(d, int) for d in v.sym_shape):
            return self.op("stablehlo.reshape", [v], (sym_shape, v.dtype))
        shp = self.shape_tensor(sym_shape)
        return self.op("stablehlo.dynamic_reshape", [v, shp], (sym_shape, v.dtype))

    def transpose(self, v: Value, perm: Sequence[int]) -> Value:
        perm = [p % v.rank for p in perm] if v.rank else []
        if list(perm) == list(range(v.rank)):
            return v
        shape = tuple(v.sym_shape[p] for p in perm)
        return self.op(
            "stablehlo.transpose", [v], (shape, v.dtype), attrs={"permutation": "array<i64: " + ", ".join(map(str, perm)) + ">"}
        )

    def compare(self, a: Value, b: Value, direction: str) -> Value:
        return self.op(
            "stablehlo.compare",
            [a, b],
            (a.sym_shape, "i1"),
            attrs={"comparison_direction": f"#stablehlo<comparison_direction {direction}>"},
        )

    def select(self, pred: Value, a: Value, b: Value) -> Value:
        return self.op("stablehlo.select", [pred, a, b], (a.sym_shape, a.dtype))

    def unary(self, name: str, v: Value) -> Value:
        return self.op(name, [v], (v.sym_shape, v.dtype))

    def binary(self, name: str, a: Value, b: Value) -> Value:
        return self.op(name, [a, b], (a.sym_shape, a.dtype))

    def iota(self, sym_shape: tuple, dim: int, dtype: str) -> Value:
        sym_shape = tuple(as_dim(d) for d in sym_shape)
        if all(isinstance(d, int) for d in sym_shape):
            return self.op("stablehlo.iota", [], (sym_shape, dtype), attrs={"iota_dimension": f"{dim} : i64"})
        shp = self.shape_tensor(sym_shape)
        return self.op("stablehlo.dynamic_iota", [shp], (sym_shape, dtype), attrs={"iota_dimension": f"{dim} : i64"})

    def reduce(self, v: Value, dims: Sequence[int], kind: str, keepdim: bool = False, dtype: str | None = None) -> Value:
        """Reduce ``dims`` with add/max/min/mul/and/or; optional keepdim."""
        dtype = dtype or v.dtype
        v = self.convert(v, dtype)
        dims = sorted({d % v.rank for d in dims}) if v.rank else []
        init = {
            "add": 0,
            "mul": 1,
            "max": -np.inf if T.is_float(dtype) else (False if dtype == "i1" else np.iinfo(T.MLIR_TO_NUMPY[dtype]).min),
            "min": np.inf if T.is_float(dtype) else (True if dtype == "i1" else np.iinfo(T.MLIR_TO_NUMPY[dtype]).max),
            "and": True,
            "or": False,
        }[kind]
        opname = {
            "add": "stablehlo.add",
            "mul": "stablehlo.multiply",
            "max": "stablehlo.maximum",
            "min": "stablehlo.minimum",
            "and": "stablehlo.and",
            "or": "stablehlo.or",
        }[kind]
        if not dims:
            return v
        init_v = self.constant(init, dtype)
        out_shape = tuple(d for i, d in enumerate(v.sym_shape) if i not in dims)
        r = self.op(
            "stablehlo.reduce",
            [v, init_v],
            (out_shape, dtype),
            attrs={"dimensions": "array<i64: " + ", ".join(map(str, dims)) + ">"},
            regions=[self.scalar_region(dtype, opname)],
        )
        if keepdim:
            r = self.reshape(r, tuple(1 if i in dims else d for i, d in enumerate(v.sym_shape)))
        return r

    def numel(self, sym_shape: Sequence, dtype: str) -> Value:
        """Product of sizes as a scalar of ``dtype`` (dynamic if any size is)."""
        n = as_dim(math.prod(sym_shape, start=sizes.const(1)))
        if isinstance(n, int):
            return self.constant(n, dtype)
        return self.convert(self.dim(n), dtype)

    def slice(self, v: Value, starts, limits, strides, out_shape: tuple | None = None) -> Value:
        """Slice with (possibly symbolic) starts/limits; static strides."""
        starts = [as_dim(s) for s in starts]
        limits = [as_dim(s) for s in limits]
        if out_shape is None:
            out_shape = tuple(
                max(0, -(-(l - s) // st)) if isinstance(l, int) and isinstance(s, int) else as_dim((l - s + st - 1) // st)
                for s, l, st in zip(starts, limits, strides, strict=False)
            )
        if all(isinstance(x, int) for x in starts + limits):
            return self.op(
                "stablehlo.slice",
                [v],
                (out_shape, v.dtype),
                attrs={
                    "start_indices": "array<i64: " + ", ".join(map(str, starts)) + ">",
                    "limit_indices": "array<i64: " + ", ".join(map(str, limits)) + ">",
                    "strides": "array<i64: " + ", ".join(map(str, strides)) + ">",
                },
            )
        s = self.shape_tensor(starts)
        l = self.shape_tensor(limits)
        st = self.shape_tensor(strides)
        return self.op("stablehlo.real_dynamic_slice", [v, s, l, st], (out_shape, v.dtype))


def _ranges(ep) -> dict[str, tuple]:
    """``{symbol: (lo, hi)}`` of ``ep.range_constraints`` for :func:`engines.sizes.bounds` (None: unbounded)."""
    import sympy

    def end(x):
        return int(x) if isinstance(x, sympy.Integer) else None

    return {s.name: (end(r.lower), end(r.upper)) for s, r in ep.range_constraints.items() if hasattr(s, "name")}
