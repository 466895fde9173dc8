"""Higher-order ops: ``torch.cond`` -> ``stablehlo.if`` (a Python-bool
predicate picks its branch at lowering time), ``map`` and ``scan`` ->
``stablehlo.while`` over the leading dim (trip count: that dim's size, so a
`?` dim works), each iteration slicing row ``i`` of the inputs
(``dynamic_slice``) and writing row ``i`` of the stacked outputs
(``dynamic_update_slice``); a row with `?` dims is a gather. Subgraphs are lowered by the driver's
``ctx.lower_subgraph(graph_module, input values)`` inside the regions.
"""

from __future__ import annotations

import torch

from ..builder import Value
from ..registry import lowers
from ..types import SHAPE_DTYPE
from .index import gather_along

hop = torch.ops.higher_order


def _outputs_as(ctx, node, vals):
    """Branch results converted to the node's result dtypes (shapes are the node's)."""
    return [ctx.reshape(ctx.convert(v, ctx.out_dtype(node, i)), ctx.out_shape(node, i)) for i, v in enumerate(vals)]


@lowers(hop.cond)
def _cond(ctx, node, pred, true_gm, false_gm, operands, *rest):
    operands = list(operands)
    if not isinstance(pred, Value):
        return ctx.lower_subgraph(true_gm if pred else false_gm, operands)
    if pred.rank:
        pred = ctx.reshape(pred, ())
    pred = ctx.convert(pred, "i1")
    n = len(node.meta["val"])
    specs = [ctx.out_spec(node, i) for i in range(n)]
    regions = [
        ctx.region([], lambda c, gm=gm: _outputs_as(c, node, c.lower_subgraph(gm, operands))) for gm in (true_gm, false_gm)
    ]
    return ctx.op("stablehlo.if", [pred], specs, regions=regions)


def _row(ctx, x, i):
    """``x[i]`` for a loop index ``i`` (i32 scalar): ``dynamic_slice`` when the
    row is static, else a gather (its slice sizes from the dims, not from ``i``)."""
    rest = x.sym_shape[1:]
    if any(not isinstance(d, int) for d in rest):
        return gather_along(ctx, x, 0, i, rest)
    zero = ctx.constant(0, SHAPE_DTYPE)
    row = ctx.op(
        "stablehlo.dynamic_slice",
        [x, i] + [zero] * len(rest),
        ((1,) + rest, x.dtype),
        attrs={"slice_sizes": "array<i64: " + ", ".join(str(d) for d in (1,) + rest) + ">"},
    )
    return ctx.reshape(row, rest)


def _put_row(ctx, acc, v, i):
    zero = ctx.constant(0, SHAPE_DTYPE)
    v = ctx.reshape(ctx.convert(v, acc.dtype), (1,) + tuple(acc.sym_shape[1:]))
    return ctx.op("stablehlo.dynamic_update_slice", [acc, v, i] + [zero] * (acc.rank - 1), (acc.sym_shape, acc.dtype))


def _loop(ctx, n, carries, stacked, step):
    """``for i in range(n)``: ``step(c, i, carries) -> (carries, rows)``, rows
    written into the ``stacked`` accumulators; returns (carries, stacked)."""
    k = len(carries)
    size = ctx.dim(n)

    def cond(c, i, *vals):
        return c.compare(i, size, "LT")

    def body(c, i, *vals):
        new_carries, rows = step(c, i, list(vals[:k]))
        new_carries = [c.convert(v, old.dtype) for v, old in zip(new_carries, vals[:k], strict=False)]
        accs = [_put_row(c, acc, r, i) for acc, r in zip(vals[k:], rows, strict=False)]
        return [c.binary("stablehlo.add", i, c.constant(1, SHAPE_DTYPE))] + new_carries + accs

    out = ctx.while_loop([ctx.constant(0, SHAPE_DTYPE)] + list(carries) + list(stacked), cond, body)
    return out[1 : 1 + k], out[1 + k :]


@lowers(hop.map_impl)
def _map(ctx, node, body_gm, xs, args):
    xs, args = list(xs), list(args)
    n = xs[0].sym_shape[0]
    stacked = [ctx.constant(0, dt, shape) for shape, dt in (ctx.out_spec(node, j) for j in range(len(node.meta["val"])))]

    def step(c, i, carries):
        return [], c.lower_subgraph(body_gm, [_row(c, x, i) for x in xs] + args)

    return _loop(ctx, n, [], stacked, step)[1]


@lowers(hop.scan)
def _scan(ctx, node, combine_gm, init, xs, additional_inputs=(), *rest):
    init, xs, extra = list(init), list(xs), list(additional_inputs)
    k = len(init)
    n = xs[0].sym_shape[0]
    m = len(node.meta["val"])
    stacked = [ctx.constant(0, dt, shape) for shape, dt in (ctx.out_spec(node, j) for j in range(k, m))]

    def step(c, i, carries):
        outs = c.lower_subgraph(combine_gm, carries + [_row(c, x, i) for x in xs] + extra)
        return outs[:k], outs[k:]

    carries, ys = _loop(ctx, n, init, stacked, step)
    return list(carries) + list(ys)


class EffectToken:
    """The value of an effect-token input (``InputKind.TOKEN``): it orders effectful
    ops in torch's graph; the lowered module runs in program order and needs none."""

    def __repr__(self):
        return "EffectToken()"


class _Inner:
    """``with_effects``' node as its inner op's lowering sees it: the inner op's
    target, arguments and result metadata (the node's, without the leading token)."""

    def __init__(self, node, op, args, kwargs):
        self.name, self.op, self.target = node.name, "call_function", op
        self.args, self.kwargs = args, kwargs
        vals = node.meta.get("val")
        rest = tuple(vals[1:]) if isinstance(vals, (tuple, list)) else ()
        self.meta = {**node.meta, "val": rest[0] if len(rest) == 1 else rest}

    def format_node(self):
        return f"%{self.name} = with_effects({self.target})"


@lowers(hop.with_effects)
def _with_effects(ctx, node, token, op, *args, **kwargs):
    """An effectful op (``_linalg_check_errors``, ...) threaded on a token: its own
    lowering, with the token passed through as the first result."""
    from ..builder import LoweringError
    from ..registry import LOWERINGS, target_name

    fn = LOWERINGS.get(op)
    if fn is None:
        raise LoweringError(f"no StableHLO lowering for aten op {target_name(op)} (inside with_effects %{node.name})")
    inner = _Inner(node, op, node.args[2:], node.kwargs)
    out = fn(ctx, inner, *args, **kwargs)
    return [token, *(out if isinstance(out, (list, tuple)) else [out] if out is not None else [])]
