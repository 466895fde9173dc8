"""StableHLO reference-interpreter runner, usable in-process or as a worker.

Self-contained on purpose (no package imports, no torch): the isolated mode
runs ``python _interp_worker.py`` as a subprocess speaking length-prefixed
pickle frames on stdin/stdout, so a process abort inside ``eval_module``
(it aborts on ops it lacks) kills only the worker.

``eval_module`` specialises the module it is given to the first call's
argument types (a later call with other sizes fails with "invalid input
argument type"), so :class:`Evaluator` keeps one parsed module per (module,
concrete argument shapes) and re-runs it for every call of that shape.

jax's ``shape_assertion`` custom calls (runtime assertions of an exported
program) are not interpreter ops: for a module that has them, each new shape
first checks them the way the xla executor does (``@main`` specialised to the
shapes, ``refine_polymorphic_shapes`` evaluates them: a failed one is an error
with its message), then the interpreter runs the module without them. Each ``scatter`` gets a
copy of its operand (the interpreter updates the operand in place).

Frames, parent -> worker: ``("register", module_id, text)`` (no answer) and
``("run", module_id, args)``, answered by ``("ok", outputs, info)``,
``("error", message)`` or ``("limitation", message)`` (a module the interpreter
is known to abort on, refused before running: :func:`check_contractions`, :func:`check_kernel_calls`); the worker says ``("ready", None)`` once it has
imported jaxlib and made its MLIR context.
"""

from __future__ import annotations

import pickle
import re
import struct
import sys
import time
import traceback

_BOUNDS_RE = re.compile(r",\s*#stablehlo\.bounds<[^>]*>")


def _context():
    from jax.interpreters.mlir import make_ir_context

    return make_ir_context()


def _to_attr(ir, a):
    import numpy as np

    shape = list(np.shape(a))
    a = np.ascontiguousarray(a)  # (0-d arrays become 1-d here: the type below keeps the shape)
    if a.dtype.kind == "u":  # numpy's unsigned ints would become signless iN
        elt = ir.IntegerType.get_unsigned(a.dtype.itemsize * 8)
    else:  # bool -> i1 (one byte per element)
        elt = ir.DenseElementsAttr.get(a.reshape(-1)[:1] if a.size else np.zeros(1, a.dtype)).type.element_type
    return ir.DenseElementsAttr.get(a, type=ir.RankedTensorType.get(shape, elt))


def _from_attr(attr):
    import numpy as np

    t = attr.type
    et = str(t.element_type)
    shape = tuple(t.shape)
    if et == "i1":
        vals = [bool(attr.get_splat_value().value)] * int(np.prod(shape)) if attr.is_splat else None
        if vals is None:
            from jaxlib.mlir import ir

            ia = ir.DenseIntElementsAttr(attr)
            vals = [bool(ia[i]) for i in range(len(ia))]
        return np.array(vals, dtype=np.bool_).reshape(shape)
    arr = np.array(attr)
    if arr.shape != shape:
        arr = arr.reshape(shape)
    return arr


def _main(module, ir):
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise ValueError("module has no @main")


def _assertions(op, found):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if (
                    inner.operation.name == "stablehlo.custom_call"
                    and str(inner.attributes["call_target_name"]) == '"shape_assertion"'
                ):
                    found.append(inner)
                else:
                    _assertions(inner.operation, found)
    return found


def _scatters(op, found):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "stablehlo.scatter":
                    found.append(inner)
                _scatters(inner.operation, found)
    return found


