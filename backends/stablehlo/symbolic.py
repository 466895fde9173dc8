"""SymInt expressions -> ``stablehlo.get_dimension_size`` + scalar arithmetic.

Every symbolic size torch.export produces is a sympy expression over the
symbols of the placeholders' dims (``s0``, ``s1``, ...).  ``SymbolicEmitter``
materialises such an expression as a ``tensor<i32>`` SSA value:

* a symbol becomes ``get_dimension_size`` of the first input dim it names
  (derived dims such as ``2*s0 + 1`` in a placeholder are solved for ``s0``);
* ``+ - *``, ``//`` (floor semantics), ``%`` (Python semantics), min/max
  become ``add``/``subtract``/``multiply``/``divide``/``remainder``/
  ``minimum``/``maximum`` (+ ``select`` fix-ups for floor/mod);
* results are cached by expression, so each size is computed once (CSE).
"""
from __future__ import annotations

from typing import Dict, Tuple

import sympy

from .types import SHAPE_DTYPE, TensorType, scalar_type


class SymbolicError(Exception):
    pass


def _fn_name(e) -> str:
    return type(e).__name__


def as_expr(d):
    """int | SymInt | sympy expr -> int or sympy expr (numbers become int)."""
    if isinstance(d, int):
        return d
    try:
        import torch

        if isinstance(d, torch.SymInt):
            d = d.node.expr
    except Exception:  # pragma: no cover
        pass
    if isinstance(d, sympy.Basic):
        if d.is_Integer:
            return int(d)
        return d
    if hasattr(d, "__index__"):
        return int(d)
    raise SymbolicError(f"not a size: {d!r} ({type(d).__name__})")


