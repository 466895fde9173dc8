"""The pooling rewrite of :mod:`engines.stablehlo.iree_compat`: a single-result
``stablehlo.reduce_window`` with `?` dims, which IREE's StableHLO input refuses
whatever its padding (upstream's linalg patterns need static shapes), as
``stablehlo.pad`` by the window's init + a result sized at run time, filled with
the init + the named ``linalg.pooling_nchw_{max,sum}`` op.

Our lowering writes such windows for max pooling (``stablehlo.maximum``, init
-inf or the integer minimum) and average pooling (``stablehlo.add``, init 0), over
the two trailing dims of an (N, C, H, W) operand. A reduce_window with two
results (max pooling with its indices) has no linalg form here and is refused by
name (:class:`~engines.stablehlo.iree_compat.IreeCompatError`).

A mixin of the rewriter: it builds ops with the rewriter's ``op``,
``index_const``, ``arith`` and ``plain``.
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

    def ints(self, op, name: str, rank: int, default: int) -> list[int]:
        attrs = op.attributes
        return list(self.ir.DenseI64ArrayAttr(attrs[name])) if name in attrs else [default] * rank

    def window_form(self, op) -> str | None:
        """The body op of a reduce_window this rewrite serves: rank 4, one result with a `?` dim, unit windows and no padding on the two leading dims, no base
        dilation, a body that is one ``stablehlo.maximum``/``add`` of its two arguments,
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
        if any(p != [0, 0] for p in self.pads(op)[:2]):
            return None
        block = op.regions[0].blocks[0]
        body = list(block.operations)
        if len(body) != 2 or body[0].name not in ("stablehlo.maximum", "stablehlo.add"):
            return None
        if {str(v.get_name()) for v in body[0].operands} != {str(a.get_name()) for a in block.arguments}:
            return None
        return body[0].name

    def pads(self, op) -> list[list[int]]:
        rank = self.ir.RankedTensorType(op.operands[0].type).rank
        if "padding" not in op.attributes:
            return [[0, 0]] * rank
        flat = [int(v) for v in self.ir.DenseIntElementsAttr(op.attributes["padding"])]
        return [flat[2 * i : 2 * i + 2] for i in range(rank)]

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
        pads = self.pads(op)
        if any(p != [0, 0] for p in pads):
            i64 = self.ir.DenseI64ArrayAttr.get
            dyn = self.ir.ShapedType.get_dynamic_size()
            padded = [dyn if xt.is_dynamic_dim(i) else d + sum(pads[i]) for i, d in enumerate(xt.shape)]
            # stablehlo pads a window's operand with its init: the reduction's identity here
            x = self.op(
                "stablehlo.pad",
                [x, init],
                [self.ir.RankedTensorType.get(padded, xt.element_type)],
                {
                    "edge_padding_low": i64([p[0] for p in pads]),
                    "edge_padding_high": i64([p[1] for p in pads]),
                    "interior_padding": i64([0] * rank),
                },
            ).result
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
