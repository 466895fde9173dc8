"""StableHLO reference-interpreter runner, usable in-process or as a worker.

Self-contained on purpose (no package imports, no torch): the isolated mode
runs ``python _interp_worker.py`` as a subprocess speaking length-prefixed
pickle frames on stdin/stdout, so a process abort inside ``eval_module``
(it aborts on ops it lacks) kills only the worker.
"""
from __future__ import annotations

import pickle
import re
import struct
import sys
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


def eval_text(text: str, args):
    """Run ``@main`` of ``text`` on NumPy ``args`` with stablehlo.eval_module."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    text = _BOUNDS_RE.sub("", text)
    ctx = _context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)  # fresh module per call: `?` dims take the call's sizes
        attrs = [_to_attr(ir, a) for a in args]
        res = stablehlo.eval_module(module, attrs)
        return [_from_attr(r) for r in res]


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
    _write(out, ("ready", None))
    while True:
        msg = _read(inp)
        if msg is None:
            return
        text, args = msg
        try:
            _write(out, ("ok", eval_text(text, args)))
        except BaseException as e:  # Python-level failures come back as errors
            _write(out, ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))


if __name__ == "__main__":
    main()
