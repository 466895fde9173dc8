"""The convolution rewrite of :mod:`engines.stablehlo.iree_compat`: a
``stablehlo.convolution`` with `?` spatial dims, which IREE's StableHLO input
refuses, as ``stablehlo.pad`` + a result sized at run time + the named
``linalg.conv_*`` op (grouped and depthwise ones through ``conv_2d_ngchw_gfchw``).

A mixin of the rewriter: it builds ops with the rewriter's ``op``,
``index_const``, ``extract_index``, ``arith``, ``zero_attr`` and ``zeros``.
"""

from __future__ import annotations

from typing import Any


class ConvRewrites:
    """The convolution half of the IREE rewriter (see the module docstring)."""

    ir: Any
    index: Any

    #: our lowering's layout (NCHW input, OIHW filter), per number of spatial dims: the named linalg op
    CONV_OPS = {1: "conv_1d_ncw_fcw", 2: "conv_2d_nchw_fchw", 3: "conv_3d_ncdhw_fcdhw"}

    def conv_form(self, op) -> int | None:
        """The spatial rank of a convolution IREE refuses and this rewrite serves: our
        layout, ungrouped, no input dilation, a `?` dim in its result (upstream's linalg
        patterns require static spatial result dims); else None (left to IREE)."""
        attrs = op.attributes
        out = self.ir.RankedTensorType(op.result.type)
        nsp = out.rank - 2
        sp = ", ".join(str(i) for i in range(nsp))
        if out.has_static_shape or nsp not in self.CONV_OPS:
            return None
        if str(attrs["dimension_numbers"]) != f"#stablehlo.conv<[b, f, {sp}]x[o, i, {sp}]->[b, f, {sp}]>":
            return None
        groups = self.ir.IntegerAttr(attrs["feature_group_count"]).value
        if self.ir.IntegerAttr(attrs["batch_group_count"]).value != 1 or (groups != 1 and nsp > 2):
            return None
        if any(d != 1 for d in self.ints(op, "lhs_dilation", 0, 1)):
            return None
        return nsp

    def convolution(self, op):
        """``stablehlo.pad`` by the static padding + ``linalg.fill`` of a ``tensor.empty``
        whose `?` sizes are computed at run time + the named ``linalg`` convolution."""
        from iree.compiler.dialects import linalg

        nsp = self.conv_form(op)
        assert nsp is not None
        x, w = op.operands
        attrs = op.attributes
        xt, wt = self.ir.RankedTensorType(x.type), self.ir.RankedTensorType(w.type)
        out = self.plain(op.result.type)
        strides = self.ints(op, "window_strides", nsp, 1)
        dilations = self.ints(op, "rhs_dilation", nsp, 1)
        pads = self.pads(op, nsp)
        if any(p != [0, 0] for p in pads):
            scalar = self.ir.RankedTensorType.get([], xt.element_type)
            splat = self.ir.DenseElementsAttr.get_splat(scalar, self.zero_attr(xt.element_type))
            zero = self.op("stablehlo.constant", [], [scalar], {"value": splat}).result
            x = self.padded(x, zero, [[0, 0], [0, 0], *pads])
        sizes = []
        for j in range(out.rank):
            if not out.is_dynamic_dim(j):
                continue
            if j == 0:
                sizes.append(self.op("tensor.dim", [x, self.index_const(0)], [self.index]).result)
                continue
            if j == 1:
                sizes.append(self.op("tensor.dim", [w, self.index_const(0)], [self.index]).result)
                continue
            i = j - 2
            size = self.op("tensor.dim", [x, self.index_const(j)], [self.index]).result
            k = self.op("tensor.dim", [w, self.index_const(j)], [self.index]).result
            # (size - dilation * (k - 1) - 1) // stride + 1, all non-negative
            span = self.arith("arith.muli", self.arith("arith.subi", k, self.index_const(1)), self.index_const(dilations[i]))
            rest = self.arith("arith.subi", self.arith("arith.subi", size, span), self.index_const(1))
            sizes.append(
                self.arith("arith.addi", self.arith("arith.divui", rest, self.index_const(strides[i])), self.index_const(1))
            )
        groups = self.ir.IntegerAttr(attrs["feature_group_count"]).value
        zero = self.op("arith.constant", [], [out.element_type], {"value": self.zero_attr(out.element_type)}).result
        if groups != 1:
            return self.grouped(x, w, out, sizes, groups, strides, dilations, zero)
        init = self.op("tensor.empty", sizes, [out]).result
        filled = linalg.fill(zero, outs=[init])
        conv = getattr(linalg, self.CONV_OPS[nsp])
        del wt
        return conv(x, w, outs=[filled], strides=strides, dilations=dilations)

    def dims_of(self, value) -> list:
        """Every dim of ``value`` as an ``index`` (static ones as constants)."""
        t = self.ir.RankedTensorType(value.type)
        return [
            self.op("tensor.dim", [value, self.index_const(i)], [self.index]).result
            if t.is_dynamic_dim(i)
            else self.index_const(t.shape[i])
            for i in range(t.rank)
        ]

    def reshaped(self, value, sizes: list, static: list[int]):
        """``tensor.reshape`` of ``value`` to ``sizes`` (``index`` values; ``static``: the type's dims, -1 for `?`)."""
        dyn = self.ir.ShapedType.get_dynamic_size()
        elem = self.ir.RankedTensorType(value.type).element_type
        shape = self.op("tensor.from_elements", sizes, [self.ir.RankedTensorType.get([len(sizes)], self.index)]).result
        typ = self.ir.RankedTensorType.get([dyn if d < 0 else d for d in static], elem)
        return self.op("tensor.reshape", [value, shape], [typ]).result

    def grouped(self, x, w, out, sizes, groups: int, strides, dilations, zero):
        """A grouped convolution as ``linalg.conv_2d_ngchw_gfchw`` (a 1-d one with a unit
        height): input (N, G*C, ...) -> (N, G, C, ...), filter (G*F, C, ...) -> (G, F, C, ...),
        result (N, G, F, ...) -> (N, G*F, ...)."""
        from iree.compiler.dialects import linalg

        xt, wt, ot = self.ir.RankedTensorType(x.type), self.ir.RankedTensorType(w.type), self.ir.RankedTensorType(out)
        nsp = xt.rank - 2
        if nsp == 1:  # a unit height: the 2-d op serves it
            strides, dilations = [1, *strides], [1, *dilations]
        unit_size = [self.index_const(1)] if nsp == 1 else []
        unit = [1] if nsp == 1 else []

        def static(t, i):
            return -1 if t.is_dynamic_dim(i) else t.shape[i]

        c, f = xt.shape[1] // groups, wt.shape[0] // groups
        g = self.index_const(groups)
        xd, wd = self.dims_of(x), self.dims_of(w)
        x5 = self.reshaped(
            x,
            [xd[0], g, self.index_const(c), *unit_size, *xd[2:]],
            [static(xt, 0), groups, c, *unit, *[static(xt, i) for i in range(2, xt.rank)]],
        )
        w5 = self.reshaped(
            w,
            [g, self.index_const(f), wd[1], *unit_size, *wd[2:]],
            [groups, f, wt.shape[1], *unit, *[wt.shape[i] for i in range(2, wt.rank)]],
        )
        odims, k = [], 0
        for j in range(ot.rank):  # the result's sizes: the `?` ones the caller computed, in order
            if ot.is_dynamic_dim(j):
                odims.append(sizes[k])
                k += 1
            else:
                odims.append(self.index_const(ot.shape[j]))
        dyn = self.ir.ShapedType.get_dynamic_size()
        o5_static = [static(ot, 0), groups, f, *unit, *[static(ot, i) for i in range(2, ot.rank)]]
        o5_type = self.ir.RankedTensorType.get([dyn if d < 0 else d for d in o5_static], ot.element_type)
        o5_sizes = ([odims[0]] if ot.is_dynamic_dim(0) else []) + [odims[i] for i in range(2, ot.rank) if ot.is_dynamic_dim(i)]
        init = self.op("tensor.empty", o5_sizes, [o5_type]).result
        filled = linalg.fill(zero, outs=[init])
        y5 = linalg.conv_2d_ngchw_gfchw(x5, w5, outs=[filled], strides=strides, dilations=dilations)
        return self.reshaped(y5, odims, [static(ot, i) for i in range(ot.rank)])
