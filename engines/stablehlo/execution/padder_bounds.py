"""Bounds for the bounded rewrite (:mod:`.padder_rewrite`): module plumbing (find
``@main``, walk ops, inline jax's private functions, drop its shape
assertions) and bound inference for a `?` module served at given argument
shapes (:func:`propagate_bounds`, the bucketed executor's)."""

from __future__ import annotations

from collections.abc import Sequence

from ..lowering import types as T
from .module import ExecutionError, PadderUnsupported


def find_main(module):
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise ExecutionError("module has no @main")


def walk(op, fn):
    for region in op.regions:
        for block in region.blocks:
            for child in list(block.operations):
                walk(child.operation, fn)
                fn(child.operation)


def bounds_attr(bounds, rank):
    from jaxlib.mlir import ir

    if bounds is None or all(b is None for b in bounds):
        return None
    return ir.Attribute.parse("#stablehlo.bounds<" + ", ".join("?" if b is None else str(b) for b in bounds) + ">")


def info(t) -> tuple[tuple[int | None, ...], tuple[int | None, ...] | None]:
    shape, _, bounds = T.parse_tensor_type(str(t))
    return shape, bounds


def bounded_type(t, bounds: Sequence[int | None]):
    """``t`` (a `?`/static ranked type) with ``bounds`` on its `?` dims."""
    from jaxlib.mlir import ir

    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(list(rt.shape), rt.element_type, bounds_attr(bounds, rt.rank))


def propagate_bounds(module, main, shapes: Sequence[Sequence[int]], label: str) -> SizeProbe:
    """Give every `?` dim of ``module`` (in place) the bound its size has when
    @main's arguments have ``shapes``: a copy of the module, with a probe (a
    side-effecting ``custom_call @dynshape_probe``) on every value with `?`
    dims, is refined to those static shapes (jax's shape refinement), and each
    probe's operand type is read back (probes survive the folding and CSE that
    remove ops). This assumes sizes grow with the argument sizes (true of
    broadcasts, reshapes, concatenations, prefix slices); the padder keeps
    every live size at run time, and the returned :class:`SizeProbe` checks
    that assumption at each concrete shape the bucket serves."""
    from jaxlib.mlir import ir

    from .xla import refine

    strip_assertions(module)
    probed = []
    with ir.Location.unknown():
        copy = ir.Module.parse(module.operation.get_asm())

        def probe(op):
            for r in op.results:
                if "?" in str(r.type).split(",")[0]:
                    probed.append(len(probed))
                    term = op.block.operations[len(op.block.operations) - 1]
                    ir.Operation.create(
                        "stablehlo.custom_call",
                        results=[],
                        operands=[r],
                        attributes={
                            "call_target_name": ir.StringAttr.get("dynshape_probe"),
                            "has_side_effect": ir.BoolAttr.get(True),
                            "backend_config": ir.StringAttr.get(str(len(probed) - 1)),
                        },
                        ip=ir.InsertionPoint(term),
                    )

        walk(copy.operation, probe)
        probe_text = copy.operation.get_asm()
        found = _read_probes(refine(probe_text, [(tuple(s), None) for s in shapes], label))
    values, fulls = [], []
    walk(module.operation, lambda op: values.extend((op, r) for r in op.results if "?" in str(r.type).split(",")[0]))
    for k, (op, r) in enumerate(values):
        rt = found.get(k)
        shape, _, _ = T.parse_tensor_type(str(r.type))
        full, _, _ = T.parse_tensor_type(str(rt)) if rt is not None else (None, None, None)
        if full is None or None in full:
            raise PadderUnsupported(
                f"{label}: {op.name} has a size shape refinement could not fix at argument shapes {shapes}: no bound for it",
                op.name,
            )
        r.set_type(bounded_type(r.type, [f if s is None else None for s, f in zip(shape, full, strict=False)]))
        fulls.append((op.name, tuple(full)))
    ft = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    block = main.regions[0].blocks[0]
    inputs = []
    for i, (t, s) in enumerate(zip(ft.inputs, shapes, strict=False)):
        shape, _, _ = T.parse_tensor_type(str(t))
        bt = bounded_type(t, [n if d is None else None for d, n in zip(shape, s, strict=False)])
        block.arguments[i].set_type(bt)
        inputs.append(bt)
    ret = block.operations[len(block.operations) - 1]
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in ret.operands]))
    return SizeProbe(probe_text, fulls, tuple(tuple(s) for s in shapes), label)


def _read_probes(text: str) -> dict[int, object]:
    """``{probe index: operand type}`` of a refined probed module."""
    from jaxlib.mlir import ir

    found: dict[int, object] = {}

    def read(op):
        if op.name == "stablehlo.custom_call" and ir.StringAttr(op.attributes["call_target_name"]).value == "dynshape_probe":
            found[int(ir.StringAttr(op.attributes["backend_config"]).value)] = op.operands[0].type

    walk(ir.Module.parse(text).operation, read)
    return found


