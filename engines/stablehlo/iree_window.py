"""The pooling rewrite of :mod:`engines.stablehlo.iree_compat`: a single-result
``stablehlo.reduce_window`` with `?` dims, which IREE's StableHLO input refuses
whatever its padding (upstream's linalg patterns need static shapes), as
``stablehlo.pad`` by the window's init + a result sized at run time, filled with
the init + the named ``linalg.pooling_nchw_{max,sum}`` op.

Our lowering writes such windows for max pooling (``stablehlo.maximum``, init
-inf or the integer minimum) and average pooling (``stablehlo.add``, init 0), over
the two trailing dims of an (N, C, H, W) operand. Max pooling with its indices
(a two-result window over f32 values and i64 indices) becomes one max window
over an i64 key that packs both (:meth:`WindowRewrites.argmax_window`); any other
two-result window is refused by name (``iree_compat.IreeCompatError``).

A mixin of the rewriter: it builds ops with the rewriter's ``op``,
``index_const``, ``arith`` and ``plain``, and reads attributes with its ``ints``
and ``pads``.
"""

from __future__ import annotations

from typing import Any

#: the body's op: the named linalg pooling op over (N, C, H, W); torch's decompositions
#: give 1-d pools a unit height, so our lowering writes 2-d windows only
POOL_OPS = {"stablehlo.maximum": "pooling_nchw_max", "stablehlo.add": "pooling_nchw_sum"}