class SymbolicEmitter:
    """Emits scalar shape arithmetic into a :class:`LoweringContext`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.sources: Dict[sympy.Symbol, Tuple[object, int, object]] = {}
        self.cache: Dict[object, object] = {}

    # -- sources ---------------------------------------------------------
    def register_input(self, value) -> None:
        """Record where the symbols of an input's dims can be read from."""
        for i, d in enumerate(value.sym_shape):
            if isinstance(d, sympy.Symbol) and d not in self.sources:
                self.sources[d] = (value, i, None)
        # derived dims (a*s + c) for symbols not directly available
        for i, d in enumerate(value.sym_shape):
            if isinstance(d, sympy.Basic) and not d.is_Symbol:
                free = d.free_symbols
                if len(free) == 1:
                    (s,) = free
                    if s in self.sources:
                        continue
                    poly = sympy.Poly(d, s) if d.is_polynomial(s) else None
                    if poly is not None and poly.degree() == 1:
                        a, c = poly.all_coeffs()
                        if a.is_Integer and c.is_Integer:
                            self.sources[s] = (value, i, (int(a), int(c)))

    # -- emission --------------------------------------------------------
    def emit(self, expr):
        """Materialise ``expr`` (int or sympy) as a ``tensor<i32>`` value."""
        expr = as_expr(expr)
        if isinstance(expr, int):
            return self.ctx.constant(expr, SHAPE_DTYPE)
        if expr in self.cache:
            return self.cache[expr]
        v = self._emit(expr)
        self.cache[expr] = v
        return v

    def bind(self, expr, value) -> None:
        """Record an already-emitted value for ``expr`` (e.g. a sym_size node)."""
        expr = as_expr(expr)
        if not isinstance(expr, int) and expr not in self.cache:
            self.cache[expr] = value

    def _binop(self, op, a, b):
        return self.ctx.op(op, [a, b], scalar_type(SHAPE_DTYPE))

    def _emit(self, e):
        ctx = self.ctx
        if e.is_Symbol:
            if e not in self.sources:
                raise SymbolicError(
                    f"symbol {e} is not the size of any input dim (unbacked/data-dependent sizes are not supported)")
            value, dim, lin = self.sources[e]
            size = ctx.op("stablehlo.get_dimension_size", [value], scalar_type(SHAPE_DTYPE),
                          attrs={"dimension": f"{dim} : i64"})
            if lin is None:
                return size
            a, c = lin  # size = a*s + c  ->  s = (size - c) / a
            if c:
                size = self._binop("stablehlo.subtract", size, self.emit(c))
            if a != 1:
                size = self._binop("stablehlo.divide", size, self.emit(a))
            return size
        if e.is_Integer:
            return ctx.constant(int(e), SHAPE_DTYPE)
        if e.is_Add:
            terms = sorted(e.args, key=lambda t: (t.is_number, sympy.default_sort_key(t)))
            acc = None
            for t in terms:
                neg = t.could_extract_minus_sign() and t.is_Mul or (t.is_Integer and int(t) < 0)
                tv = self.emit(-t) if neg else self.emit(t)
                if acc is None:
                    acc = tv if not neg else self._binop("stablehlo.subtract", self.emit(0), tv)
                else:
                    acc = self._binop("stablehlo.subtract" if neg else "stablehlo.add", acc, tv)
            return acc
        if e.is_Mul:
            coeff, rest = e.as_coeff_Mul()
            if not coeff.is_Integer:
                raise SymbolicError(f"non-integer coefficient in size expression {e}")
            factors = list(sympy.Mul.make_args(rest))
            acc = self.emit(factors[0])
            for f in factors[1:]:
                acc = self._binop("stablehlo.multiply", acc, self.emit(f))
            if int(coeff) != 1:
                acc = self._binop("stablehlo.multiply", acc, self.emit(int(coeff)))
            return acc
        if e.is_Pow:
            base, exp = e.args
            if exp.is_Integer and int(exp) > 0:
                b = self.emit(base)
                acc = b
                for _ in range(int(exp) - 1):
                    acc = self._binop("stablehlo.multiply", acc, b)
                return acc
            raise SymbolicError(f"unsupported power in size expression {e}")
        name = _fn_name(e)
        if name in ("Max", "Min"):
            args = sorted(e.args, key=sympy.default_sort_key)
            acc = self.emit(args[0])
            op = "stablehlo.maximum" if name == "Max" else "stablehlo.minimum"
            for a in args[1:]:
                acc = self._binop(op, acc, self.emit(a))
            return acc
        if name == "FloorDiv":
            return self.floordiv(self.emit(e.args[0]), self.emit(e.args[1]))
        if name in ("PythonMod", "Mod"):
            return self.pymod(self.emit(e.args[0]), self.emit(e.args[1]))
        if name == "CleanDiv":  # exact division
            return self._binop("stablehlo.divide", self.emit(e.args[0]), self.emit(e.args[1]))
        if name == "CeilDiv" or name == "IntTrueDiv":
            raise SymbolicError(f"unsupported size function {name} in {e}")
        raise SymbolicError(f"unsupported size expression {e} ({name})")

    # Python semantics for // and % on i32 scalars (stablehlo truncates).
    def floordiv(self, a, b):
        ctx = self.ctx
        q = self._binop("stablehlo.divide", a, b)
        r = self._binop("stablehlo.remainder", a, b)
        zero = self.emit(0)
        one = self.emit(1)
        rnz = ctx.compare(r, zero, "NE")
        sign_differs = ctx.compare(ctx.compare(r, zero, "LT"), ctx.compare(b, zero, "LT"), "NE")
        fix = ctx.op("stablehlo.and", [rnz, sign_differs], scalar_type("i1"))
        qm1 = self._binop("stablehlo.subtract", q, one)
        return ctx.op("stablehlo.select", [fix, qm1, q], scalar_type(SHAPE_DTYPE))

    def pymod(self, a, b):
        ctx = self.ctx
        r = self._binop("stablehlo.remainder", a, b)
        zero = self.emit(0)
        rnz = ctx.compare(r, zero, "NE")
        sign_differs = ctx.compare(ctx.compare(r, zero, "LT"), ctx.compare(b, zero, "LT"), "NE")
        fix = ctx.op("stablehlo.and", [rnz, sign_differs], scalar_type("i1"))
        rb = self._binop("stablehlo.add", r, b)
        return ctx.op("stablehlo.select", [fix, rb, r], scalar_type(SHAPE_DTYPE))