class SizeProbe:
    """The sizes of a `?` module's values at a bucket's shapes (the bounds
    :func:`propagate_bounds` gave them), and :meth:`check` of a concrete shape
    against them: a size that is not monotone in the argument sizes
    (``x[: n % 4 + 1]`` is 1 at n = 32 and 2 at n = 5) would exceed the
    bound at a smaller shape, and the padder would clamp it: a wrong shape."""

    def __init__(self, text: str, fulls, bucket, label: str):
        self.text, self.fulls, self.bucket, self.label = text, fulls, bucket, label

    def check(self, shapes) -> None:
        """Raise :class:`PadderUnsupported` naming the op whose size at ``shapes``
        is above its size at the bucket (one shape refinement, no compile)."""
        from jaxlib.mlir import ir

        from ..lowering.verify import make_context
        from .xla import refine

        with make_context(), ir.Location.unknown():
            found = _read_probes(refine(self.text, [(tuple(s), None) for s in shapes], self.label))
            for k, (name, full) in enumerate(self.fulls):
                got = T.parse_tensor_type(str(found[k]))[0] if k in found else None
                if got is None or None in got or any(g > f for g, f in zip(got, full, strict=False)):
                    raise PadderUnsupported(
                        f"{self.label}: {name} has shape {got} at argument shapes {tuple(shapes)}, above its "
                        f"{full} at the bucket {self.bucket} (a size that does not grow with the argument "
                        f"sizes): this bucket cannot serve it",
                        name,
                    )


