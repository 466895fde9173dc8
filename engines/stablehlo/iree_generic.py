"""Three rewrites of :mod:`engines.stablehlo.iree_compat`: op forms with `?` dims
that IREE 3.13's StableHLO input refuses, two into ``linalg.generic``.

``stablehlo.dynamic_gather`` (no batching dims: every take along axes our
lowering writes for ``index_select``/``embedding``) has no conversion in IREE
("failed to legalize"). It becomes a ``linalg.generic`` over a result sized at
run time whose body reads the start index with ``tensor.extract`` and then the
operand element with ``tensor.extract`` (IREE's own torch input lowers
``index_select`` so). The start index is clamped to ``[0, dim - slice_size]``
as the gather's semantics say (StableHLO spec, ``gather``): an out-of-range
index reads the nearest slice, never past the operand.

``stablehlo.dot_general`` without batching dims whose operands have a `?` dim
and either a static unit dim or a rank other than 2: IREE first rewrites such a dot
into a matrix-vector product or a 2-d matmul and reshapes its result back with
a ``stablehlo.reshape`` to a `?` type, which its verifier refuses ("result #0
must be statically shaped", tests/stablehlo/test_iree_generic.py pins the
forms). It becomes the contraction itself, a ``linalg.generic`` (batch and free
dims parallel, contracting dims reductions) into a zero-filled ``tensor.empty``
sized at run time.

``stablehlo.concatenate`` along a dim other than 0 with a `?` result dim: IREE
lowers it to one loop that reads the operands at computed positions, and fused
with an elementwise producer it cannot size that producer's stack buffer. It
becomes ``tensor.insert_slice`` of each operand into a ``tensor.empty`` sized at
run time.

A mixin of the rewriter: it builds ops with the rewriter's ``op``,
``index_const``, ``extract_index``, ``arith``, ``zero_attr`` and ``plain``.
"""

from __future__ import annotations

import re
from typing import Any


def dim_numbers(attr) -> dict[str, list[int]]:
    """The fields of a ``#stablehlo.gather<...>``/``#stablehlo.dot<...>`` attribute, each
    a list of ints (the bindings expose no accessor: the attribute's own syntax)."""
    fields = re.findall(r"(\w+) = (\[[^\]]*\]|\d+)", str(attr))
    return {k: [int(x) for x in v.strip("[]").split(",") if x.strip()] for k, v in fields}


