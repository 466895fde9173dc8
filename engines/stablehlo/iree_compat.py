"""Rewrite our StableHLO module into the op forms IREE's ``stablehlo`` input accepts.

IREE 3.13 lowers StableHLO to ``linalg``/``tensor`` with the upstream
stablehlo→linalg patterns, and marks the whole ``stablehlo`` dialect illegal
afterwards. Four ops our lowering writes for ``?`` dims have no pattern there
("failed to legalize operation"), whatever their shape operand is built from:

``stablehlo.dynamic_reshape``
    → ``tensor.reshape`` with the same ``tensor<Nxi32>`` shape operand (IREE's
    flow conversion turns it into ``flow.tensor.reshape``, reading the sizes at
    run time).
``stablehlo.dynamic_broadcast_in_dim``
    → ``tensor.empty`` of the result's sizes (``tensor.extract`` of the shape
    operand, ``arith.index_cast`` to ``index``) + ``linalg.broadcast``. A
    ``linalg.broadcast`` only adds dims, so an operand dim that expands (a static
    1 under a result dim that is not a static 1) is first dropped by
    ``tensor.collapse_shape``, and a permuting ``dims`` list is first made
    increasing by ``stablehlo.transpose``. An operand ``?`` dim is taken as
    non-expanding: torch.export's broadcasting assumes a symbolic size is not 1
    (size-oblivious), so our lowering never broadcasts a ``?`` of size 1.
``stablehlo.dynamic_pad`` (interior padding 0)
    → ``tensor.pad`` with ``index`` low/high widths from the operands and a body
    yielding the padding scalar.

Bounded modules (``#stablehlo.bounds`` encodings) additionally lose their
encodings, which IREE does not read; :func:`rewrite` can instead state each
argument's bound as an IREE hint (``util.assume.int`` on its ``tensor.dim``,
``hints=True``) so IREE knows the dims' ranges.

``stablehlo.reduce_window`` (one result, a max or a sum, `?` dims; every such
window is refused, padded or not) → ``linalg.pooling_nchw_{max,sum}``
(:mod:`.iree_window`); one with two results, max pooling over f32 with its
indices, as one max window over an i64 key packing the value's order and the
index; any other is refused by name.

``stablehlo.dynamic_gather`` without batching dims (a take along axes), which
IREE cannot legalize, and ``stablehlo.dot_general`` in the forms IREE itself
reshapes to a `?` type it then refuses (no batching dims, `?` operands, a unit
dim or an operand of rank other than 2; complex too: FNet) → ``linalg.generic``
(:mod:`.iree_generic`); a gather with batching dims is refused by name. A
``stablehlo.concatenate`` along an inner dim with a `?` dim → ``tensor.insert_slice``s
(IREE cannot size the stack buffer of a producer fused into its concatenate loop).
``stablehlo.atan2``, which IREE computes as NaN at (0, 0) → ``math.atan2`` in a
``linalg.generic`` with IEEE's zeros restored (:meth:`.iree_generic.GenericRewrites.atan2`).

Anything else IREE refuses is left as it is: ``iree-compile`` names it.

One form IREE 3.13 accepts but computes wrong is rewritten too: two or more
``stablehlo.scatter`` ops whose operands are equal splats of a ``?`` shape
(every ``new_zeros(...).scatter_add_`` aggregation of a torch_geometric
model). IREE merges the equal splats into one buffer and each scatter updates
it in place, so every result is the sum of all of them
(docs/findings/2026-12-05-iree.md, tests/test_iree_causes.py). Each such
scatter gets a splat of its own whose sizes pass through a
``util.optimization_barrier`` of their own, so no two are equal
(:meth:`_Rewriter.separate_scatter_inits`); :func:`shared_scatter_inits`
finds what is left of the form, and :func:`rewrite` refuses it. The same
merge breaks two ``stablehlo.sort`` ops over equal ``?`` iotas (two topks of one
shape: the second's indices carry the first's permutation): each sort gets an
iota of its own, its shape behind a barrier (:meth:`_Rewriter.separate_sort_iotas`).
The rewrite runs on IREE's own MLIR bindings (``iree.compiler.ir``), whose
context registers the ``stablehlo``, ``tensor``, ``linalg`` and ``util``
dialects of the very ``iree-compile`` that reads the result.
"""

from __future__ import annotations

from typing import Any

from .iree_conv import ConvRewrites
from .iree_generic import GenericRewrites
from .iree_window import WindowRewrites

