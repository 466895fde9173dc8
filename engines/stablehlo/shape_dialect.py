"""Size arithmetic written in MLIR's ``shape``, ``tensor`` and ``arith`` dialects, rewritten as StableHLO.

torch-mlir's StableHLO output (``torch_mlir.fx.export_and_import(ep,
output_type="stablehlo")``) keeps ``?`` dims, but computes the sizes it feeds
``stablehlo.dynamic_reshape`` and ``dynamic_broadcast_in_dim`` with
``shape.shape_of``, ``tensor.dim``, ``tensor.from_elements``,
``shape.broadcast``, ``shape.num_elements`` and ``arith`` ops on ``index``/``i64``
scalars, guarded by ``shape.cstr_broadcastable`` + ``shape.assuming``. XLA's
StableHLO parser (jaxlib) refuses those dialects, and stablehlo's own
``shape-legalize-to-stablehlo`` refuses the witness ops and ``i64`` element lists.
:func:`legalize` rewrites them in place into StableHLO on ``tensor<i64>``
scalars and ``tensor<Nxi64>`` shapes, so the module runs on the same XLA
executor as ours. Broadcast witnesses are dropped (torch.export's guards have
checked broadcastability for every size the program accepts); any other
non-StableHLO op raises :class:`ShapeDialectError` naming it.

It works on a module of torch-mlir's own MLIR context (its Python bindings),
imported lazily by the caller. :func:`inline_resources` then writes the
module's weights, which torch-mlir keeps as ``dense_resource`` blobs that XLA
refuses ("Only dense elements attr are supported"), as ``dense`` literals.
"""

from __future__ import annotations

import re
from typing import Any

#: arith binary ops on sizes and their StableHLO op (sizes are non-negative: unsigned = signed)
BINARY = {
    "arith.addi": "stablehlo.add",
    "arith.subi": "stablehlo.subtract",
    "arith.muli": "stablehlo.multiply",
    "arith.divui": "stablehlo.divide",
    "arith.divsi": "stablehlo.divide",
    "arith.floordivsi": "stablehlo.divide",
    "arith.remui": "stablehlo.remainder",
    "arith.remsi": "stablehlo.remainder",
    "arith.maxsi": "stablehlo.maximum",
    "arith.maxui": "stablehlo.maximum",
    "arith.minsi": "stablehlo.minimum",
    "arith.minui": "stablehlo.minimum",
}
#: arith.cmpi's predicate (its enum value) as a StableHLO comparison direction (6-9 compare unsigned)
CMPI = {0: "EQ", 1: "NE", 2: "LT", 3: "LE", 4: "GT", 5: "GE", 6: "LT", 7: "LE", 8: "GT", 9: "GE"}
#: ops whose result is their operand, re-typed (every size is an i64 here)
IDENTITY = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")
#: ops that only guard: their witness is dropped
WITNESSES = ("shape.cstr_broadcastable", "shape.cstr_eq", "shape.const_witness", "shape.assuming_all")


class ShapeDialectError(ValueError):
    """A non-StableHLO op this rewrite does not know."""


