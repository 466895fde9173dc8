"""The bounded entry: one XLA executable for every size up to a module's bounds.

The rewrite is one pass over a module, its steps sharing the walk's state;
what stands alone is beside it: :mod:`.padder_bounds` (bounds and walks),
:mod:`.padder_shapes` (where a size comes from, uniform broadcasts),
:mod:`.padder_reshape` and :mod:`.padder_window`.

XLA's CPU compiler takes a module whose entry parameters are *static at the
bound*, marks each live size with ``stablehlo.set_dimension_size(param, n,
dim)`` (``n`` an ``i32`` scalar argument), and lets its dynamic padder mask the
padding: one compile serves every ``n <= bound``. It rejects bounded types at
the entry (``PadToStatic``, which the CPU runtime lacks) and the ``dynamic_*``
ops on bounded types ("can't be translated to XLA HLO").

:func:`bound_entry` rewrites a module with ``#stablehlo.bounds`` (or a `?`
module given per-argument bounds, the bucketed executor) into that form:

* each dynamic argument dim becomes static at its bound, with its live size an
  extra ``i32`` scalar argument (after the original ones, argument by
  argument, dim by dim); ``set_dimension_size`` re-establishes the bounded type;
* a ``dynamic_reshape`` that splits a dynamic dim into inner dims is a ``gather``
  from the flattened operand (:mod:`.padder_reshape`: XLA's padder would
  misplace the live data of a static reshape);
* each ``dynamic_broadcast_in_dim`` / ``dynamic_reshape`` / ``dynamic_iota`` /
  ``real_dynamic_slice`` (constant starts, or unit strides) /
  ``dynamic_gather`` / ``dynamic_pad`` (constant low, no interior) becomes its
  static form at the result's bound, followed by ``set_dimension_size`` with
  the live size read from the shape operand (which must derive from
  ``get_dimension_size`` and constants; otherwise the size is data-dependent
  and :class:`PadderUnsupported` names the op);
* a ``convolution`` or ``reduce_window`` sliding over a dynamic dim runs static
  at the bound on its operand masked to the op's identity (:mod:`.padder_window`:
  XLA's padder refuses the convolution and misjudges a padded window's size);
* a ``reduce`` over a dynamic dim must start from its body's identity (the
  padder fills the padding with the init value), else it is refused by name;
* each result is returned static at its bound (``set_dimension_size`` back to
  the bound), followed by its live sizes (``get_dimension_size``) as ``i32``
  scalars, which the caller uses to slice on the host.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .module import ExecutionError, PadderUnsupported
from .padder_bounds import (
    SizeProbe,
    arg_symbols,
    check_all_bounded,
    check_reduce_inits,
    find_main,
    info,
    inline_calls,
    propagate_bounds,
    static_slices,
    strip_assertions,
    walk,
)
from .padder_bounds import const_values as _const
from .padder_reshape import needs_gather, split_reshape
from .padder_shapes import at_bound, check_shape_source, uniform_into_sized
from .padder_window import rewrite_windows

DYN_OPS = (
    "stablehlo.dynamic_broadcast_in_dim",
    "stablehlo.dynamic_reshape",
    "stablehlo.dynamic_iota",
    "stablehlo.real_dynamic_slice",
    "stablehlo.dynamic_gather",
    "stablehlo.dynamic_pad",
)


@dataclass
class BoundedEntry:
    """A module rewritten for the bounded executor (see the module docstring).

    ``args``/``results``: per original argument/result, (static shape at the
    bound, dynamic dims); ``bytecode`` is what XLA compiles."""

    bytecode: bytes
    args: list[tuple[tuple[int, ...], tuple[int, ...]]]
    results: list[tuple[tuple[int, ...], tuple[int, ...]]]
    rewritten: dict[str, int]
    #: a bucket's entry (``arg_bounds``): checks each concrete shape's sizes against the bucket's
    probe: SizeProbe | None = None
    #: per live-size argument, the (argument, dim)s it is the size of: argument dims
    #: with one size symbol (the lowering's ``dynshape.dim_symbols``) share one, so
    #: XLA's padder knows they are equal (BERT's input_ids and attention_mask); a
    #: call whose dims disagree is refused. (Suspected cause of a BERT compile that
    #: stalled in LLVM; not reproduced at tests/stablehlo/models.py's config.)
    size_groups: list[list[tuple[int, int]]] | None = None

    def live_sizes(self, shapes) -> list[int]:
        """The live-size arguments for argument ``shapes`` (checks that dims sharing one agree)."""
        groups = self.size_groups or [[(i, d)] for i, (_, dyn) in enumerate(self.args) for d in dyn]
        out = []
        for g in groups:
            n = {shapes[i][d] for i, d in g}
            if len(n) != 1:
                raise ExecutionError(
                    f"argument dims {', '.join(f'{i}:{d}' for i, d in g)} have one size symbol but sizes {sorted(n)}"
                )
            out.append(n.pop())
        return out

    @property
    def n_arg_sizes(self) -> int:
        return len(self.size_groups) if self.size_groups is not None else sum(len(d) for _, d in self.args)


class _Rewriter:
    def __init__(self, label: str, size_args):
        self.label = label
        self.size_args = size_args
        self.counts: dict[str, int] = {}

    def scalar(self, shape_vec, d: int, ip):
        """Element ``d`` of a 1-D shape tensor as ``tensor<i32>``."""
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        et = ir.RankedTensorType(shape_vec.type).element_type
        one = stablehlo.SliceOp(shape_vec, [d], [d + 1], [1], results=[ir.RankedTensorType.get([1], et)], ip=ip)
        s = stablehlo.ReshapeOp(ir.RankedTensorType.get([], et), one.result, ip=ip).result
        i32 = ir.IntegerType.get_signless(32)
        if str(et) != "i32":
            s = stablehlo.ConvertOp(ir.RankedTensorType.get([], i32), s, ip=ip).result
        return s

    def set_sizes(self, value, dyn, sizes, final_type, ip):
        from jaxlib.mlir.dialects import stablehlo

        for d in dyn:
            value = stablehlo.SetDimensionSizeOp(value, sizes[d], d, ip=ip).result
        if str(value.type) != str(final_type):
            value.set_type(final_type)
        return value

    def rewrite(self, op) -> None:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        name = op.name
        where = f"{self.label}: {name}"
        result = op.results[0]
        rtype = result.type
        static_t, dyn, full = at_bound(rtype, where, name)
        ip = ir.InsertionPoint(op)
        ops = list(op.operands)
        if name == "stablehlo.dynamic_broadcast_in_dim":
            shape_vec = ops[1]
            dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
            new = stablehlo.BroadcastInDimOp(static_t, ops[0], dims, ip=ip).result
            if uniform_into_sized(op):
                check_shape_source(shape_vec, name, self.label, self.size_args)
                result.replace_all_uses_with(new)
                op.erase()
                self.counts[name] = self.counts.get(name, 0) + 1
                return
        elif name == "stablehlo.dynamic_reshape":
            shape_vec = ops[1]
            if needs_gather(ops[0].type, rtype):  # a split of a dynamic dim: see padder_reshape
                check_shape_source(shape_vec, name, self.label, self.size_args)
                every = {d: self.scalar(shape_vec, d, ip) for d in range(len(full))}
                new = split_reshape(ops[0], static_t, dyn, every, ip)
                result.replace_all_uses_with(self.set_sizes(new, dyn, every, rtype, ip))
                op.erase()
                self.counts[name] = self.counts.get(name, 0) + 1
                return
            new = stablehlo.ReshapeOp(static_t, ops[0], ip=ip).result
        elif name == "stablehlo.dynamic_iota":
            shape_vec = ops[0]
            new = stablehlo.IotaOp(static_t, ir.IntegerAttr(op.attributes["iota_dimension"]).value, ip=ip).result
        elif name == "stablehlo.real_dynamic_slice":
            return self._slice(op, static_t, dyn, full, ip)
        elif name == "stablehlo.dynamic_gather":
            return self._gather(op, static_t, dyn, ip)
        elif name == "stablehlo.dynamic_pad":
            return self._pad(op, static_t, dyn, full, ip)
        else:
            raise PadderUnsupported(
                f"{where}: not rewritten by the bounded executor (no static form on bounded types here)", name
            )
        check_shape_source(shape_vec, name, self.label, self.size_args)
        sizes = {d: self.scalar(shape_vec, d, ip) for d in dyn}
        out = self.set_sizes(new, dyn, sizes, rtype, ip)
        result.replace_all_uses_with(out)
        op.erase()
        self.counts[name] = self.counts.get(name, 0) + 1

    def _slice(self, op, static_t, dyn, full, ip):
        """``real_dynamic_slice`` with constant starts and strides: a static slice
        of the result's bound, its live size ``ceil((limit - start) / stride)``."""
        import numpy as np
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        name = op.name
        operand, start, limit, strides = op.operands
        if _const(strides) is not None and all(x == 1 for x in _const(strides)) and _const(start) is None:
            return self._dynamic_start_slice(op, static_t, dyn, full, ip)
        consts = []
        for what, v in (("start", start), ("strides", strides)):
            owner = v.owner
            if isinstance(owner, ir.Block) or owner.name != "stablehlo.constant":
                raise PadderUnsupported(
                    f"{self.label}: {name} with non-constant {what} indices: no static form on bounded types", name
                )
            consts.append(np.array(ir.DenseIntElementsAttr(owner.attributes["value"]), dtype=np.int64).reshape(-1))
        st, sd = consts
        check_shape_source(limit, name, self.label, self.size_args)
        oshape, obounds = info(operand.type)
        ofull = [s if s is not None else obounds[d] for d, s in enumerate(oshape)]
        lim = []
        for d in range(len(full)):
            hi = int(st[d] + full[d] * sd[d]) if d in dyn else int(st[d] + (full[d] - 1) * sd[d] + 1)
            lim.append(min(hi, ofull[d]))
        new = stablehlo.SliceOp(operand, [int(x) for x in st], lim, [int(x) for x in sd], results=[static_t], ip=ip).result
        sizes = {}
        for d in dyn:
            hi = self.scalar(limit, d, ip)
            c = lambda x: stablehlo.ConstantOp(ir.DenseElementsAttr.get(np.array(x, np.int32)), ip=ip).result  # noqa
            span = stablehlo.SubtractOp(hi, c(st[d]), ip=ip).result
            if sd[d] != 1:
                span = stablehlo.DivOp(stablehlo.AddOp(span, c(sd[d] - 1), ip=ip).result, c(sd[d]), ip=ip).result
            sizes[d] = span
        out = self.set_sizes(new, dyn, sizes, op.results[0].type, ip)
        op.results[0].replace_all_uses_with(out)
        op.erase()
        self.counts[name] = self.counts.get(name, 0) + 1

    def _gather(self, op, static_t, dyn, ip):
        """``dynamic_gather``: ``gather`` whose slice sizes are the constant ones
        and, where computed from sizes, the operand's bound; each dynamic result
        dim gets its live size from the slice sizes (offset dims) or the
        indices (batch dims)."""
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        name = op.name
        operand, indices, slice_sizes = op.operands
        check_shape_source(slice_sizes, name, self.label, self.size_args)
        _, _, ofull = at_bound(operand.type, f"{self.label}: {name}", name)
        dn = str(op.attributes["dimension_numbers"])

        def field(k):
            return (
                [int(x) for x in re.findall(rf"{k} = \[([^\]]*)\]", dn)[0].split(",") if x.strip()]
                if re.search(rf"{k} = \[", dn)
                else []
            )

        offset_dims, collapsed = field("offset_dims"), set(field("collapsed_slice_dims")) | set(field("operand_batching_dims"))
        m = re.search(r"index_vector_dim = (\d+)", dn)
        ivd = int(m.group(1)) if m else len(ir.RankedTensorType(indices.type).shape)
        kept = [d for d in range(len(ofull)) if d not in collapsed]
        batch_src = [d for d in range(len(ir.RankedTensorType(indices.type).shape)) if d != ivd]
        # slice sizes: 1 on collapsed dims, the result's size where it is static, else its bound (a slice
        # to t // 2 of a dim bounded at 16 gathers 8: the operand's bound would not fit the result)
        rshape, _ = info(op.results[0].type)
        rbound = list(ir.RankedTensorType(static_t).shape)
        known = _const(slice_sizes)
        sizes_static = []
        for d in range(len(ofull)):
            if known is not None:
                sizes_static.append(int(known[d]))
            elif d in collapsed:
                sizes_static.append(1)
            else:
                r = offset_dims[kept.index(d)]
                sizes_static.append(rshape[r] if rshape[r] is not None else min(rbound[r], ofull[d]))
        attrs = {"dimension_numbers": op.attributes["dimension_numbers"], "slice_sizes": ir.DenseI64ArrayAttr.get(sizes_static)}
        if "indices_are_sorted" in op.attributes:
            attrs["indices_are_sorted"] = op.attributes["indices_are_sorted"]
        new = ir.Operation.create(
            "stablehlo.gather", results=[static_t], operands=[operand, indices], attributes=attrs, ip=ip
        ).result
        sizes, bi = {}, 0
        for r in range(len(ir.RankedTensorType(static_t).shape)):
            if r in offset_dims:
                src = ("slice", kept[offset_dims.index(r)])
            else:
                src, bi = ("indices", batch_src[bi]), bi + 1
            if r in dyn:
                if src[0] == "slice":
                    sizes[r] = self.scalar(slice_sizes, src[1], ip)
                else:
                    sizes[r] = stablehlo.GetDimensionSizeOp(indices, src[1], ip=ip).result
        out = self.set_sizes(new, dyn, sizes, op.results[0].type, ip)
        op.results[0].replace_all_uses_with(out)
        op.erase()
        self.counts[name] = self.counts.get(name, 0) + 1

    def _pad(self, op, static_t, dyn, full, ip):
        """``dynamic_pad`` with constant low padding and no interior padding:
        the operand made static at its bound with its padding set to the pad
        value (``select`` on an ``iota`` mask), a static ``pad`` up to the
        result's bound, live size ``low + n + high``."""
        import numpy as np
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        name = op.name
        operand, value, low, high, interior = op.operands
        lo, inner = _const(low), _const(interior)
        if lo is None or inner is None or any(inner):
            raise PadderUnsupported(
                f"{self.label}: {name} with non-constant low or interior padding: no static form on bounded types here", name
            )
        check_shape_source(high, name, self.label, self.size_args)
        ostatic, odyn, ofull = at_bound(operand.type, f"{self.label}: {name}", name)
        c = lambda x: stablehlo.ConstantOp(ir.DenseElementsAttr.get(np.array(x, np.int32)), ip=ip).result  # noqa
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        live = {d: stablehlo.GetDimensionSizeOp(operand, d, ip=ip).result for d in odyn}
        o = operand
        for d in odyn:
            o = stablehlo.SetDimensionSizeOp(o, c(ofull[d]), d, ip=ip).result
        o.set_type(ostatic)
        pred_t = ir.RankedTensorType.get(list(ofull), ir.IntegerType.get_signless(1))
        vals = stablehlo.BroadcastInDimOp(ostatic, value, [], ip=ip).result
        for d in odyn:  # the operand's padding becomes the pad value
            iota = stablehlo.IotaOp(ir.RankedTensorType.get(list(ofull), i32.element_type), d, ip=ip).result
            n = stablehlo.BroadcastInDimOp(ir.RankedTensorType.get(list(ofull), i32.element_type), live[d], [], ip=ip).result
            mask = stablehlo.CompareOp(iota, n, stablehlo.ComparisonDirectionAttr.get("LT"), results=[pred_t], ip=ip).result
            o = stablehlo.SelectOp(mask, o, vals, ip=ip).result
        hi_static = [int(f - lo[d] - ofull[d]) for d, f in enumerate(full)]
        if min(hi_static) < 0:
            raise PadderUnsupported(
                f"{self.label}: {name}: the result's bound {full} is below the operand's {ofull} plus its low padding", name
            )
        new = stablehlo.PadOp(o, value, [int(x) for x in lo], hi_static, [0] * len(full), results=[static_t], ip=ip).result
        sizes = {}
        for d in dyn:
            n = live[d] if d in live else c(ofull[d])
            sizes[d] = stablehlo.AddOp(stablehlo.AddOp(n, c(lo[d]), ip=ip).result, self.scalar(high, d, ip), ip=ip).result
        out = self.set_sizes(new, dyn, sizes, op.results[0].type, ip)
        op.results[0].replace_all_uses_with(out)
        op.erase()
        self.counts[name] = self.counts.get(name, 0) + 1

    def _dynamic_start_slice(self, op, static_t, dyn, full, ip):
        """``real_dynamic_slice`` with unit strides and starts computed from sizes
        (``x[n - 3:]``): the operand made static at its bound, padded at the end
        by the result's bound (so ``dynamic_slice`` never clamps the start),
        ``dynamic_slice`` of the result's bound, live size ``limit - start``."""
        import numpy as np
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        name = op.name
        operand, start, limit, _ = op.operands
        check_shape_source(start, name, self.label, self.size_args)
        check_shape_source(limit, name, self.label, self.size_args)
        ostatic, odyn, ofull = at_bound(operand.type, f"{self.label}: {name}", name)
        c = lambda x: stablehlo.ConstantOp(ir.DenseElementsAttr.get(np.array(x, np.int32)), ip=ip).result  # noqa
        o = operand
        for d in odyn:
            o = stablehlo.SetDimensionSizeOp(o, c(ofull[d]), d, ip=ip).result
        o.set_type(ostatic)
        et = ir.RankedTensorType(ostatic).element_type
        zero = ir.IntegerAttr.get(et, 0) if str(et)[0] in "iu" else ir.FloatAttr.get(et, 0.0)
        pad_v = stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], et), zero), ip=ip)
        rank = len(full)
        padded_t = ir.RankedTensorType.get([a + b for a, b in zip(ofull, full, strict=False)], et)
        p = stablehlo.PadOp(o, pad_v.result, [0] * rank, list(full), [0] * rank, results=[padded_t], ip=ip).result
        starts = [self.scalar(start, d, ip) for d in range(rank)]
        new = stablehlo.DynamicSliceOp(p, starts, list(full), results=[static_t], ip=ip).result
        sizes = {d: stablehlo.SubtractOp(self.scalar(limit, d, ip), starts[d], ip=ip).result for d in dyn}
        out = self.set_sizes(new, dyn, sizes, op.results[0].type, ip)
        op.results[0].replace_all_uses_with(out)
        op.erase()
        self.counts[name] = self.counts.get(name, 0) + 1


