"""Generate the index families' code (``argmax``/``argmin``/``argsort``-like
``arg*``, ``get_at``, ``set_at``/``add_at``/...): coordinates ravelled over
symbolic sizes, with the emitter of :mod:`.codegen`."""

import math

from engines import sizes as sz

from .codegen import names_of as _names
from .coords import coords as _coords
from .expand import leaves
from .tree import Axis


def gen_argfind(g, op, ins, outs):
    ad = g.ad
    v, axes = g.single("t0", ins[0])
    marked = [k for k, a in enumerate(axes) if a.marked]
    if not marked:  # an ellipsis of no axes in brackets: coordinates of length 0 (size 0: einx's AxisSizeError)
        v = g.emit(f"{v}[{', '.join([':'] * len(axes) + ['None'])}]")
        axes, marked = axes + [Axis("argfind.none", 1, True)], [len(axes)]
        v = g.emit(ad.call(op, [v], axes=marked))
        rest, out_axes = [a.name for a in axes[:-1]], leaves(outs[0])
        v = g.align(v, rest, [a.name for a in out_axes if not a.marked], broadcast=True)
        k = next(k for k, a in enumerate(out_axes) if a.marked)
        v = g.emit(f"{v}[{', '.join([':'] * k + ['None'])}][{', '.join([':'] * k + [':0'])}]")
        return [g.compose(v, outs[0].children)]
    if marked != list(range(marked[0], marked[0] + len(marked))):
        perm = [k for k in range(len(axes)) if k not in marked] + marked
        v = g.emit(ad.transpose(v, perm))
        axes = [axes[k] for k in perm]
        marked = list(range(len(axes) - len(marked), len(axes)))
    msizes = [axes[k] for k in marked]
    if len(marked) > 1:
        mtotal = sz.source(math.prod((g.size(a) for a in msizes), start=sz.const(1)))
        shape = [g.scode(a) for a in axes[: marked[0]]] + [mtotal] + [g.scode(a) for a in axes[marked[-1] + 1 :]]
        v = g.emit(ad.reshape(v, shape))
    v = g.emit(ad.call(op, [v], axes=[marked[0]]))
    rest = [a.name for k, a in enumerate(axes) if k not in marked]
    out = outs[0]
    out_axes = leaves(out)
    coord = [k for k, a in enumerate(out_axes) if a.marked]
    out_names = [a.name for a in out_axes if not a.marked]
    v = g.align(v, rest, out_names, broadcast=True)
    if coord:
        k = coord[0]
        if len(msizes) == 1:
            v = g.emit(f"{v}[{', '.join([':'] * k + ['None'])}]")
        else:
            parts = [None] * len(msizes)
            for i in reversed(range(len(msizes))):
                s = g.scode(msizes[i], atomic=True)
                parts[i] = g.emit(f"{v} % {s}")
                v = g.emit(f"{v} // {s}")
            v = g.emit(ad.stack(parts, k))
    return [g.compose(v, out.children)]


def _ravel(g, tensor_axes, coords, out_names):
    ad = g.ad
    coords = list(coords)
    stride = sz.const(1)
    strides = []
    for a in reversed(tensor_axes):
        strides.insert(0, stride)
        stride = stride * g.size(a)
    like = coords[0][0]
    terms = []
    for a, st in zip(tensor_axes, strides, strict=False):
        if a.marked:
            v, names = coords.pop(0)
        else:
            v, names = g.emit(ad.arange(g.scode(a), like)), [a.name]
        if st != 1:
            v = g.emit(f"{v} * {sz.source(st, atomic=True)}")
        terms.append(g.align(v, names, out_names, broadcast=False))
    idx = terms[0]
    for t in terms[1:]:
        idx = g.emit(f"{idx} + {t}")
    return idx, stride


def gen_get_at(g, ins, outs):
    ad = g.ad
    vt, taxes = g.single("t0", ins[0])
    coords = _coords(g, ins, len(ins) - 1)
    out = outs[0]
    out_names = _names(leaves(out))
    idx, total = _ravel(g, taxes, coords, out_names)
    flat = g.emit(ad.reshape(vt, [sz.source(total)]))
    v = g.emit(ad.flat_take(flat, idx))
    if out_names:  # to no axes, the taken element is already 0-d: NumPy keeps its scalar, as einx returns it
        v = g.emit(ad.broadcast_to(v, [g.scode(n) for n in out_names]))
    return [g.compose(v, out.children)]


def gen_update_at(g, op, ins, outs):
    ad = g.ad
    vt, taxes = g.single("t0", ins[0])
    coords = _coords(g, ins, len(ins) - 2)
    vu, uaxes = g.single(f"t{len(ins) - 1}", ins[-1])
    inter = []
    for names in [c[1] for c in coords] + [_names(uaxes), [a.name for a in taxes if not a.marked]]:
        for n in names:
            if n not in inter:
                inter.append(n)
    idx, total = _ravel(g, taxes, coords, inter)
    upd = g.align(vu, _names(uaxes), inter, broadcast=False)
    flat = g.emit(ad.reshape(vt, [sz.source(total)]))
    if ad.name == "torch":
        idx, upd = g.emit(f"torch.broadcast_tensors({idx}, {upd})[0]"), g.emit(f"torch.broadcast_tensors({idx}, {upd})[1]")
        if op == "subtract_at":
            upd = g.emit(f"torch.neg({upd})")
        v = g.emit(f"{flat}.index_put_(({idx},), {upd}, accumulate={op != 'set_at'})")
    elif ad.name == "numpy":
        idx, upd = g.emit(f"np.broadcast_arrays({idx}, {upd})[0]"), g.emit(f"np.broadcast_arrays({idx}, {upd})[1]")
        fn = {"set_at": "np.put", "add_at": "np.add.at", "subtract_at": "np.subtract.at"}[op]
        g.lines.append(f"{fn}({flat}, {idx}, {upd})")
        v = flat
    else:
        meth = {"set_at": "set", "add_at": "add", "subtract_at": "subtract"}[op]
        v = g.emit(f"{flat}.at[{idx}].{meth}({upd})")
    v = g.emit(ad.reshape(v, [g.scode(a) for a in taxes]))
    out = outs[0]
    v = g.align(v, _names(taxes), _names(leaves(out)), broadcast=True)
    return [g.compose(v, out.children)]