#: the ops rewritten, by name (the functions below)
REWRITTEN = (
    "stablehlo.dynamic_reshape",
    "stablehlo.dynamic_broadcast_in_dim",
    "stablehlo.dynamic_pad",
    "stablehlo.convolution",
    "stablehlo.reduce_window",
    "stablehlo.dynamic_gather",
    "stablehlo.dot_general",
    "stablehlo.concatenate",
    "stablehlo.atan2",
)


class IreeCompatError(ValueError):
    """An op form this rewrite cannot express for IREE (names the op and why)."""


def rewrite(text: str, hints: bool = False) -> str:
    """``text`` (a StableHLO module, ours) with every op of :data:`REWRITTEN`
    replaced by forms IREE's ``stablehlo`` input accepts, and bounds encodings
    dropped (as ``util.assume.int`` hints on the arguments' dims if ``hints``)."""
    from iree.compiler import ir

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        _Rewriter(ir).run(module, hints)
        module.operation.verify()
        shared = shared_scatter_inits(module, ir)
        if shared:
            raise IreeCompatError(
                f"IREE 3.13 computes {shared[0]} scatters into one splat of a ? shape wrong ({shared[1]}): "
                "it merges the equal splats into one buffer that every scatter updates in place"
            )
        return str(module)


def shared_scatter_inits(module, ir) -> tuple[int, str] | None:
    """``(count, what)`` of the largest group (two or more) of ``stablehlo.scatter`` ops
    whose operands are equal splats (``linalg.broadcast`` of one scalar constant) of the
    same ``?`` shape, or None."""
    groups: dict[str, int] = {}

    def visit(op):
        if op.name == "stablehlo.scatter":
            init = op.operands[0]
            owner = init.owner
            typ = ir.RankedTensorType(init.type)
            if getattr(owner, "name", "") == "linalg.broadcast" and not typ.has_static_shape:
                scalar = owner.operands[0].owner
                empty = owner.operands[1].owner
                if getattr(scalar, "name", "") == "stablehlo.constant":
                    # sizes read through a barrier of their own make the splat unlike any other
                    sizes = [str(d.get_name()) for d in empty.operands] if getattr(empty, "name", "") == "tensor.empty" else []
                    if any(getattr(d.owner, "name", "") == "util.optimization_barrier" for d in empty.operands):
                        return ir.WalkResult.ADVANCE
                    key = f"{scalar.attributes['value']} to {typ} of {sizes}"
                    groups[key] = groups.get(key, 0) + 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    worst = max(groups.items(), key=lambda kv: kv[1], default=None)
    return (worst[1], worst[0]) if worst and worst[1] >= 2 else None


