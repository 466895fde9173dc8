"""The bounded entry's shape facts (:mod:`.padder_rewrite`): a type at its
bound, where a shape operand's sizes come from (sizes and constants, else a
data-dependent size the padder cannot bound), and which broadcasts are
uniform along their dynamic dims."""

from __future__ import annotations

from .module import PadderUnsupported
from .padder_bounds import info

#: ops a shape operand may be computed with (sizes from get_dimension_size and constants)
SHAPE_OPS = {
    "stablehlo.get_dimension_size",
    "stablehlo.constant",
    "stablehlo.reshape",
    "stablehlo.concatenate",
    "stablehlo.slice",
    "stablehlo.convert",
    "stablehlo.add",
    "stablehlo.subtract",
    "stablehlo.multiply",
    "stablehlo.divide",
    "stablehlo.remainder",
    "stablehlo.maximum",
    "stablehlo.minimum",
    "stablehlo.negate",
    "stablehlo.select",
    "stablehlo.compare",
    "stablehlo.clamp",
    "stablehlo.abs",
    "stablehlo.sign",
    "stablehlo.and",
    "stablehlo.or",
    "stablehlo.not",
    "stablehlo.broadcast_in_dim",
    "stablehlo.shift_right_arithmetic",
    "stablehlo.shift_left",
    "stablehlo.power",
    "shape.shape_of",
    "arith.constant",
    "arith.index_cast",
}


def at_bound(t, where: str, op: str):
    """(static type at the bound, dynamic dims) of a ranked tensor type."""
    from jaxlib.mlir import ir

    rt = ir.RankedTensorType(t)
    shape, bounds = info(t)
    full, dyn = [], []
    for d, s in enumerate(shape):
        if s is None:
            b = bounds[d] if bounds is not None else None
            if b is None:
                raise PadderUnsupported(
                    f"{where}: dim {d} of {t} has no bound (an unbounded or data-dependent size): the dynamic padder needs one",
                    op,
                )
            full.append(b)
            dyn.append(d)
        else:
            full.append(s)
    return ir.RankedTensorType.get(full, rt.element_type), tuple(dyn), tuple(full)


def check_shape_source(value, op_name: str, where: str, size_args) -> None:
    """The shape operand must be computed from sizes and constants."""
    from jaxlib.mlir import ir

    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        owner = v.owner
        if isinstance(owner, ir.Block):
            if any(v == a for a in size_args):
                continue
            raise PadderUnsupported(
                f"{where}: the shape operand of {op_name} derives from a function argument "
                f"(a data-dependent size): the dynamic padder cannot bound it",
                op_name,
            )
        name = owner.name
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        if name not in SHAPE_OPS:
            raise PadderUnsupported(
                f"{where}: the shape operand of {op_name} is computed by {name} "
                f"(a data-dependent size): the dynamic padder cannot bound it",
                op_name,
            )
        if name == "stablehlo.get_dimension_size":
            continue
        todo.extend(owner.operands)


#: elementwise ops: XLA's padder gives the result the live sizes of any operand that has them
ELEMENTWISE = frozenset(
    "stablehlo." + n
    for n in [
        "add",
        "subtract",
        "multiply",
        "divide",
        "remainder",
        "maximum",
        "minimum",
        "power",
        "atan2",
        "compare",
        "select",
        "clamp",
        "and",
        "or",
        "xor",
    ]
)


def _dynamic_dims(t) -> set:
    return {d for d, s in enumerate(info(t)[0]) if s is None}


def _has_dynamic_dims(t) -> bool:
    return bool(_dynamic_dims(t))


def _uniform(value) -> bool:
    """A value that is a broadcast of an operand without dynamic dims: the same along each dynamic dim."""
    from jaxlib.mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return False
    if owner.name == "stablehlo.broadcast_in_dim":
        return True
    return owner.name == "stablehlo.dynamic_broadcast_in_dim" and not _has_dynamic_dims(owner.operands[0].type)


def uniform_into_sized(op) -> bool:
    """Whether the ``dynamic_broadcast_in_dim`` ``op`` may stay static at the bound without live
    sizes: its operand has no dynamic dims (so its padding rows equal its live ones) and every
    use is an elementwise op with another operand that carries live sizes on those dims (XLA's padder takes
    the result's sizes from it). A scalar times a dynamic tensor then costs the padder nothing:
    data2vec-audio's 503 such broadcasts were ~1,000 ``set_dimension_size`` ops that its compile
    stalled on."""
    if _has_dynamic_dims(op.operands[0].type):
        return False
    result = op.results[0]
    dyn = _dynamic_dims(result.type)
    uses = list(result.uses)
    if not uses:
        return False
    for use in uses:
        user = use.owner
        if user.name not in ELEMENTWISE:
            return False
        if not any(v != result and dyn <= _dynamic_dims(v.type) and not _uniform(v) for v in user.operands):
            return False
    return True