class _Rewriter:
    def __init__(self, ir: Any):
        self.ir = ir
        self.i64 = ir.IntegerType.get_signless(64)
        self.i32 = ir.IntegerType.get_signless(32)
        self.map: dict[Any, Any] = {}  # old size value -> its tensor<i64> / tensor<Nxi64> replacement
        self.ints: dict[Any, int] = {}  # a constant's replacement -> its value (an axis operand)

    def tensor(self, shape, elem=None):
        return self.ir.RankedTensorType.get(list(shape), elem or self.i64)

    def op(self, name, operands, result_type, attributes=None):
        return self.ir.Operation.create(name, results=[result_type], operands=list(operands), attributes=attributes or {}).result

    def const(self, values, shape=()):
        typ = self.tensor(shape)
        text = f"dense<{values}> : {typ}" if not shape else f"dense<[{', '.join(str(v) for v in values)}]> : {typ}"
        return self.op("stablehlo.constant", [], typ, {"value": self.ir.Attribute.parse(text)})

    def dim(self, value, axis: int):
        """``tensor<i64>``: the size of ``value``'s ``axis``."""
        shape = self.ir.RankedTensorType(value.type)
        if not shape.is_dynamic_dim(axis):
            return self.const(shape.get_dim_size(axis))
        size = self.op(
            "stablehlo.get_dimension_size",
            [value],
            self.tensor([], self.i32),
            {"dimension": self.ir.IntegerAttr.get(self.i64, axis)},
        )
        return self.op("stablehlo.convert", [size], self.tensor([]))

    def vector(self, scalars):
        """``tensor<Nxi64>`` of ``tensor<i64>`` scalars."""
        parts = [self.op("stablehlo.reshape", [s], self.tensor([1])) for s in scalars]
        if len(parts) == 1:
            return parts[0]
        return self.op(
            "stablehlo.concatenate", parts, self.tensor([len(parts)]), {"dimension": self.ir.IntegerAttr.get(self.i64, 0)}
        )

    def element(self, vec, i: int):
        """``tensor<i64>``: element ``i`` of a ``tensor<Nxi64>``."""
        attrs = {
            "start_indices": self.ir.Attribute.parse(f"array<i64: {i}>"),
            "limit_indices": self.ir.Attribute.parse(f"array<i64: {i + 1}>"),
            "strides": self.ir.Attribute.parse("array<i64: 1>"),
        }
        one = self.op("stablehlo.slice", [vec], self.tensor([1]), attrs)
        return self.op("stablehlo.reshape", [one], self.tensor([]))

    def length(self, vec) -> int:
        return self.ir.RankedTensorType(vec.type).get_dim_size(0)

    def new(self, value):
        """The StableHLO form of a size operand: its replacement, or itself where its
        uses were replaced already (a ``tensor<i64>`` or ``tensor<Nxi64>``)."""
        value = self.map.get(value, value)
        typ = value.type
        try:
            if self.ir.RankedTensorType(typ).element_type == self.i64:
                return value
        except ValueError:  # not a ranked tensor: a scalar or a shape of the dialects
            pass
        made = getattr(value.owner, "name", "an argument of @main")  # a block argument's owner is its block
        raise ShapeDialectError(f"size value {value.get_name()} of type {typ} has no StableHLO form (made by {made})")

    # -- one op --------------------------------------------------------------
    def rewrite(self, op) -> None:
        name = op.name
        ir = self.ir
        with ir.InsertionPoint(op), op.location:
            if name == "arith.constant" and self._is_tensor(op.result.type):
                typ = ir.RankedTensorType(op.result.type)
                if str(typ.element_type) == "index":  # sizes: as i64, which StableHLO constants hold
                    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["value"])]
                    if len(values) == 1 and typ.rank and typ.get_dim_size(0) != 1:  # a splat
                        values = values * typ.get_dim_size(0)
                    self.map[op.result] = self.const(values, tuple(typ.shape)) if typ.rank else self.const(values[0])
                else:  # a tensor of data: the same value as a StableHLO constant
                    self.map[op.result] = self.op("stablehlo.constant", [], typ, {"value": op.attributes["value"]})
            elif name == "shape.const_shape":
                dims = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["shape"])]
                self.map[op.result] = self.const(dims, (len(dims),)) if dims else self.const([], (0,))
            elif name == "arith.constant":
                value = ir.IntegerAttr(op.attributes["value"]).value
                self.map[op.result] = self.const(value)
                self.ints[self.map[op.result]] = value
            elif name in IDENTITY:
                self.map[op.result] = self.new(op.operands[0])
            elif name in BINARY:
                a, b = (self.new(v) for v in op.operands)
                self.map[op.result] = self.op(BINARY[name], [a, b], self.tensor([]))
            elif name == "arith.ceildivsi" or name == "arith.ceildivui":
                a, b = (self.new(v) for v in op.operands)
                one = self.const(1)
                top = self.op("stablehlo.subtract", [self.op("stablehlo.add", [a, b], self.tensor([])), one], self.tensor([]))
                self.map[op.result] = self.op("stablehlo.divide", [top, b], self.tensor([]))
            elif name == "arith.cmpi":
                a, b = (self.new(v) for v in op.operands)
                pred = ir.IntegerAttr(op.attributes["predicate"]).value
                cmp = self.op(
                    "stablehlo.compare",
                    [a, b],
                    self.tensor([], ir.IntegerType.get_signless(1)),
                    {
                        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {CMPI[pred]}>"),
                        # ult/ule/ugt/uge compare as unsigned: a negative size arithmetic result is then large
                        "compare_type": ir.Attribute.parse(
                            f"#stablehlo<comparison_type {'UNSIGNED' if pred >= 6 else 'SIGNED'}>"
                        ),
                    },
                )
                self.map[op.result] = cmp
            elif name == "arith.select":
                c, a, b = (self.map.get(v, v) for v in op.operands)
                self.map[op.result] = self.op("stablehlo.select", [c, self.new(a), self.new(b)], self.tensor([]))
            elif name == "tensor.dim":
                axis = self._index_constant(op.operands[1], op)
                self.map[op.result] = self.dim(op.operands[0], axis)
            elif name == "tensor.from_elements":
                self.map[op.result] = self.vector([self.new(v) for v in op.operands])
            elif name == "shape.shape_of":
                src = op.operands[0]
                rank = ir.RankedTensorType(src.type).rank
                self.map[op.result] = self.vector([self.dim(src, i) for i in range(rank)]) if rank else self.const([], (0,))
            elif name == "shape.broadcast":
                self.map[op.result] = self._broadcast([self.new(v) for v in op.operands])
            elif name == "shape.num_elements":
                vec = self.new(op.operands[0])
                total = self.const(1)
                for i in range(self.length(vec)):
                    total = self.op("stablehlo.multiply", [total, self.element(vec, i)], self.tensor([]))
                self.map[op.result] = total
            elif name == "tensor.extract":
                vec = self.new(op.operands[0])
                self.map[op.result] = self.element(vec, self._index_constant(op.operands[1], op))
            elif name in WITNESSES:
                pass  # nothing computes with a witness but shape.assuming, inlined below
            elif name == "shape.assuming":
                self._inline_assuming(op)
                return
            else:
                raise ShapeDialectError(f"no StableHLO form for {name}: {op}")
        # every use now reads the replacement (StableHLO's shape operands take any integer type)
        for old in op.results:
            if old in self.map:
                old.replace_all_uses_with(self.map[old])

    def _is_tensor(self, typ) -> bool:
        try:
            self.ir.RankedTensorType(typ)
            return True
        except ValueError:
            return False

    def _index_constant(self, value, op) -> int:
        if value not in self.ints:
            raise ShapeDialectError(f"{op.name} with a computed index is not rewritten: {op}")
        return self.ints[value]

    def _broadcast(self, shapes):
        rank = max(self.length(s) for s in shapes)
        out = None
        for s in shapes:
            pad = rank - self.length(s)
            if pad:  # right-aligned: leading dims of the shorter shape are 1
                s = self.op(
                    "stablehlo.concatenate",
                    [self.const([1] * pad, (pad,)), s],
                    self.tensor([rank]),
                    {"dimension": self.ir.IntegerAttr.get(self.i64, 0)},
                )
            # broadcastable sizes are equal or 1: the result is the larger
            out = s if out is None else self.op("stablehlo.maximum", [out, s], self.tensor([rank]))
        return out

    def _inline_assuming(self, op) -> None:
        block = op.regions[0].blocks[0]
        body = list(block.operations)
        *inner, yield_ = body
        for o in inner:
            o.move_before(op)
        for o in inner:
            if not o.name.startswith(("stablehlo.", "chlo.")):
                self.rewrite(o)
        for old, new in zip(op.results, yield_.operands, strict=True):
            old.replace_all_uses_with(self.map.get(new, new))
        op.erase()


