"""The coordinates of ``get_at`` / ``*_at`` in generated code: one array per indexed axis."""

from .expand import leaves


def coords(g, ins, ncoord_inputs):
    """Split coordinate inputs into one-axis coordinates: [(var, [names])]."""
    out, split = [], []
    for i in range(1, 1 + ncoord_inputs):
        v, axes = g.single(f"t{i}", ins[i])
        split.append((v, axes))
    if any(a.marked and not g.size(a).is_const for _, axes in split for a in axes):
        return _joint_coords(g, ins, split)
    for v, axes in split:
        marked = [k for k, a in enumerate(axes) if a.marked]
        names = [a.name for a in axes if not a.marked]
        if not marked:
            out.append((v, names))
            continue
        k = marked[0]
        for c in range(g.size(axes[k]).value):
            idx = ", ".join([":"] * k + [str(c)])
            out.append((g.emit(f"{v}[{idx}]"), names))
    return out


def _joint_coords(g, ins, split):
    """Coordinate axes whose lengths only the shapes decide (``[h v w], p [n], p [m]``, ``n + m == 3`` checked): every
    coordinate input broadcast to the union of their other axes, its coordinate axis last (an unbracketed one gets
    one), concatenated there; the k-th coordinate is then ``[..., k]`` of that, for as many as the axes indexed."""
    union = []
    for _, axes in split:
        union += [a.name for a in axes if not a.marked and a.name not in union]
    parts = []
    for v, axes in split:
        names = [a.name for a in axes]
        marked = [a.name for a in axes if a.marked]
        v = g.align(v, names, union + marked, broadcast=True)
        parts.append(v if marked else g.emit(f"{v}[..., None]"))
    v = g.emit(g.ad.concat(parts, len(union)))
    return [(g.emit(f"{v}[..., {c}]"), union) for c in range(sum(a.marked for a in leaves(ins[0])))]
