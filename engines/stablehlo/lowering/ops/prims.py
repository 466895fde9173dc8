"""``prims.*`` ops (torch's refs decompose some aten ops to them: ``round.decimals``
to ``prims.mul``/``prims.round``, ``i0`` to ``prims.bessel_i0``) lowered as the aten
op of the same name: :func:`alias_prims` registers, for each elementwise prim whose
arguments are tensors only, the lowering of the aten overload (``.default`` or
``.Tensor``) with the same tensor arguments, where the registry has one. A lowering
reads shapes and dtypes from the node's result, which a prim has as its aten twin does."""

from __future__ import annotations

import torch

from ..registry import LOWERINGS


def _tensor_args(schema) -> list[str] | None:
    """The argument types of an all-positional schema, or None."""
    if any(a.kwarg_only for a in schema.arguments):
        return None
    return [str(a.type) for a in schema.arguments]


def alias_prims() -> list[str]:
    """Register the prims with an aten twin in the registry; returns their names."""
    aliased = []
    prims, aten = torch.ops.prims, torch.ops.aten
    for name in dir(prims):
        packet = getattr(prims, name, None)
        prim = getattr(packet, "default", None)
        if not isinstance(prim, torch._ops.OpOverload) or prim in LOWERINGS:
            continue
        types = _tensor_args(prim._schema)
        if not types or any(t != "Tensor" for t in types) or len(prim._schema.returns) != 1:
            continue
        twin_packet = getattr(aten, name, None)
        for overload in ("default", "Tensor"):
            twin = getattr(twin_packet, overload, None) if twin_packet is not None else None
            if twin is None or twin not in LOWERINGS:
                continue
            if [str(a.type) for a in twin._schema.arguments if not a.kwarg_only] != types:
                continue
            LOWERINGS[prim] = LOWERINGS[twin]
            aliased.append(name)
            break
    return aliased


def _prim_reduction(kind):
    def fn(ctx, node, x, dims, *, output_dtype=None):
        """``prims.<kind>(x, dims)``: the reduction over ``dims`` (all where None), no keepdim."""
        dims = list(range(x.rank)) if dims is None else [d % x.rank for d in dims]
        r = ctx.reduce(x, dims, kind, dtype=ctx.out_dtype(node))
        return ctx.reshape(r, ctx.out_shape(node))

    return fn


def _register_reductions():
    from ..registry import lowers

    prims = torch.ops.prims
    for name, kind in (("sum", "add"), ("prod", "mul"), ("amax", "max"), ("amin", "min")):
        lowers(getattr(prims, name).default)(_prim_reduction(kind))


_register_reductions()