class GenericRewrites:
    """The gather and dot_general part of the IREE rewriter (see the module docstring)."""

    ir: Any
    index: Any

    # -- building linalg.generic -------------------------------------------------

    def generic(self, inputs: list, init, maps: list[str], iterators: list[str], body):
        """``linalg.generic`` of ``inputs`` into ``init`` with ``maps`` (affine maps' text, one
        per operand and the init) and ``iterators`` ("parallel"/"reduction"); ``body(args)``
        builds the region from its block arguments (one scalar each) and returns the yielded value."""
        parse = self.ir.Attribute.parse
        attrs = {
            "indexing_maps": self.ir.ArrayAttr.get([parse(f"affine_map<{m}>") for m in maps]),
            "iterator_types": self.ir.ArrayAttr.get([parse(f"#linalg.iterator_type<{i}>") for i in iterators]),
            "operandSegmentSizes": self.ir.DenseI32ArrayAttr.get([len(inputs), 1]),
        }
        out = self.op("linalg.generic", [*inputs, init], [init.type], attrs, regions=1)
        elems = [self.ir.RankedTensorType(v.type).element_type for v in [*inputs, init]]
        block = out.regions[0].blocks.append(*elems)
        with self.ir.InsertionPoint(block):
            self.op("linalg.yield", [body(list(block.arguments))], [])
        return out.result

    def sized_empty(self, typ, sizes: list):
        """``tensor.empty`` of ``typ`` (no encoding); ``sizes``: an ``index`` per dim, the `?` ones used."""
        out = self.ir.RankedTensorType(self.plain(typ))
        return self.op("tensor.empty", [s for j, s in enumerate(sizes) if out.is_dynamic_dim(j)], [out]).result

    def dim_index(self, value, i: int):
        """Dim ``i`` of ``value`` as an ``index`` (a constant where static)."""
        t = self.ir.RankedTensorType(value.type)
        if not t.is_dynamic_dim(i):
            return self.index_const(t.shape[i])
        return self.op("tensor.dim", [value, self.index_const(i)], [self.index]).result

    # -- dynamic_gather ------------------------------------------------------------

    def gather_refusal(self, op) -> str | None:
        """Why this rewrite cannot express ``op`` (a dynamic_gather), or None."""
        nums = dim_numbers(op.attributes["dimension_numbers"])
        if nums.get("operand_batching_dims"):
            return f"operand_batching_dims {nums['operand_batching_dims']}: only a take along axes is rewritten"
        if not isinstance(self.ir.RankedTensorType(op.operands[1].type).element_type, self.ir.IntegerType):
            return "start indices that are not integers"
        return None

    def dynamic_gather(self, op):
        """The gather as a ``linalg.generic`` over its result: per result element, the start
        index vector read from the indices (clamped to ``[0, dim - slice_size]``), plus the
        offset along each non-collapsed operand dim, read from the operand."""
        x, indices, slice_sizes = op.operands
        nums = dim_numbers(op.attributes["dimension_numbers"])
        offset_dims, collapsed = nums.get("offset_dims", []), nums.get("collapsed_slice_dims", [])
        start_map, ivd = nums["start_index_map"], nums["index_vector_dim"][0]
        xt, it = self.ir.RankedTensorType(x.type), self.ir.RankedTensorType(indices.type)
        out = self.ir.RankedTensorType(self.plain(op.result.type))
        batch = [j for j in range(out.rank) if j not in offset_dims]  # result dims of the index batch
        kept = [d for d in range(xt.rank) if d not in collapsed]  # operand dims the offset dims walk
        ibatch = [d for d in range(it.rank) if d != ivd]  # index dims the batch dims walk, in order
        sizes: list = [None] * out.rank
        for j, d in zip(offset_dims, kept, strict=True):
            sizes[j] = self.extract_index(slice_sizes, d)
        for j, d in zip(batch, ibatch, strict=True):
            sizes[j] = self.dim_index(indices, d)
        # the largest start along each gathered dim: dim - slice_size (the clamp's upper end)
        highs = {d: self.arith("arith.subi", self.dim_index(x, d), self.extract_index(slice_sizes, d)) for d in start_map}
        zero = self.index_const(0)
        ids = {}

        def body(args):
            loops = [self.op("linalg.index", [], [self.index], {"dim": self.i64(j)}).result for j in range(out.rank)]
            where = [loops[j] for j in batch]
            full = [self.index_const(0)] * xt.rank
            for k, d in enumerate(start_map):
                at = list(where)
                if ivd < it.rank:
                    at.insert(ivd, ids.setdefault(k, self.index_const(k)))
                start = self.op("tensor.extract", [indices, *at], [it.element_type]).result
                start = self.op("arith.index_cast", [start], [self.index]).result
                start = self.arith("arith.maxsi", start, zero)
                full[d] = self.arith("arith.minsi", start, highs[d])
            for j, d in zip(offset_dims, kept, strict=True):
                full[d] = self.arith("arith.addi", full[d], loops[j])
            return self.op("tensor.extract", [x, *full], [xt.element_type]).result

        init = self.sized_empty(out, sizes)
        ident = f"({', '.join(f'd{j}' for j in range(out.rank))})"
        return self.generic([], init, [f"{ident} -> {ident}"], ["parallel"] * out.rank, body)

    def i64(self, n: int):
        return self.ir.IntegerAttr.get(self.ir.IntegerType.get_signless(64), n)

    def scalar_zero(self, elem):
        """A zero of ``elem`` (float, integer or complex) as a scalar value."""
        if isinstance(elem, self.ir.ComplexType):
            part = self.zero_attr(self.ir.ComplexType(elem).element_type)
            return self.op("complex.constant", [], [elem], {"value": self.ir.ArrayAttr.get([part, part])}).result
        return self.op("arith.constant", [], [elem], {"value": self.zero_attr(elem)}).result

    # -- dot_general -----------------------------------------------------------------

    def dot_form(self, op) -> bool:
        """Whether ``op`` (a dot_general) is a form IREE reshapes to a `?` type: no batching
        dims, an operand with a `?` dim, and a static unit dim or an operand of rank other than 2;
        one element type throughout, float, integer or complex (else left to IREE)."""
        nums = dim_numbers(op.attributes["dot_dimension_numbers"])
        if nums.get("lhs_batching_dimensions"):
            return False
        types = [self.ir.RankedTensorType(v.type) for v in [*op.operands, op.result]]
        if all(t.has_static_shape for t in types[:2]):
            return False
        elems = {str(t.element_type) for t in types}
        kinds = (self.ir.FloatType, self.ir.IntegerType, self.ir.ComplexType)
        if len(elems) != 1 or not isinstance(types[2].element_type, kinds):
            return False
        return any(t.rank != 2 for t in types[:2]) or any(s == 1 for t in types for s in t.shape)

    def dot_general(self, op):
        """The contraction as a ``linalg.generic``: loops over the result's dims (lhs free,
        then rhs free), then the contracting dims; multiply-add into a zero-filled result."""
        from iree.compiler.dialects import linalg

        lhs, rhs = op.operands
        nums = dim_numbers(op.attributes["dot_dimension_numbers"])
        lc, rc = nums["lhs_contracting_dimensions"], nums["rhs_contracting_dimensions"]
        lt, rt = self.ir.RankedTensorType(lhs.type), self.ir.RankedTensorType(rhs.type)
        lfree = [d for d in range(lt.rank) if d not in lc]
        rfree = [d for d in range(rt.rank) if d not in rc]
        n = len(lfree) + len(rfree)
        loops = [f"d{i}" for i in range(n + len(lc))]
        lmap = [""] * lt.rank
        rmap = [""] * rt.rank
        for i, d in enumerate(lfree):
            lmap[d] = loops[i]
        for i, d in enumerate(rfree):
            rmap[d] = loops[len(lfree) + i]
        for k, (a, b) in enumerate(zip(lc, rc, strict=True)):
            lmap[a] = rmap[b] = loops[n + k]
        every = f"({', '.join(loops)})"
        maps = [f"{every} -> ({', '.join(m)})" for m in (lmap, rmap, loops[:n])]
        out = self.plain(op.result.type)
        sizes = [self.dim_index(lhs, d) for d in lfree] + [self.dim_index(rhs, d) for d in rfree]
        elem = self.ir.RankedTensorType(out).element_type
        filled = linalg.fill(self.scalar_zero(elem), outs=[self.sized_empty(out, sizes)])
        if isinstance(elem, self.ir.ComplexType):  # FNet's Fourier transform as a product
            mul, add = "complex.mul", "complex.add"
        else:
            mul, add = ("arith.mulf", "arith.addf") if isinstance(elem, self.ir.FloatType) else ("arith.muli", "arith.addi")

        def body(args):
            a, b, acc = args
            return self.op(add, [acc, self.op(mul, [a, b], [elem]).result], [elem]).result

        return self.generic([lhs, rhs], filled, maps, ["parallel"] * n + ["reduction"] * len(lc), body)

    # -- concatenate -------------------------------------------------------------------

    def concat_form(self, op) -> bool:
        """Whether ``op`` (a concatenate) joins along a dim other than 0 into a result with a
        `?` dim: IREE lowers it to one loop reading every operand at computed positions, and
        fused with an elementwise producer (zoo_hf_mpnet's position ids: a convert) that
        producer is materialised on the stack at a size it cannot bound ("stack allocation
        size overflows 64 bits")."""
        out = self.ir.RankedTensorType(op.result.type)
        return not out.has_static_shape and self.ir.IntegerAttr(op.attributes["dimension"]).value != 0

    def concatenate(self, op):
        """Each operand ``tensor.insert_slice``d into a ``tensor.empty`` of the result's
        sizes at its running offset along the joined dim (IREE copies each in place)."""
        axis = self.ir.IntegerAttr(op.attributes["dimension"]).value
        parts = list(op.operands)
        rank = self.ir.RankedTensorType(op.result.type).rank
        lengths = [self.dim_index(p, axis) for p in parts]
        total = lengths[0]
        for n in lengths[1:]:
            total = self.arith("arith.addi", total, n)
        sizes = [total if j == axis else self.dim_index(parts[0], j) for j in range(rank)]
        into = self.sized_empty(op.result.type, sizes)
        dyn = self.ir.DenseI64ArrayAttr.get([-(2**63)] * rank)  # ShapedType::kDynamic: an operand each
        offset = self.index_const(0)
        for part, n in zip(parts, lengths, strict=True):
            offsets = [offset if j == axis else self.index_const(0) for j in range(rank)]
            extent = [n if j == axis else sizes[j] for j in range(rank)]
            # the slice's type is the part's: its static dims are static sizes, the rest operands
            pt = self.ir.RankedTensorType(part.type)
            static = [-(2**63) if pt.is_dynamic_dim(j) else pt.shape[j] for j in range(rank)]
            extent = [e for j, e in enumerate(extent) if pt.is_dynamic_dim(j)]
            attrs = {
                "static_offsets": dyn,
                "static_sizes": self.ir.DenseI64ArrayAttr.get(static),
                "static_strides": self.ir.DenseI64ArrayAttr.get([1] * rank),
                "operandSegmentSizes": self.ir.DenseI32ArrayAttr.get([1, 1, rank, len(extent), 0]),
            }
            into = self.op("tensor.insert_slice", [part, into, *offsets, *extent], [into.type], attrs).result
            offset = self.arith("arith.addi", offset, n)
        return into

    # -- atan2 ---------------------------------------------------------------------------

    def atan2(self, op):
        """``stablehlo.atan2`` as a ``linalg.generic`` of ``math.atan2`` that keeps IEEE's
        zeros: IREE 3.13 computes atan2(0, 0) as NaN (the spec, C and XLA: 0; PPFConv's angle
        of a self loop) and atan2(-0, x < 0) as +pi. Where both are zero, x becomes
        copysign(1, x); where y is zero, the result takes y's sign."""
        y, x = op.operands
        out = self.ir.RankedTensorType(self.plain(op.result.type))
        elem = out.element_type
        bit = self.ir.IntegerType.get_signless(1)

        def const(v: float):
            return self.op("arith.constant", [], [elem], {"value": self.ir.FloatAttr.get(elem, v)}).result

        def zero(v):  # arith.cmpf oeq (predicate 1): -0 included
            pred = self.ir.IntegerAttr.get(self.ir.IntegerType.get_signless(64), 1)
            return self.op("arith.cmpf", [v, const(0.0)], [bit], {"predicate": pred}).result

        def body(args):
            b, a, _ = args
            y0 = zero(b)
            both = self.op("arith.andi", [y0, zero(a)], [bit]).result
            unit = self.op("math.copysign", [const(1.0), a], [elem]).result
            a = self.op("arith.select", [both, unit, a], [elem]).result
            r = self.op("math.atan2", [b, a], [elem]).result
            signed = self.op("math.copysign", [r, b], [elem]).result
            return self.op("arith.select", [y0, signed, r], [elem]).result

        init = self.sized_empty(out, [self.dim_index(y, j) for j in range(out.rank)])
        ident = f"({', '.join(f'd{j}' for j in range(out.rank))})"
        return self.generic([y, x], init, [f"{ident} -> {ident}"] * 3, ["parallel"] * out.rank, body)
