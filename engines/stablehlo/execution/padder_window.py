"""The bounded rewrite of windowed ops over a dynamic dim (``convolution``, ``reduce_window``).

XLA's dynamic padder refuses a convolution over a dynamic spatial dim ("Dynamic
Spatial Convolution is not supported"), and for a padded ``reduce_window`` it
would size the result as if the window had no padding. Both are served the same
way here: the padder serves static ops, so

* every operand that slides a window is made static at its bound
  (``set_dimension_size`` to the bound, as :meth:`.padder_rewrite._Rewriter._pad` does)
  with everything past its live sizes set to the op's identity (a ``select`` on
  ``iota < live size``: 0 for a convolution, the init value for a
  ``reduce_window``, which is also what its padding holds), since the padding
  holds whatever the buffer had (NaN in the tests);
* the op runs static, at the bound;
* its result gets its live sizes back with ``set_dimension_size``: per windowed
  dim ``floor(((n - 1) * base_dilation + 1 + lo + hi - ((k - 1) * dilation + 1)) / stride) + 1``
  (clamped at 0), per other dim the operand's live size.

Positions past the live result read masked values or nothing; every consumer
that reads across a dim sees a masked operand again (it is rewritten too, or
the padder masks it). Ops with no dynamic windowed dim are left to the padder.
"""

from __future__ import annotations

import numpy as np

from .module import PadderUnsupported
from .padder_bounds import info, walk

WINDOW_OPS = ("stablehlo.convolution", "stablehlo.reduce_window")


def rewrite_windows(module, label: str) -> dict[str, int]:
    """Rewrite (in place) every windowed op of ``module`` that slides over a dynamic
    dim (see the module docstring); returns ``{op name: count}``."""
    todo = []
    walk(module.operation, lambda op: todo.append(op) if op.name in WINDOW_OPS else None)
    counts: dict[str, int] = {}
    for op in todo:
        name = op.name
        if (_convolution if name == "stablehlo.convolution" else _reduce_window)(op, label):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _ints(op, name, n, default):
    from jaxlib.mlir import ir

    if name not in op.attributes:
        return [default] * n
    return [int(x) for x in ir.DenseI64ArrayAttr(op.attributes[name])]


def _padding(op, n):
    from jaxlib.mlir import ir

    if "padding" not in op.attributes:
        return [(0, 0)] * n
    flat = np.array(ir.DenseIntElementsAttr(op.attributes["padding"]), dtype=np.int64).reshape(-1)
    return [(int(flat[2 * i]), int(flat[2 * i + 1])) for i in range(n)]


class _Builder:
    """i32 scalar arithmetic and masks, inserted before one op (``op``, named in errors)."""

    def __init__(self, op, label: str):
        from jaxlib.mlir import ir

        self.ip, self.where, self.name = ir.InsertionPoint(op), f"{label}: {op.name}", op.name
        self.i32 = ir.IntegerType.get_signless(32)

    def const(self, v):
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        t = ir.RankedTensorType.get([], self.i32)
        return stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(self.i32, int(v))), ip=self.ip).result

    def arith(self, a, op: str, b):
        from jaxlib.mlir.dialects import stablehlo

        cls = {"+": stablehlo.AddOp, "-": stablehlo.SubtractOp, "*": stablehlo.MulOp, "/": stablehlo.DivOp}[op]
        return cls(a, b if not isinstance(b, int) else self.const(b), ip=self.ip).result

    def window_size(self, n, base_dil, lo, hi, k, dil, stride):
        """The live output size of a window over live size ``n`` (an i32 scalar)."""
        from jaxlib.mlir.dialects import stablehlo

        span = self.arith(self.arith(n, "-", 1), "*", base_dil) if base_dil != 1 else self.arith(n, "-", 1)
        # floor(num / stride) + 1 = max(num + stride, 0) / stride for num >= -stride; 0 below
        num = self.arith(span, "+", 1 + lo + hi - ((k - 1) * dil + 1) + stride)
        num = stablehlo.MaxOp(num, self.const(0), ip=self.ip).result
        return self.arith(num, "/", stride)

    def static_masked(self, value, identity):
        """``value`` static at its bound, every element past a live size set to
        ``identity`` (a 0-d tensor); returns ``(static value, {dim: live size})``."""
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        shape, bounds = info(value.type)
        dyn = [d for d, s in enumerate(shape) if s is None]
        if any(bounds is None or bounds[d] is None for d in dyn):
            raise PadderUnsupported(f"{self.where}: operand {value.type} has a dim without a bound", self.name)
        full = [bounds[d] if s is None else s for d, s in enumerate(shape)]
        et = ir.RankedTensorType(value.type).element_type
        static_t = ir.RankedTensorType.get(full, et)
        live = {d: stablehlo.GetDimensionSizeOp(value, d, ip=self.ip).result for d in dyn}
        v = value
        for d in dyn:
            v = stablehlo.SetDimensionSizeOp(v, self.const(full[d]), d, ip=self.ip).result
        v.set_type(static_t)
        i32_t = ir.RankedTensorType.get(full, self.i32)
        pred_t = ir.RankedTensorType.get(full, ir.IntegerType.get_signless(1))
        keep = None
        for d in dyn:
            iota = stablehlo.IotaOp(i32_t, d, ip=self.ip).result
            n = stablehlo.BroadcastInDimOp(i32_t, live[d], [], ip=self.ip).result
            inside = stablehlo.CompareOp(
                iota, n, stablehlo.ComparisonDirectionAttr.get("LT"), results=[pred_t], ip=self.ip
            ).result
            keep = inside if keep is None else stablehlo.AndOp(keep, inside, ip=self.ip).result
        fill = stablehlo.BroadcastInDimOp(static_t, identity, [], ip=self.ip).result
        return stablehlo.SelectOp(keep, v, fill, ip=self.ip).result, live


