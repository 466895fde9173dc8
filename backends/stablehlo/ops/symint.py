"""SymInt nodes: sym_size -> get_dimension_size, size arithmetic -> scalar ops."""
from __future__ import annotations

import operator

import torch

from ..builder import Value
from ..registry import lowers
from ..types import SHAPE_DTYPE

aten = torch.ops.aten


def _cached(ctx, node):
    """The value already emitted for the node's size, if any (a constant for a static one)."""
    val = node.meta.get("val")
    return ctx.sym.get(val) if isinstance(val, torch.SymInt) else None


def _operand(ctx, x):
    if isinstance(x, Value):
        return ctx.convert(x, SHAPE_DTYPE)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"SymInt arithmetic on {type(x).__name__} {x!r} is not supported")
    return ctx.constant(x, SHAPE_DTYPE)


@lowers(aten.sym_size.int)
def _sym_size(ctx, node, x, dim):
    c = _cached(ctx, node)
    if c is not None:
        return c
    return ctx.op("stablehlo.get_dimension_size", [x], ((), SHAPE_DTYPE), attrs={"dimension": f"{dim % x.rank} : i64"})


@lowers(aten.sym_numel.default)
def _sym_numel(ctx, node, x):
    return ctx.numel(x.sym_shape, SHAPE_DTYPE)


def _arith(opname):
    def fn(ctx, node, a, b):
        c = _cached(ctx, node)
        if c is not None:
            return c
        return ctx.binary(opname, _operand(ctx, a), _operand(ctx, b))

    return fn


lowers(operator.add)(_arith("stablehlo.add"))
lowers(operator.sub)(_arith("stablehlo.subtract"))
lowers(operator.mul)(_arith("stablehlo.multiply"))
lowers(torch.sym_max)(_arith("stablehlo.maximum"))
lowers(torch.sym_min)(_arith("stablehlo.minimum"))


@lowers(operator.floordiv)
def _floordiv(ctx, node, a, b):
    c = _cached(ctx, node)
    if c is not None:
        return c
    return ctx.sym.ops.floordiv(_operand(ctx, a), _operand(ctx, b))


@lowers(operator.mod)
def _mod(ctx, node, a, b):
    c = _cached(ctx, node)
    if c is not None:
        return c
    return ctx.sym.ops.mod(_operand(ctx, a), _operand(ctx, b))


@lowers(operator.neg)
def _neg(ctx, node, a):
    c = _cached(ctx, node)
    if c is not None:
        return c
    return ctx.unary("stablehlo.negate", _operand(ctx, a))


@lowers(operator.getitem)
def _getitem(ctx, node, seq, i):
    return seq[i]


# Runtime assertions torch.export inserts for Dim ranges / size-like values:
# the executors check input shapes against the declared bounds instead.
@lowers(aten._assert_scalar.default, aten.sym_constrain_range_for_size.default, aten.sym_constrain_range.default,
        aten._assert_tensor_metadata.default)
def _noop(ctx, node, *args, **kwargs):
    return None
