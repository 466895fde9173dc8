"""The bounded rewrite of a ``dynamic_reshape`` that XLA's dynamic padder cannot place.

A static ``reshape`` on padded data is right where the padding keeps its place:
the live data a prefix of the result (a dynamic outermost dim), or the same
dims with unit dims added or removed; XLA's padder also compacts the live data
of a reshape that *combines* dynamic dims. But a reshape that *splits* a dynamic
dim into inner dims (``tensor<?xf32> -> tensor<2x?xf32>``, as torch_xla lowers
an embedding of a ``(B, ?)`` index: flatten, gather, unflatten) gives XLA no
way to know which result dim is dynamic: a static reshape of the padded buffer
puts the second row's data at the bound's offset, not the live size's.

:func:`split_reshape` computes it instead: the operand flattened (a combine,
which the padder compacts), then a ``gather`` of the element each result
position holds in the live row-major order, ``sum_d iota_d * stride_d`` with the
strides from the live result sizes.
"""

from __future__ import annotations

import math


def needs_gather(operand_type, result_type) -> bool:
    """Whether a static reshape of padded data would misplace the live data:
    a dynamic result dim past the outermost, other than a unit-dim change; or
    operand and result whose shapes at their bounds hold different element
    counts (no static reshape exists between them)."""
    from .padder_bounds import info

    ishape, ibounds = info(operand_type)
    rshape, rbounds = info(result_type)
    if all(s is not None for s in ishape):
        return False
    if _count_at_bound(ishape, ibounds) != _count_at_bound(rshape, rbounds):
        # bounds are per size expression (interval arithmetic on its normal form): ``B * L``
        # with ``L`` a chain of floor divisions, e.g. ``B*((T - 10)//10) + ...``, can bound above
        # ``8 * 50`` even when ``B <= 8`` and ``L <= 50``: XLA then rejects the reshape
        # ("mismatched element counts")
        return True
    if _splits_a_dynamic_dim(ishape, ibounds, rshape, rbounds):
        # WavLM's ``(<=12, 4, 16) -> (<=24, 32)``: "Dynamic input dimension to reshape that
        # is both splitted and combined is not supported"
        return True
    if not any(s is None for s in rshape[1:]):
        return False
    squeeze = lambda shape: [s for s in shape if s != 1]  # noqa: E731
    return squeeze(ishape) != squeeze(rshape)


def _count_at_bound(shape, bounds) -> int | None:
    """Elements of ``shape`` with each `?` at its bound (None: a `?` without one)."""
    full = [n if n is not None else (bounds[d] if bounds is not None else None) for d, n in enumerate(shape)]
    return None if any(n is None for n in full) else math.prod(full)


def _splits_a_dynamic_dim(ishape, ibounds, rshape, rbounds) -> bool:
    """Whether a group of dims (the shortest runs of operand and result dims with equal
    element counts at their bounds, unit dims left out) that holds a dynamic operand dim
    has more than one result dim: the padder places a reshape of dynamic dims only where
    it combines them into one."""

    def dims(shape, bounds):
        return [(bounds[d] if n is None else n, n is None) for d, n in enumerate(shape) if n != 1]

    a, b = dims(ishape, ibounds), dims(rshape, rbounds)
    i = j = 0
    while i < len(a) and j < len(b):
        gi, gj = [a[i]], [b[j]]
        i, j = i + 1, j + 1
        while math.prod(n for n, _ in gi) != math.prod(n for n, _ in gj):
            if math.prod(n for n, _ in gi) < math.prod(n for n, _ in gj) and i < len(a):
                gi.append(a[i])
                i += 1
            elif j < len(b):
                gj.append(b[j])
                j += 1
            else:
                return True  # no grouping: not a plain reshape of the bounds
        if any(dyn for _, dyn in gi) and len(gj) > 1:
            return True
    return False


def split_reshape(operand, static_t, dyn, sizes: dict, ip):
    """The result of a reshape of ``operand`` to ``static_t`` (at its bound) with
    live sizes ``sizes`` (``{result dim: i32 scalar}`` for every result dim),
    gathered element by element from the flattened operand (see the module
    docstring); ``dyn``: the result's dynamic dims."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from .module import PadderUnsupported
    from .padder_bounds import info

    i32 = ir.IntegerType.get_signless(32)
    scalar_t = ir.RankedTensorType.get([], i32)
    ot = ir.RankedTensorType(operand.type)
    oshape, obounds = info(operand.type)
    odyn = [d for d, n in enumerate(oshape) if n is None]
    if any(obounds is None or obounds[d] is None for d in odyn):
        raise PadderUnsupported(
            f"stablehlo.dynamic_reshape: operand {operand.type} has a `?` dim without a bound", "stablehlo.dynamic_reshape"
        )
    ofull = [obounds[d] if n is None else n for d, n in enumerate(oshape)]
    total = math.prod(ofull)

    def const(v):
        return stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(scalar_t, ir.IntegerAttr.get(i32, v)), ip=ip).result

    # the operand flattened: a combine, whose live data XLA's padder compacts to a prefix
    live = None
    for d, n in enumerate(ofull):
        s = stablehlo.GetDimensionSizeOp(operand, d, ip=ip).result if d in odyn else const(n)
        live = s if live is None else stablehlo.MulOp(live, s, ip=ip).result
    flat_t = ir.Type.parse(f"tensor<?x{ot.element_type}, #stablehlo.bounds<{total}>>")
    flat = stablehlo.ReshapeOp(ir.RankedTensorType.get([total], ot.element_type), operand, ip=ip).result
    flat = stablehlo.SetDimensionSizeOp(flat, live, 0, ip=ip).result
    flat.set_type(flat_t)
    # each result position's index in the live row-major order
    rt = ir.RankedTensorType(static_t)
    idx_t = ir.RankedTensorType.get(list(rt.shape), i32)
    index, stride = None, None
    for d in reversed(range(rt.rank)):
        term = stablehlo.IotaOp(idx_t, d, ip=ip).result
        if stride is not None:
            term = stablehlo.MulOp(term, stablehlo.BroadcastInDimOp(idx_t, stride, [], ip=ip).result, ip=ip).result
        index = term if index is None else stablehlo.AddOp(index, term, ip=ip).result
        stride = sizes[d] if stride is None else stablehlo.MulOp(stride, sizes[d], ip=ip).result
    # positions past the live sizes read anything in range (their values are padding)
    index = stablehlo.ClampOp(const(0), index, const(total - 1), ip=ip).result
    dn = ir.Attribute.parse(f"#stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = {rt.rank}>")
    return ir.Operation.create(
        "stablehlo.gather",
        results=[static_t],
        operands=[flat, index],
        attributes={"dimension_numbers": dn, "slice_sizes": ir.DenseI64ArrayAttr.get([1])},
        ip=ip,
    ).result