def copy_scatter_operands(module) -> None:
    """The interpreter's ``scatter`` writes into its operand's buffer (two
    scatters into one tensor see each other's updates): give each scatter a
    fresh copy of its operand (a same-type ``convert``)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    for op in _scatters(module.operation, []):
        n = (len(op.operation.operands) - 1) // 2  # (operands..., indices, updates...)
        for i in range(n):
            v = op.operation.operands[i]
            op.operation.operands[i] = stablehlo.convert(v.type, v, ip=ir.InsertionPoint(op.operation))


def _refined(text: str, shapes, enable_shape_assertions: bool) -> bytes:
    """``text`` with ``@main`` specialised to concrete argument ``shapes`` (static
    argument types, a ``convert`` back to the old type, as jax does) and shape-refined:
    bytecode of a module whose types are static."""
    import io

    import jax.extend.mlir as jm
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    module = ir.Module.parse(text)
    main = _main(module, ir)
    ft = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    new = [ir.RankedTensorType.get(list(s), ir.RankedTensorType(t).element_type) for s, t in zip(shapes, ft.inputs, strict=False)]
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new, ft.results))
    block = main.regions[0].blocks[0]
    for i, t in enumerate(new):
        arg, old = block.arguments[i], block.arguments[i].type
        arg.set_type(t)
        if str(old) != str(t):
            conv = stablehlo.convert(old, arg, ip=ir.InsertionPoint.at_block_begin(block))
            arg.replace_all_uses_except(conv, conv.owner.operation)
    buf = io.BytesIO()
    module.operation.write_bytecode(file=buf)
    return jm.refine_polymorphic_shapes(
        buf.getvalue(), enable_shape_assertions=enable_shape_assertions, validate_static_shapes=False
    )


def check_assertions(text: str, shapes) -> None:
    """Evaluate the ``shape_assertion`` calls of ``text`` for concrete argument
    ``shapes`` (:func:`_refined` evaluates them): a failed assertion raises its message."""
    try:
        _refined(text, shapes, True)
    except Exception as e:
        msg = str(e)
        i = msg.find("error: ")
        raise AssertionError(msg[i + len("error: ") :].split("\n")[0] if i >= 0 else msg) from None


class Refused(Exception):
    """A module ``eval_module`` is known to abort the process on, refused before it runs."""


class ZeroSizeContraction(Refused):
    """The module contracts over a zero-size dim, which aborts ``eval_module``."""


class DynamicResult(Refused):
    """An op's result stays dynamic at the call's static argument shapes (a size
    set on the device, ``set_dimension_size`` of a data-dependent count):
    ``eval_module`` aborts ("dynamic result types are not supported")."""


class KernelCall(Refused):
    """The module calls an XLA runtime kernel (``custom_call @lapack_*``, the linalg
    lowering's), which ``eval_module`` has no implementation of (it aborts)."""


def check_kernel_calls(module) -> None:
    """Raise :class:`KernelCall` naming the first ``custom_call`` of jaxlib's LAPACK kernels
    (``@lapack_*``; any other target aborts as it did)."""
    for op in _ops_named(module.operation, ("stablehlo.custom_call",)):
        name = str(op.operation.attributes["call_target_name"])
        if name.startswith('"lapack_'):
            raise KernelCall(
                f"stablehlo.custom_call @{name.strip(chr(34))}: a kernel of XLA's CPU runtime, which jaxlib's "
                f"reference interpreter has none of; refused before running (the xla executor runs it)"
            )


_CONTRACTING_RE = re.compile(r"lhs_contracting_dimensions = \[([0-9, ]*)\]")


def _ops_named(op, names):
    return [inner for inner in _all_ops(op, []) if inner.operation.name in names]


def check_contractions(module, text: str, shapes) -> None:
    """Raise :class:`ZeroSizeContraction` naming the op when a ``dot_general`` of
    ``module`` contracts a zero-size dim at argument ``shapes`` (the reference
    interpreter aborts the process there: "Incompatible index and shape found while
    flattening index"; reductions and convolutions over empty batches it runs).
    A module with `?` dims is refined to the shapes first to see its static types."""
    from jaxlib.mlir import ir

    if "dot_general" not in text:
        return
    if "?" in text:
        module = ir.Module.parse(_refined(text, shapes, False))
    for op in _ops_named(module.operation, ("stablehlo.dot_general",)):
        lhs = ir.RankedTensorType(op.operation.operands[0].type)
        m = _CONTRACTING_RE.search(str(op.operation.attributes["dot_dimension_numbers"]))
        dims = [int(d) for d in m.group(1).split(",") if d.strip()] if m else []
        if any(lhs.shape[d] == 0 for d in dims):
            raise ZeroSizeContraction(
                f"stablehlo.dot_general contracts a zero-size dim ({lhs} over dims {dims}): jaxlib's reference "
                f"interpreter aborts on it; refused before running (the xla executor runs it)"
            )


def check_dynamic_results(module, text: str, shapes) -> None:
    """Raise :class:`DynamicResult` naming the first op whose result type keeps a
    dynamic dim once ``module`` is refined to argument ``shapes``."""
    from jaxlib.mlir import ir

    if "set_dimension_size" not in text:  # the one way our lowering makes a size on the device
        return
    try:
        refined = ir.Module.parse(_refined(text, shapes, False)) if "?" in text else module
    except Exception:  # not refinable here: eval_module says what it says, as before
        return
    for op in _all_ops(refined.operation, []):
        for r in op.operation.results:
            try:
                static = ir.RankedTensorType(r.type).has_static_shape
            except ValueError:  # not a ranked tensor (a token, a tuple)
                continue
            if not static:
                raise DynamicResult(
                    f"{op.operation.name} has a dynamic result ({r.type}) at argument shapes {list(shapes)} "
                    "(a size set on the device): jaxlib's reference interpreter aborts on dynamic result types; "
                    "refused before running (the xla executor runs it)"
                )


def _all_ops(op, found):
    """Every op nested in ``op``, in pre-order (appended to ``found``)."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                found.append(inner)
                _all_ops(inner.operation, found)
    return found


class Evaluator:
    """Registered modules, each parsed once per concrete argument shapes."""

    def __init__(self):
        from jaxlib.mlir.dialects import stablehlo  # noqa: F401  (imported here, not on the first call)

        self.ctx = _context()
        self.texts: dict = {}
        self.parsed: dict = {}

    def register(self, module_id: str, text: str) -> None:
        """Remember ``text`` (bounds dropped: the interpreter rejects bounded types)."""
        self.texts[module_id] = _BOUNDS_RE.sub("", text)

    def run(self, module_id: str, args):
        """Run ``@main`` on NumPy ``args``; returns (outputs, info) where info has
        ``parsed`` (whether this shape was new), ``parse_s`` and ``eval_s`` (``eval_module``)."""
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        if module_id not in self.texts:
            raise KeyError(f"module {module_id} was never registered with the interpreter")
        key = (module_id, tuple(a.shape for a in args))
        info = {"parsed": False, "parse_s": 0.0}
        with self.ctx, ir.Location.unknown():
            module = self.parsed.get(key)
            if module is None:
                t0 = time.perf_counter()
                module = ir.Module.parse(self.texts[module_id])
                copy_scatter_operands(module)
                check_contractions(module, self.texts[module_id], key[1])
                check_dynamic_results(module, self.texts[module_id], key[1])
                check_kernel_calls(module)
                asserts = _assertions(module.operation, [])
                if asserts:
                    check_assertions(self.texts[module_id], key[1])
                    for op in asserts:
                        op.operation.erase()
                info.update(parsed=True, parse_s=time.perf_counter() - t0)
            attrs = [_to_attr(ir, a) for a in args]
            t0 = time.perf_counter()
            res = stablehlo.eval_module(module, attrs)
            info["eval_s"] = time.perf_counter() - t0
            self.parsed[key] = module  # only once it ran: a failed specialisation is not kept
            return [_from_attr(r) for r in res], info


def _read(f):
    h = f.read(8)
    if len(h) < 8:
        return None
    (n,) = struct.unpack("<Q", h)
    return pickle.loads(f.read(n))


def _write(f, obj):
    b = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(b)))
    f.write(b)
    f.flush()


def main():
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the real stdout
    evaluator = Evaluator()
    _write(out, ("ready", None))
    while True:
        msg = _read(inp)
        if msg is None:
            return
        kind, module_id, payload = msg
        if kind == "register":
            evaluator.register(module_id, payload)
            continue
        try:
            outs, info = evaluator.run(module_id, payload)
            _write(out, ("ok", outs, info))
        except Refused as e:  # refused before eval_module could abort
            _write(out, ("limitation", str(e)))
        except BaseException as e:  # Python-level failures come back as errors
            _write(out, ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))


if __name__ == "__main__":
    main()