def bound_entry(text: str, label: str = "module", arg_bounds: Sequence | None = None) -> BoundedEntry:
    """Rewrite ``text`` for the bounded executor (see the module docstring).

    ``arg_bounds``: per argument, the static shape to serve (a bucket): every
    `?` dim of the module then gets the bound its size has at those shapes
    (:func:`propagate_bounds`); ``None`` uses the module's own
    ``#stablehlo.bounds``. Raises :class:`PadderUnsupported` naming the op."""
    from jaxlib.mlir import ir, passmanager
    from jaxlib.mlir.dialects import func, stablehlo

    from ..lowering.verify import make_context

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        inline_calls(module)
        strip_assertions(module)  # checked per concrete shape by the caller (BoundedXlaProgram)
        passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)
        main = find_main(module)
        probe = propagate_bounds(module, main, arg_bounds, label) if arg_bounds is not None else None
        ft = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        block = main.regions[0].blocks[0]
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        # -- arguments: static at the bound + i32 live sizes
        args_info, new_inputs, size_args = [], [], []
        for i, t in enumerate(ft.inputs):
            static_t, dyn, full = at_bound(t, f"{label}: argument {i}", "func.func @main")
            args_info.append((full, dyn))
            new_inputs.append(static_t)
        rw = _Rewriter(label, size_args)
        symbols = arg_symbols(main, len(ft.inputs))
        shared, groups = {}, []  # symbol -> its size argument; per size argument, the dims it serves
        for i, t in enumerate(ft.inputs):
            dyn = args_info[i][1]
            sizes = {}
            for d in dyn:
                name = symbols[i][d] if d < len(symbols[i]) else ""
                if name and name in shared:
                    sizes[d] = shared[name]
                    groups[size_args.index(sizes[d])].append((i, d))
                    continue
                sizes[d] = block.add_argument(i32, ir.Location.unknown())
                size_args.append(sizes[d])
                groups.append([(i, d)])
                if name:
                    shared[name] = sizes[d]
            if not dyn:
                continue
            arg = block.arguments[i]
            arg.set_type(new_inputs[i])
            v = rw.set_sizes(arg, dyn, sizes, t, ir.InsertionPoint.at_block_begin(block))
            first = v.owner
            while first.operands[0] != arg:
                first = first.operands[0].owner
            arg.replace_all_uses_except(v, first.operation)
        new_inputs += [i32] * len(size_args)
        # -- dynamic ops: static forms on bounded types
        doomed = []
        walk(module.operation, lambda op: doomed.append(op) if op.name in DYN_OPS else None)
        for op in doomed:
            rw.rewrite(op)
        rw.counts.update(rewrite_windows(module, label))
        static_slices(module)
        # -- results: static at the bound + live sizes
        ret = block.operations[len(block.operations) - 1]
        ip = ir.InsertionPoint(ret)
        outs, sizes_out, res_info = [], [], []
        for j, v in enumerate(ret.operands):
            static_t, dyn, full = at_bound(v.type, f"{label}: result {j}", "func.return")
            res_info.append((full, dyn))
            for d in dyn:
                sizes_out.append(stablehlo.GetDimensionSizeOp(v, d, ip=ip).result)
            for d in dyn:
                c = stablehlo.ConstantOp(ir.DenseElementsAttr.get(_np_i32(full[d])), ip=ip).result
                v = stablehlo.SetDimensionSizeOp(v, c, d, ip=ip).result
            if dyn:
                v.set_type(static_t)
            outs.append(v)
        func.ReturnOp(outs + sizes_out, ip=ip)
        ret.erase()
        results = [v.type for v in outs] + [i32] * len(sizes_out)
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, results))
        for attrs in ("arg_attrs", "res_attrs"):  # per-argument/result attributes (jax's) no longer line up
            if attrs in main.attributes:
                del main.attributes[attrs]
        check_all_bounded(module, label)
        check_reduce_inits(module, label)
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise ExecutionError(f"{label}: the bounded rewrite produced an invalid module: {e}") from e
        buf = io.BytesIO()
        module.operation.write_bytecode(file=buf)
        return BoundedEntry(buf.getvalue(), args_info, res_info, rw.counts, probe, groups)


def _np_i32(x):
    import numpy as np

    return np.array(x, np.int32)
