"""``Tensor.item()`` (``_local_scalar_dense``): a one-element tensor's value as a scalar
of the size arithmetic (``tensor<i32>``; ``f64`` for a float, ``i1`` for a bool).

Its unbacked symbol (``u0``) is bound to that value, read from tensor data, so it
computes where torch uses it as a number (``x * t.item()``). Two uses cannot be
expressed and are refused by name: a tensor dim over it (a data-dependent size, e.g.
a mixture of experts' ``split_with_sizes`` by token counts:
:meth:`~..symbolic.SymbolicEmitter.check_shape`), and a runtime assertion over it that
its range does not entail (a check on tensor data, as ``_assert_async`` is:
:func:`.symint.data_assertion`)."""

from __future__ import annotations

import torch

from ..registry import lowers
from ..types import SHAPE_DTYPE
from .symint import FLOAT

aten = torch.ops.aten


@lowers(aten._local_scalar_dense.default)  # (aten.item decomposes to it)
def _item(ctx, node, x):
    val = node.meta.get("val")
    if x.rank:
        x = ctx.reshape(x, ())
    if isinstance(val, (bool, int, float)):  # torch knew the value at export
        return ctx.constant(val, "i1" if isinstance(val, bool) else FLOAT if isinstance(val, float) else SHAPE_DTYPE)
    if isinstance(val, torch.SymBool):
        return ctx.convert(x, "i1")
    if isinstance(val, torch.SymFloat):
        return ctx.convert(x, FLOAT)
    ctx.sym.register_scalar(val, x, source=f"the value of .item() of tensor data (%{node.name})")
    ctx.item_symbols = getattr(ctx, "item_symbols", set()) | {s.name for s in val.node.expr.free_symbols}
    return ctx.dim(val)