def _replace(op, new_results, sizes_per_result, label):
    """Give each of ``new_results`` (static) the original result's type with the
    live sizes ``sizes_per_result`` and replace the original op's uses; erase it."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    ip = ir.InsertionPoint(op)
    for old, new, sizes in zip(op.results, new_results, sizes_per_result, strict=True):
        shape, _ = info(old.type)
        for d, s in enumerate(shape):
            if s is None:
                if d not in sizes:
                    raise PadderUnsupported(f"{label}: {op.name}: no live size for result dim {d} of {old.type}", op.name)
                new = stablehlo.SetDimensionSizeOp(new, sizes[d], d, ip=ip).result
        new.set_type(old.type)
        old.replace_all_uses_with(new)
    op.erase()


def _static_clone(op, operands, label):
    """``op`` cloned before itself on ``operands``, its results static at their bounds."""
    from jaxlib.mlir import ir

    clone = op.clone(ip=ir.InsertionPoint(op))
    for i, v in enumerate(operands):
        clone.operands[i] = v
    for old, new in zip(op.results, clone.results, strict=True):
        shape, bounds = info(old.type)
        if any(s is None and (bounds is None or bounds[d] is None) for d, s in enumerate(shape)):
            raise PadderUnsupported(f"{label}: {op.name}: result {old.type} has a dim without a bound", op.name)
        full = [bounds[d] if s is None else s for d, s in enumerate(shape)]
        new.set_type(ir.RankedTensorType.get(full, ir.RankedTensorType(old.type).element_type))
    return clone  # (the module verifier, after the rewrite, checks these shapes against the op's own)


def _convolution(op, label) -> bool:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    x, w = op.operands
    xshape, _ = info(x.type)
    dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial = list(dn.input_spatial_dimensions)
    if not any(xshape[d] is None for d in spatial):
        return False  # a dynamic batch alone: the padder serves it
    wshape, _ = info(w.type)
    if any(s is None for s in wshape):
        raise PadderUnsupported(f"{label}: {op.name} with a dynamic kernel shape {w.type}", op.name)
    if xshape[dn.input_feature_dimension] is None:
        raise PadderUnsupported(f"{label}: {op.name} with a dynamic input feature dim {x.type}", op.name)
    if xshape[dn.input_batch_dimension] is None and ir.IntegerAttr(op.attributes["batch_group_count"]).value != 1:
        raise PadderUnsupported(f"{label}: {op.name} with batch groups over a dynamic batch", op.name)
    nsp = len(spatial)
    strides = _ints(op, "window_strides", nsp, 1)
    lhs_dil, rhs_dil = _ints(op, "lhs_dilation", nsp, 1), _ints(op, "rhs_dilation", nsp, 1)
    pads = _padding(op, nsp)
    b = _Builder(op, label)
    et = ir.RankedTensorType(x.type).element_type
    zero_attr = ir.FloatAttr.get(et, 0.0) if not isinstance(et, ir.IntegerType) else ir.IntegerAttr.get(et, 0)
    zero = stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], et), zero_attr), ip=b.ip).result
    xs, live = b.static_masked(x, zero)
    clone = _static_clone(op, [xs, w], label)
    sizes = {}
    if dn.input_batch_dimension in live:
        sizes[dn.output_batch_dimension] = live[dn.input_batch_dimension]
    for i, (di, do) in enumerate(zip(spatial, dn.output_spatial_dimensions, strict=True)):
        if di in live:
            k = wshape[dn.kernel_spatial_dimensions[i]]
            sizes[do] = b.window_size(live[di], lhs_dil[i], *pads[i], k, rhs_dil[i], strides[i])
    _replace(op, list(clone.results), [sizes], label)
    return True


def _reduce_window(op, label) -> bool:
    n = len(op.operands) // 2
    inputs, inits = list(op.operands[:n]), list(op.operands[n:])
    shape, _ = info(inputs[0].type)
    rank = len(shape)
    win = _ints(op, "window_dimensions", rank, 1)
    strides = _ints(op, "window_strides", rank, 1)
    base_dil, dil = _ints(op, "base_dilations", rank, 1), _ints(op, "window_dilations", rank, 1)
    pads = _padding(op, rank)
    trivial = [win[d] == 1 and strides[d] == 1 and base_dil[d] == 1 and dil[d] == 1 and pads[d] == (0, 0) for d in range(rank)]
    if all(trivial[d] or s is not None for d, s in enumerate(shape)):
        return False  # no window slides over a dynamic dim: the padder serves it
    b = _Builder(op, label)
    masked, live = [], {}
    for v, init in zip(inputs, inits, strict=True):
        m, live = b.static_masked(v, init)
        masked.append(m)
    clone = _static_clone(op, masked + inits, label)
    sizes = {
        d: live[d] if trivial[d] else b.window_size(live[d], base_dil[d], *pads[d], win[d], dil[d], strides[d]) for d in live
    }
    _replace(op, list(clone.results), [sizes] * n, label)
    return True