class WindowRewrites:
    """The reduce_window half of the IREE rewriter (see the module docstring)."""

    ir: Any
    index: Any

    def window_form(self, op) -> str | None:
        """The body op of a reduce_window this rewrite serves: rank 4, one result with a `?`
        dim, unit windows and no padding on the two leading dims, no base dilation, a body that is one ``stablehlo.maximum``/``add`` of its two arguments,
        a float or signless integer element; else None (left to IREE)."""
        if len(op.results) != 1:
            return None
        out = self.ir.RankedTensorType(op.result.type)
        elem = out.element_type
        if out.has_static_shape or out.rank != 4:
            return None
        if isinstance(elem, self.ir.IntegerType) and not self.ir.IntegerType(elem).is_signless:
            return None  # linalg's pooling max is signed
        rank = out.rank
        if self.ints(op, "base_dilations", rank, 1) != [1] * rank:
            return None
        for name in ("window_dimensions", "window_strides", "window_dilations"):
            if self.ints(op, name, rank, 1)[:2] != [1, 1]:
                return None
        if any(p != [0, 0] for p in self.pads(op, rank)[:2]):
            return None
        block = op.regions[0].blocks[0]
        body = list(block.operations)
        if len(body) != 2 or body[0].name not in ("stablehlo.maximum", "stablehlo.add"):
            return None
        if {str(v.get_name()) for v in body[0].operands} != {str(a.get_name()) for a in block.arguments}:
            return None
        return body[0].name

    def reduce_window(self, op):
        """``stablehlo.pad`` by the init + ``linalg.fill`` of a ``tensor.empty`` sized at
        run time with the init + the named ``linalg`` pooling op."""
        from iree.compiler.dialects import linalg

        body = self.window_form(op)
        assert body is not None
        x, init = op.operands
        xt = self.ir.RankedTensorType(x.type)
        out = self.ir.RankedTensorType(self.plain(op.result.type))
        rank = xt.rank
        kernel = self.ints(op, "window_dimensions", rank, 1)[2:]
        strides = self.ints(op, "window_strides", rank, 1)[2:]
        dilations = self.ints(op, "window_dilations", rank, 1)[2:]
        pads = self.pads(op, rank)
        if any(p != [0, 0] for p in pads):  # (stablehlo pads a window's operand with its init: the identity)
            x = self.padded(x, init, pads)
        sizes = []
        for j in range(out.rank):
            if not out.is_dynamic_dim(j):
                continue
            size = self.op("tensor.dim", [x, self.index_const(j)], [self.index]).result
            if j < 2:
                sizes.append(size)
                continue
            i = j - 2
            # (padded - dilation * (k - 1) - 1) // stride + 1, all non-negative
            rest = self.arith("arith.subi", size, self.index_const(dilations[i] * (kernel[i] - 1) + 1))
            sizes.append(
                self.arith("arith.addi", self.arith("arith.divui", rest, self.index_const(strides[i])), self.index_const(1))
            )
        scalar = self.op("tensor.extract", [init], [out.element_type]).result
        filled = linalg.fill(scalar, outs=[self.op("tensor.empty", sizes, [out]).result])
        window = self.op("tensor.empty", [], [self.ir.RankedTensorType.get(kernel, xt.element_type)]).result
        pool = getattr(linalg, POOL_OPS[body])
        return pool(x, window, outs=[filled], strides=strides, dilations=dilations)

    # -- max pooling with its indices ------------------------------------------------

    def argmax_form(self, op) -> str | None:
        """Why the two-result window ``op`` is not our max-with-index form over f32 (the
        lowering's ``_max_pool``: values and i64 flat indices, inits -inf and INT64_MAX, the
        larger value or on ties the smaller index), or None when it is."""
        if len(op.results) != 2 or len(op.operands) != 4:
            return f"{len(op.results)} results"
        vt, it = (self.ir.RankedTensorType(r.type) for r in op.results)
        if str(vt.element_type) != "f32" or str(it.element_type) != "i64" or vt.rank != 4:
            return f"values of {vt.element_type}, rank {vt.rank} (the packed key holds f32 and a 32-bit index)"
        body = [o.name for o in op.regions[0].blocks[0].operations]
        want = ["stablehlo.compare"] * 3 + [
            "stablehlo.and",
            "stablehlo.or",
            "stablehlo.select",
            "stablehlo.select",
            "stablehlo.return",
        ]
        if body != want:
            return "a body other than the max-with-index selection"
        return None

    def argmax_window(self, op) -> list:
        """The max window with its indices as one single-result max window over an i64 key:
        ``order(value) << 32 | (2^32 - 1 - index)`` (``order``: the f32 bits as an int32 that
        sorts as the floats do, -0 taken as +0, every NaN as one that sorts above +inf), so
        the largest key holds the largest value and, on ties, the smallest index; two
        ``linalg.generic``s pack and unpack it, the window becomes ``linalg.pooling_nchw_max``."""
        from iree.compiler.dialects import arith

        ir = self.ir
        x, idx = op.operands[0], op.operands[1]
        xt = ir.RankedTensorType(self.plain(x.type))
        i32, i64, f32 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64), ir.F32Type.get()
        key_t = ir.RankedTensorType.get(list(xt.shape), i64)
        low = (1 << 32) - 1

        def order(b):  # int32 bits <-> an int32 that sorts as the floats (an involution)
            m = arith.andi(arith.shrsi(b, arith.constant(i32, 31)), arith.constant(i32, 0x7FFFFFFF))
            return arith.xori(b, m)

        def pack(v, j):
            v = arith.addf(v, arith.constant(f32, 0.0))  # -0 + 0 = +0: equal values, one key
            v = arith.select(arith.cmpf(arith.CmpFPredicate.UNO, v, v), arith.constant(f32, float("nan")), v)
            hi = arith.shli(arith.extsi(i64, order(arith.bitcast(i32, v))), arith.constant(i64, 32))
            return [arith.ori(hi, arith.subi(arith.constant(i64, low), j))]

        key = self.elementwise([x, idx], [key_t], [i64], pack)[0]
        scalar = ir.RankedTensorType.get([], i64)
        init = self.op(
            "stablehlo.constant",
            [],
            [scalar],
            {"value": ir.DenseElementsAttr.get_splat(scalar, ir.IntegerAttr.get(i64, -(2**63)))},
        ).result
        out_t = ir.RankedTensorType(self.plain(op.results[0].type))
        keys_t = ir.RankedTensorType.get(list(out_t.shape), i64)
        attrs = {name: op.attributes[name] for name in op.attributes}
        window = self.op("stablehlo.reduce_window", [key, init], [keys_t], attrs, regions=1)
        block = window.regions[0].blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            top = self.op("stablehlo.maximum", list(block.arguments), [scalar]).result
            self.op("stablehlo.return", [top], [])
        keys = self.reduce_window(window)
        window.erase()

        def unpack(k):
            v = arith.bitcast(f32, order(arith.trunci(i32, arith.shrsi(k, arith.constant(i64, 32)))))
            mask = arith.constant(i64, low)
            return [v, arith.subi(mask, arith.andi(k, mask))]

        return self.elementwise([keys], [out_t, keys_t], [f32, i64], unpack)

    def elementwise(self, ins: list, out_types: list, elems: list, body) -> list:
        """``linalg.generic`` over ``ins`` (all of one shape, rank 4): ``body(*scalars)`` gives
        the result scalars; each result a ``tensor.empty`` of ``ins[0]``'s run-time sizes."""
        from iree.compiler.dialects import linalg

        ir = self.ir
        first = ins[0]
        t = ir.RankedTensorType(first.type)
        sizes = [
            self.op("tensor.dim", [first, self.index_const(i)], [self.index]).result for i in range(t.rank) if t.is_dynamic_dim(i)
        ]
        outs = [self.op("tensor.empty", sizes, [ot]).result for ot in out_types]
        ident = ir.AffineMapAttr.get(ir.AffineMap.get_identity(t.rank))
        maps = ir.ArrayAttr.get([ident] * (len(ins) + len(outs)))
        par = ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * t.rank)
        gen = linalg.GenericOp(out_types, ins, outs, maps, par)
        in_elems = [ir.RankedTensorType(v.type).element_type for v in ins]
        block = gen.regions[0].blocks.append(*in_elems, *elems)
        with ir.InsertionPoint(block):
            linalg.YieldOp(body(*list(block.arguments)[: len(ins)]))
        return list(gen.results)