class _Rewriter(ConvRewrites, WindowRewrites, GenericRewrites):
    def __init__(self, ir: Any):
        self.ir = ir
        self.index = ir.IndexType.get()

    # -- helpers ---------------------------------------------------------------

    def op(self, name: str, operands, results, attributes=None, regions: int = 0):
        return self.ir.Operation.create(
            name, results=list(results), operands=list(operands), attributes=attributes or {}, regions=regions
        )

    def index_const(self, n: int):
        attr = self.ir.IntegerAttr.get(self.index, n)
        return self.op("arith.constant", [], [self.index], {"value": attr}).result

    def extract_index(self, shape, i: int):
        """``index``: element ``i`` of the 1-d integer tensor ``shape``."""
        elem = self.ir.RankedTensorType(shape.type).element_type
        value = self.op("tensor.extract", [shape, self.index_const(i)], [elem]).result
        return self.op("arith.index_cast", [value], [self.index]).result

    def ints(self, op, name: str, n: int, default: int) -> list[int]:
        """The i64 array attribute ``name`` of ``op`` (a window's dims, strides, dilations), or
        ``n`` times ``default`` where the op leaves it out."""
        attrs = op.attributes
        return list(self.ir.DenseI64ArrayAttr(attrs[name])) if name in attrs else [default] * n

    def pads(self, op, n: int) -> list[list[int]]:
        """``op``'s ``padding`` attribute as ``n`` ``[low, high]`` pairs (zeros where it has none)."""
        if "padding" not in op.attributes:
            return [[0, 0]] * n
        flat = [int(v) for v in self.ir.DenseIntElementsAttr(op.attributes["padding"])]
        return [flat[2 * i : 2 * i + 2] for i in range(n)]

    def padded(self, x, value, pads: list[list[int]]):
        """``stablehlo.pad`` of ``x`` by ``value`` (a 0-d tensor), ``pads[i]`` the ``[low, high]``
        of dim ``i``; a `?` dim stays `?` in the result type."""
        xt = self.ir.RankedTensorType(x.type)
        dyn = self.ir.ShapedType.get_dynamic_size()
        shape = [dyn if xt.is_dynamic_dim(i) else d + sum(pads[i]) for i, d in enumerate(xt.shape)]
        i64 = self.ir.DenseI64ArrayAttr.get
        attrs = {
            "edge_padding_low": i64([p[0] for p in pads]),
            "edge_padding_high": i64([p[1] for p in pads]),
            "interior_padding": i64([0] * xt.rank),
        }
        return self.op("stablehlo.pad", [x, value], [self.ir.RankedTensorType.get(shape, xt.element_type)], attrs).result

    def plain(self, typ):
        """``typ`` without its encoding (``#stablehlo.bounds``)."""
        t = self.ir.RankedTensorType(typ)
        return self.ir.RankedTensorType.get(list(t.shape), t.element_type)

    # -- the pass --------------------------------------------------------------

    def run(self, module, hints: bool) -> None:
        found: list = []

        refused: list = []

        def visit(op):
            if op.name == "stablehlo.reduce_window" and len(op.results) > 1:
                (found if self.argmax_form(op) is None else refused).append(op)
            elif op.name == "stablehlo.dynamic_gather" and self.gather_refusal(op):
                refused.append(op)
            elif op.name in REWRITTEN and self.served(op):
                found.append(op)
            return self.ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        if refused and refused[0].name == "stablehlo.dynamic_gather":
            raise IreeCompatError(f"stablehlo.dynamic_gather with {self.gather_refusal(refused[0])}")
        if refused:
            raise IreeCompatError(
                f"stablehlo.reduce_window with {len(refused[0].results)} results, not max pooling's over f32 with "
                f"its indices ({self.argmax_form(refused[0])}): IREE 3.13 converts single-result windows only"
            )
        for op in found:
            with self.ir.InsertionPoint(op), op.location:
                if len(op.results) > 1:
                    for old, new in zip(op.results, self.argmax_window(op), strict=True):
                        old.replace_all_uses_with(new)
                else:
                    op.result.replace_all_uses_with(getattr(self, op.name.split(".", 1)[1])(op))
            op.erase()
        self.separate_scatter_inits(module)
        self.separate_sort_iotas(module)
        self.drop_bounds(module, hints)

    def served(self, op) -> bool:
        """Whether this rewrite has a form for ``op`` (convolutions and windows: some)."""
        if op.name == "stablehlo.convolution":
            return self.conv_form(op) is not None
        if op.name == "stablehlo.reduce_window":
            return self.window_form(op) is not None
        if op.name == "stablehlo.dot_general":
            return self.dot_form(op)
        if op.name == "stablehlo.concatenate":
            return self.concat_form(op)
        if op.name == "stablehlo.atan2":  # a float one: IREE computes atan2(0, 0) as NaN
            return isinstance(self.ir.RankedTensorType(op.result.type).element_type, self.ir.FloatType)
        return True

    def ops_named(self, module, name: str) -> list:
        """Every op of ``module`` named ``name``, in walk order (collected first: the caller
        inserts ops beside them, which a walk in progress must not see)."""
        found: list = []

        def visit(op):
            if op.name == name:
                found.append(op)
            return self.ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return found

    def separate_scatter_inits(self, module) -> None:
        """Give every ``stablehlo.scatter`` whose input is a splat of a ``?`` shape a splat
        of its own, its dynamic sizes behind a ``util.optimization_barrier`` each: equal
        splats would be merged by IREE into one buffer that the scatters update in place."""
        for scatter in self.ops_named(module, "stablehlo.scatter"):
            for init in list(scatter.operands)[: len(scatter.results)]:  # the inputs, then indices and updates
                splat = self.splat(init)
                if splat is None:
                    continue
                scalar, empty, dims = splat
                with self.ir.InsertionPoint(scatter), scatter.location:
                    sizes = [self.op("util.optimization_barrier", [d], [self.index]).result for d in empty.operands]
                    fresh = self.op("tensor.empty", sizes, [init.type]).result
                    from iree.compiler.dialects import linalg

                    own = linalg.broadcast(scalar, outs=[fresh], dimensions=dims).results[0]
                scatter.replace_uses_of_with(init, own)

    def separate_sort_iotas(self, module) -> None:
        """Give every ``stablehlo.sort`` operand made by a ``stablehlo.dynamic_iota`` (a sort's
        or topk's indices) an iota of its own, its shape behind a ``util.optimization_barrier``:
        IREE 3.13 merges equal `?` iotas, sorts the one buffer in place, and a second sort of
        the same shape then carries the first one's permutation (Llama-4's two MoE routers)."""
        for sort in self.ops_named(module, "stablehlo.sort"):
            for operand in list(sort.operands):
                iota = operand.owner
                if getattr(iota, "name", "") != "stablehlo.dynamic_iota":
                    continue
                with self.ir.InsertionPoint(sort), sort.location:
                    shape = iota.operands[0]
                    held = self.op("util.optimization_barrier", [shape], [shape.type]).result
                    own = self.op(
                        "stablehlo.dynamic_iota", [held], [operand.type], {"iota_dimension": iota.attributes["iota_dimension"]}
                    )
                sort.replace_uses_of_with(operand, own.result)

    def splat(self, value):
        """``(scalar, tensor.empty, dimensions)`` where ``value`` is a ``linalg.broadcast`` of a
        rank-0 ``stablehlo.constant`` into a ``tensor.empty`` of a ``?`` shape, else None."""
        owner = value.owner
        if getattr(owner, "name", "") != "linalg.broadcast" or self.ir.RankedTensorType(value.type).has_static_shape:
            return None
        scalar, init = owner.operands[0], owner.operands[1]
        if getattr(scalar.owner, "name", "") != "stablehlo.constant" or getattr(init.owner, "name", "") != "tensor.empty":
            return None
        return scalar, init.owner, list(self.ir.DenseI64ArrayAttr(owner.attributes["dimensions"]))

    def dynamic_reshape(self, op):
        x, shape = op.operands
        return self.op("tensor.reshape", [x, shape], [self.plain(op.result.type)]).result

    def dynamic_broadcast_in_dim(self, op):
        x, shape = op.operands[0], op.operands[1]
        src = self.ir.RankedTensorType(x.type)
        out = self.ir.RankedTensorType(self.plain(op.result.type))
        dims = list(self.ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        if order != list(range(len(dims))):  # linalg.broadcast keeps the operand's dim order
            perm = self.ir.DenseI64ArrayAttr.get(order)
            permuted = self.ir.RankedTensorType.get([src.shape[i] for i in order], src.element_type)
            x = self.op("stablehlo.transpose", [x], [permuted], {"permutation": perm}).result
            src, dims = permuted, [dims[i] for i in order]
        # an operand dim that expands: a static 1 under a result dim that is not a static 1
        kept = [i for i in range(src.rank) if not (src.shape[i] == 1 and out.shape[dims[i]] != 1)]
        if len(kept) < src.rank:
            x = self.collapse(x, src, kept)
        sizes = [self.extract_index(shape, j) for j in range(out.rank) if out.is_dynamic_dim(j)]
        init = self.op("tensor.empty", sizes, [out]).result
        added = [j for j in range(out.rank) if j not in {dims[i] for i in kept}]
        from iree.compiler.dialects import linalg

        return linalg.broadcast(x, outs=[init], dimensions=added).results[0]

    def collapse(self, x, src, kept: list[int]):
        """``x`` without its static-1 dims not in ``kept`` (``tensor.collapse_shape``)."""
        groups: list[list[int]] = []
        pending: list[int] = []
        for i in range(src.rank):
            pending.append(i)
            if i in kept:
                groups.append(pending)
                pending = []
        if pending and groups:  # trailing dropped dims join the last kept dim's group
            groups[-1].extend(pending)
        shape = [src.shape[i] for i in kept]
        typ = self.ir.RankedTensorType.get(shape, src.element_type)
        reassoc = self.ir.ArrayAttr.get(
            [self.ir.ArrayAttr.get([self.ir.IntegerAttr.get(self.ir.IntegerType.get_signless(64), i) for i in g]) for g in groups]
        )
        return self.op("tensor.collapse_shape", [x], [typ], {"reassociation": reassoc}).result

    def dynamic_pad(self, op):
        x, value, low, high, interior = op.operands
        if not self.zeros(interior):
            raise IreeCompatError("stablehlo.dynamic_pad with interior padding: tensor.pad has none")
        rank = self.ir.RankedTensorType(x.type).rank
        lows = [self.extract_index(low, i) for i in range(rank)]
        highs = [self.extract_index(high, i) for i in range(rank)]
        dyn = self.ir.DenseI64ArrayAttr.get([-(2**63)] * rank)  # ShapedType::kDynamic: every width an operand
        seg = self.ir.DenseI32ArrayAttr.get([1, rank, rank])
        out = self.plain(op.result.type)
        pad = self.op(
            "tensor.pad",
            [x, *lows, *highs],
            [out],
            {"static_low": dyn, "static_high": dyn, "operandSegmentSizes": seg},
            regions=1,
        )
        elem = self.ir.RankedTensorType(value.type).element_type
        block = pad.regions[0].blocks.append(*([self.index] * rank))
        with self.ir.InsertionPoint(block):
            scalar = self.op("tensor.extract", [value], [elem]).result
            self.op("tensor.yield", [scalar], [])
        return pad.result

    def arith(self, name, a, b):
        return self.op(name, [a, b], [self.index]).result

    def zero_attr(self, elem):
        if isinstance(elem, self.ir.IntegerType):
            return self.ir.IntegerAttr.get(elem, 0)
        return self.ir.FloatAttr.get(elem, 0.0)

    def zeros(self, value) -> bool:
        """Whether ``value`` is a ``stablehlo.constant`` of zeros."""
        owner = value.owner
        if not hasattr(owner, "name") or owner.name != "stablehlo.constant":
            return False
        attr = self.ir.DenseIntElementsAttr(owner.attributes["value"])
        return all(attr[i] == 0 for i in range(len(attr))) if not attr.is_splat else attr.get_splat_value().value == 0

    def drop_bounds(self, module, hints: bool) -> None:
        """Re-type every value without its ``#stablehlo.bounds`` encoding (IREE reads
        none); with ``hints``, state each bounded argument dim to IREE as
        ``util.assume.int`` (``umax`` = the bound) tied to the argument by
        ``flow.tensor.tie_shape``, which every use of the argument then reads."""
        funcs: list = []
        bounded_args: list = []

        def visit(op):
            for r in op.results:
                r.set_type(self.unbounded(r.type))
            for region in op.regions:
                for block in region.blocks:
                    for a in block.arguments:
                        a.set_type(self.unbounded(a.type))
            if op.name == "func.func":
                funcs.append(op)
            return self.ir.WalkResult.ADVANCE

        for f in module.body.operations:
            if f.operation.name == "func.func" and f.operation.attributes["sym_name"].value == "main":
                entry = f.operation.regions[0].blocks[0]
                bounded_args = [(a, self.bounds(a.type)) for a in entry.arguments]
        module.operation.walk(visit)
        for f in funcs:
            ftype = self.ir.FunctionType(self.ir.TypeAttr(f.attributes["function_type"]).value)
            plain = self.ir.FunctionType.get(
                [self.unbounded(t) for t in ftype.inputs], [self.unbounded(t) for t in ftype.results]
            )
            f.attributes["function_type"] = self.ir.TypeAttr.get(plain)
        if hints:
            for arg, bounds in bounded_args:
                if bounds:
                    self.tie(arg, bounds)

    def bounds(self, typ) -> list[int | None]:
        """Per dim of ``typ``: its ``#stablehlo.bounds`` bound, or None (none, or static)."""
        t = self.ir.RankedTensorType(typ)
        if t.encoding is None:
            return []
        text = str(t.encoding)
        if not text.startswith("#stablehlo.bounds<"):
            return []
        # the encoding's own syntax: `#stablehlo.bounds<2048, ?>` (the bindings expose no accessor)
        return [None if b.strip() == "?" else int(b) for b in text[len("#stablehlo.bounds<") : -1].split(",")]

    def unbounded(self, typ):
        """``typ`` without a ``#stablehlo.bounds`` encoding (any other type as it is)."""
        if not isinstance(typ, self.ir.RankedTensorType):
            return typ
        t = self.ir.RankedTensorType(typ)
        if t.encoding is None or not str(t.encoding).startswith("#stablehlo.bounds<"):
            return typ
        return self.plain(typ)

    def tie(self, arg, bounds: list[int | None]) -> None:
        """``arg``'s uses read it through ``flow.tensor.tie_shape`` with its dynamic dims
        as ``util.assume.int`` in ``[0, bound]``: IREE's range analysis sees the bounds."""
        block = arg.owner
        first = block.operations[0]
        t = self.ir.RankedTensorType(arg.type)
        with self.ir.InsertionPoint(first), first.location:
            dims, readers = [], []
            for i, b in enumerate(bounds):
                if not t.is_dynamic_dim(i):
                    continue
                dim = self.op("tensor.dim", [arg, self.index_const(i)], [self.index])
                readers.append(dim)
                d = dim.result
                if b is not None:
                    attr = self.ir.Attribute.parse(f"[[#util.int.assumption<umin = 0, umax = {b}>]]")
                    d = self.op("util.assume.int", [d], [self.index], {"assumptions": attr}).result
                dims.append(d)
            tie = self.op("flow.tensor.tie_shape", [arg, *dims], [arg.type])
        # every use but the dims' own reads and the tie takes the tied value
        arg.replace_all_uses_except(tie.result, [tie, *readers])
