"""StableHLO reference-interpreter runner, usable in-process or as a worker.

Self-contained on purpose (no package imports, no torch): the isolated mode
runs ``python _interp_worker.py`` as a subprocess speaking length-prefixed
pickle frames on stdin/stdout, so a process abort inside ``eval_module``
(it aborts on ops it lacks) kills only the worker.

``eval_module`` specialises the module it is given to the first call's
argument types (a later call with other sizes fails with "invalid input
argument type"), so :class:`Evaluator` keeps one parsed module per (module,
concrete argument shapes) and re-runs it for every call of that shape.

Frames, parent -> worker: ``("register", module_id, text)`` (no answer) and
``("run", module_id, args)``, answered by ``("ok", outputs, info)`` or
``("error", message)``; the worker says ``("ready", None)`` once it has
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

    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        # DenseElementsAttr.get wants i1 data bit-packed; go through the type
        t = ir.RankedTensorType.get(list(a.shape), ir.IntegerType.get_signless(1))
        return ir.DenseElementsAttr.get(np.packbits(a.reshape(-1), bitorder="little"), type=t)
    return ir.DenseElementsAttr.get(a)


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
        except BaseException as e:  # Python-level failures come back as errors
            _write(out, ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))


if __name__ == "__main__":
    main()