def legalize(module: Any, ir: Any) -> None:
    """Rewrite ``module``'s (a torch-mlir ``ir.Module``) shape, tensor and arith
    ops into StableHLO in place; ``ir`` is torch-mlir's ``ir`` module."""
    with module.context:
        rw = _Rewriter(ir)
        for func in module.body.operations:
            for block in func.regions[0].blocks:
                for op in list(block.operations):
                    if op.name.startswith(("stablehlo.", "chlo.")) or op.name in ("func.return",):
                        continue
                    rw.rewrite(op)
        dead = []
        for func in module.body.operations:
            for block in func.regions[0].blocks:
                dead += [op for op in block.operations if not op.name.startswith(("stablehlo.", "chlo.", "func."))]
        for op in reversed(dead):  # users before their operands
            op.erase()


_RESOURCES = re.compile(r"\{-#\s*dialect_resources:\s*\{\s*builtin:\s*\{(.*?)\}\s*\}\s*#-\}", re.S)
_BLOB = re.compile(r'([\w.$-]+):\s*"0x([0-9A-Fa-f]*)"')


def inline_resources(text: str) -> str:
    """``text`` with every ``dense_resource<name>`` replaced by the blob's data as a
    hex ``dense<"0x…">`` literal and the ``dialect_resources`` section dropped.
    A blob's first 4 bytes are its alignment, not data."""
    m = _RESOURCES.search(text)
    if not m:
        return text
    blobs = {name: data[8:] for name, data in _BLOB.findall(m.group(1))}
    body = text[: m.start()] + text[m.end() :]

    def sub(r: re.Match) -> str:
        name = r.group(1)
        if name not in blobs:
            raise ShapeDialectError(f"dense_resource<{name}> has no blob in the module")
        return f'dense<"0x{blobs[name]}">'

    return re.sub(r"dense_resource<([\w.$-]+)>", sub, body)