def inline_calls(module) -> None:
    """Inline every ``func.call`` (jax's modules call private functions; the
    MLIR ``inline`` pass in jaxlib has no inliner interface for them)."""
    from jaxlib.mlir import ir

    funcs = {
        ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations if op.operation.name == "func.func"
    }
    for _ in range(64):  # nesting depth
        calls = []
        walk(module.operation, lambda op: calls.append(op) if op.name == "func.call" else None)
        if not calls:
            return
        for call in calls:
            callee = funcs[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
            body = callee.regions[0].blocks[0]
            mapping = {}
            for a, v in zip(body.arguments, call.operands, strict=False):
                mapping[a] = v
            ip = ir.InsertionPoint(call)
            ops = list(body.operations)
            for op in ops[:-1]:
                new = op.operation.clone(ip=ip)
                remap(new, mapping)
                for old_r, new_r in zip(op.results, new.results, strict=False):
                    mapping[old_r] = new_r
            for r, v in zip(call.results, ops[-1].operands, strict=False):
                r.replace_all_uses_with(mapping.get(v, v))
            call.erase()
    raise ExecutionError("func.call nesting deeper than 64: not inlined")


def remap(op, mapping) -> None:
    for i, v in enumerate(op.operands):
        w = mapping.get(v)
        if w is not None:
            op.operands[i] = w
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                remap(child.operation, mapping)


def strip_assertions(module) -> None:
    """Drop jax's ``shape_assertion`` custom calls (checked per concrete shape
    on the host by the caller; XLA has no target for them)."""
    from jaxlib.mlir import ir

    doomed = []

    def visit(op):
        if op.name == "stablehlo.custom_call" and "call_target_name" in op.attributes:
            if ir.StringAttr(op.attributes["call_target_name"]).value == "shape_assertion":
                doomed.append(op)

    walk(module.operation, visit)
    for op in doomed:
        op.erase()


def check_all_bounded(module, label: str) -> None:
    """Every `?` dim left must carry a bound: else the size is data-dependent."""
    bad = []

    def visit(op):
        for r in op.results:
            s = str(r.type)
            if s.startswith("tensor<") and "?" in s.split(",")[0]:
                shape, _, bounds = T.parse_tensor_type(s)
                if any(x is None and (bounds is None or bounds[d] is None) for d, x in enumerate(shape)):
                    bad.append((op.name, s))

    walk(module.operation, visit)
    if bad:
        name, t = bad[0]
        raise PadderUnsupported(
            f"{label}: {name} produces {t}, a size with no bound (data-dependent or "
            f"unbounded): the dynamic padder cannot serve it",
            name,
        )


#: the identity of each reduction body, per element kind ("f": float, "i": int/bool)
_IDENTITY = {
    "stablehlo.add": lambda k, v: v == 0,
    "stablehlo.multiply": lambda k, v: v == 1,
    "stablehlo.maximum": lambda k, v: v == -float("inf") if k == "f" else v <= -(2**31) or v is False,
    "stablehlo.minimum": lambda k, v: v == float("inf") if k == "f" else v >= 2**31 - 1,
    "stablehlo.or": lambda k, v: not v,
    "stablehlo.and": lambda k, v: bool(v) and v in (1, -1, True),
}


def check_reduce_inits(module, label: str) -> None:
    """XLA's dynamic padder fills the padding a ``reduce`` sees with its init
    value: right when the init is the identity of the body (0 for a sum,
    -inf for a max), wrong otherwise. Refuse a reduce over a dynamic dim whose
    init is not a constant identity, naming it (instead of a wrong sum)."""
    import numpy as np
    from jaxlib.mlir import ir

    bad = []

    def visit(op):
        if op.name != "stablehlo.reduce":
            return
        n = len(op.operands) // 2
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        for x, init in zip(op.operands[:n], op.operands[n:], strict=False):
            shape, _, _ = T.parse_tensor_type(str(x.type))
            if not any(shape[d] is None for d in dims):
                continue
            body = [o.name for o in op.regions[0].blocks[0].operations]
            owner = init.owner
            ok = False
            if len(body) == 2 and body[0] in _IDENTITY and not isinstance(owner, ir.Block) and owner.name == "stablehlo.constant":
                v = np.array(ir.DenseElementsAttr(owner.attributes["value"])).reshape(-1)[0].item()
                kind = "f" if isinstance(v, float) else "i"
                ok = _IDENTITY[body[0]](kind, v)
            if not ok:
                where = (
                    "a computed init"
                    if isinstance(owner, ir.Block) or "value" not in owner.attributes
                    else f"init {owner.attributes['value']}"
                )
                bad.append(f"{'/'.join(body[:-1])} with {where}")

    walk(module.operation, visit)
    if bad:
        raise PadderUnsupported(
            f"{label}: stablehlo.reduce over a dynamic dim ({bad[0]}): XLA's dynamic padder fills "
            f"the padding with the init value, so an init that is not the body's identity "
            f"would count it",
            "stablehlo.reduce",
        )


def arg_symbols(main, n: int) -> list[list[str]]:
    """Per @main argument, its dims' size symbols from the lowering's
    ``dynshape.dim_symbols`` attribute ("" where none; all "" for other modules)."""
    from jaxlib.mlir import ir

    out: list[list[str]] = [[] for _ in range(n)]
    if "arg_attrs" not in main.attributes:
        return out
    for i, d in enumerate(ir.ArrayAttr(main.attributes["arg_attrs"])):
        d = ir.DictAttr(d)
        if i < n and "dynshape.dim_symbols" in d:
            out[i] = [ir.StringAttr(x).value for x in ir.ArrayAttr(d["dynshape.dim_symbols"])]
    return out


def static_slices(module) -> None:
    """A slice whose result is static on a dim where its operand is dynamic
    (``topk(x, 2)`` slices the first 2 rows of a sort over a dynamic dim) reads
    live rows only (torch proved the size): its operand is made static at the
    bound first (``set_dimension_size`` to the bound). XLA's padder would
    otherwise carry the operand's dynamic size into a result typed static,
    and the CPU executable corrupted the heap (SIGSEGV/abort in
    ``execute_sharded``)."""
    import numpy as np
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    todo = []
    walk(module.operation, lambda op: todo.append(op) if op.name in ("stablehlo.slice", "stablehlo.dynamic_slice") else None)
    for op in todo:
        operand = op.operands[0]
        oshape, obounds = info(operand.type)
        rshape, _ = info(op.results[0].type)
        dims = [d for d, s in enumerate(oshape) if s is None and rshape[d] is not None]
        if not dims:
            continue
        ip = ir.InsertionPoint(op)
        o = operand
        for d in dims:
            c = stablehlo.ConstantOp(ir.DenseElementsAttr.get(np.array(obounds[d], np.int32)), ip=ip).result
            o = stablehlo.SetDimensionSizeOp(o, c, d, ip=ip).result
        rt = ir.RankedTensorType(operand.type)
        shape = [obounds[d] if d in dims else s for d, s in enumerate(oshape)]
        bounds = [None if d in dims or s is not None else obounds[d] for d, s in enumerate(oshape)]
        o.set_type(
            ir.RankedTensorType.get(
                [ir.ShapedType.get_dynamic_size() if s is None else s for s in shape],
                rt.element_type,
                bounds_attr(bounds, len(shape)),
            )
        )
        op.operands[0] = o


def const_values(v):
    """The values of a constant operand (flat int64), or None: a
    ``stablehlo.constant``, a ``reshape`` of one, or a ``concatenate`` of such (jax.export builds a pad's ``low``/``interior``
    as ``concatenate`` of per-dim constants)."""
    import numpy as np
    from jaxlib.mlir import ir

    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    if owner.name == "stablehlo.constant":
        return np.array(ir.DenseIntElementsAttr(owner.attributes["value"]), dtype=np.int64).reshape(-1)
    if owner.name == "stablehlo.reshape":
        return const_values(owner.operands[0])
    if owner.name == "stablehlo.concatenate" and len(ir.RankedTensorType(v.type).shape) == 1:
        parts = [const_values(o) for o in owner.operands]
        return None if any(p is None for p in parts) else np.concatenate(parts)
    return None
