"""Generate the Python source of one graph (per signature) from solved expressions.

The emitter and the templates of the shape-preserving families are here; the
index families (``arg*``, ``get_at``, ``*_at``) are :mod:`.codegen_index`.

All sizes in the generated code are expressions over ``d{i}_{j}`` (the input
dims, unpacked from ``t{i}.shape`` at the top) and ``p_*`` (constraints): no
concrete size is ever baked in.
"""

import math

from engines import sizes as sz

from .errors import SemanticError
from .expand import leaves
from .tree import Axis, Concat, Flat

SCALAR_OP_REDUCE = {"sum", "mean", "var", "std", "prod", "any", "all", "max", "min"}


class Gen:
    def __init__(self, desc, ad, sizes):
        self.desc, self.ad, self.sizes = desc, ad, sizes
        self.lines, self.n = [], 0
        self.rearrange = False  # ``id``: dropping every axis of a NumPy array leaves a 0-d array, not a scalar

    # -- helpers -------------------------------------------------------------
    def fresh(self):
        self.n += 1
        return f"v{self.n}"

    def emit(self, code, inline=False):
        """Bind ``code`` to a fresh variable; ``inline=True``: return ``code`` itself, for a
        postfix expression (call/attribute/subscript) that is used exactly once, right where
        it would have been read (same evaluation order)."""
        if inline:
            return code
        v = self.fresh()
        self.lines.append(f"{v} = {code}")
        return v

    def size(self, d):
        if isinstance(d, str):
            return self.sizes[d]
        if isinstance(d, Axis):
            return sz.const(d.value) if d.value is not None else self.sizes[d.name]
        if isinstance(d, Flat):
            return math.prod((self.size(c) for c in d.inner.children), start=sz.const(1))
        if isinstance(d, Concat):
            return sum((self.size(c) for c in d.children), start=sz.const(0))
        raise AssertionError(d)

    def scode(self, d, atomic=False):
        """Source of the size of ``d``; ``atomic``: safe as an operand of any operator."""
        return sz.source(self.size(d), atomic=atomic)

    # -- layout ------------------------------------------------------------------
    def decompose(self, v, dims, allow_diag=True):
        """Reshape/split/diagonal ``v`` into pieces with plain, distinct axes: [(var, [Axis])]."""
        flat = []
        for d in dims:
            flat.extend(_unflatten(d))
        if any(isinstance(d, Flat) for d in dims):
            v = self.emit(self.ad.reshape(v, [self.scode(d) for d in flat]))
        for j, d in enumerate(flat):
            if isinstance(d, Concat):
                parts = [self.fresh() for _ in d.children]
                self.lines.append(
                    f"{', '.join(parts)}{',' if len(parts) == 1 else ''} = "
                    f"{self.ad.split(v, [self.scode(c) for c in d.children], j)}"
                )
                return [
                    p
                    for part, c in zip(parts, d.children, strict=False)
                    for p in self.decompose(part, flat[:j] + [c] + flat[j + 1 :], allow_diag)
                ]
        axes = list(flat)
        while True:
            # a name repeated in brackets is separate axes of one size (einx); unmarked, a diagonal
            names = [a.name for a in axes]
            dup = [
                (i, names.index(n, i + 1))
                for i, n in enumerate(names)
                if n in names[i + 1 :] and not (axes[i].marked and axes[names.index(n, i + 1)].marked)
            ]
            if not dup:
                break
            if not allow_diag:
                raise SemanticError(self.desc, "Axis names may not be repeated in this expression.\n%EXPR%")
            i, j = dup[0]
            v = self.emit(self.ad.diagonal(v, i, j))
            axes = [a for k, a in enumerate(axes) if k not in (i, j)] + [axes[i]]
        return [(v, axes)]

    def align(self, v, names_in, names_out, broadcast, inline=False):
        """Drop (size-1) axes not in ``names_out``, permute, insert new axes (the steps of
        :func:`layout`), optionally broadcast.

        ``inline``: the result is used once, as an operand; without broadcasting it is
        returned as one postfix expression instead of being bound to variables."""
        inline = inline and not broadcast
        for kind, a in layout(names_in, names_out, hasattr(self.ad, "unsqueeze")):
            if kind == "perm":
                v = self.emit(self.ad.transpose(v, a), inline)
            elif kind == "unsqueeze":
                v = self.emit(self.ad.unsqueeze(v, a), inline)
            elif kind == "take" and ":" not in a and self.ad.name == "numpy" and self.rearrange:  # a 0-d array (einx reshapes)
                v = self.emit(self.ad.reshape(v, []), inline)
            else:  # "take" or "index"
                v = self.emit(f"{v}[{', '.join(_INDEX_TEXT.get(i, str(i)) for i in a)}]", inline)
        if broadcast and any(n not in names_in for n in names_out):
            v = self.emit(self.ad.broadcast_to(v, [self.scode(n) for n in names_out]))
        return v

    def compose(self, v, out_dims):
        if any(not isinstance(d, Axis) for d in out_dims):
            v = self.emit(self.ad.reshape(v, [self.scode(d) for d in out_dims]))
        return v

    def single(self, v, e, allow_diag=True):
        pieces = self.decompose(v, e.children, allow_diag)
        assert len(pieces) == 1
        return pieces[0]


_INDEX_TEXT = {None: "None", ":": ":"}


def layout(names_in, names_out, unsqueeze, distinct=False):
    """The steps that bring axes ``names_in`` into the order of ``names_out``, before any broadcast
    (``Gen.align`` writes them as source, ``closure.py`` applies them):

    ``("take", idx)`` drops the axes not in ``names_out`` (indexing them at 0; they have size 1),
    ``("perm", perm)`` permutes, ``("unsqueeze", k)`` inserts an axis at ``k`` (``unsqueeze``: the
    library has it; used for at most two new axes), ``("index", idx)`` inserts the new axes by indexing
    with ``None``. An ``idx`` holds ``0``, ``":"`` or ``None`` per position (``":"``: every element).
    ``distinct``: the caller knows that no name repeats within ``names_in`` or ``names_out``.
    """
    steps = []
    if not distinct and (len(set(names_in)) != len(names_in) or len(set(names_out)) != len(names_out)):
        names_in, names_out = _nth(names_in), _nth(names_out)  # a repeated name: its k-th occurrences correspond
    dropped = False  # (a loop, not set algebra: a graph's first call pays for every line run here)
    for n in names_in:
        if n not in names_out:
            dropped = True
            break
    if dropped:
        steps.append(("take", tuple(":" if n in names_out else 0 for n in names_in)))
        names_in = [n for n in names_in if n in names_out]
    perm, new = [], []  # where each kept axis comes from; the positions of the new axes
    for k, n in enumerate(names_out):
        if n in names_in:
            perm.append(names_in.index(n))
        else:
            new.append(k)
    if perm != list(range(len(perm))):
        steps.append(("perm", tuple(perm)))
    if new:
        if unsqueeze and len(new) <= 2:
            for k in new:
                steps.append(("unsqueeze", k))
        else:
            idx = [":" if n in names_in else None for n in names_out]
            while idx and idx[-1] == ":":
                idx.pop()
            steps.append(("index", tuple(idx)))
    return steps


def _nth(names):
    """``names`` with each repetition of a name told apart: ``[a, b, b] -> [(a, 0), (b, 0), (b, 1)]``."""
    seen = {}
    out = []
    for n in names:
        out.append((n, seen.get(n, 0)))
        seen[n] = seen.get(n, 0) + 1
    return out


FOLDS = ("add", "multiply", "logaddexp", "logical_and", "logical_or", "maximum", "minimum")


def combine(ad, op, nargs, scalar_first=False):
    """How the elementwise ``op`` combines its ``nargs`` arguments: ``("operator", sym)``
    folds them with a Python operator (torch's ``+ - * /``: the same aten ops, when the
    left operand is a tensor), ``("fold", op)`` folds the library's binary op over them
    (einx folds these; one argument is returned as is), ``("call", op)`` calls it once."""
    sym = getattr(ad, "binop", {}).get(op)
    if sym is not None and nargs >= 2 and not scalar_first and (nargs == 2 or op in ("add", "multiply")):
        return "operator", sym
    return ("fold" if op in FOLDS else "call"), op


def _unflatten(d):
    if isinstance(d, Flat):
        return [x for c in d.inner.children for x in _unflatten(c)]
    return [d]


def names_of(axes):
    return [a.name for a in axes]


# ---------------------------------------------------------------------------
def gen_id(g, ins, outs, scalars=()):
    pieces = []
    for i, e in enumerate(ins):
        pieces.extend(g.decompose(f"t{i}", e.children))
    g.scalar_vars = {f"t{i}" for i in scalars}
    g.rearrange = True
    out_pieces = [p for e in outs for p in _concat_pieces(e.children)]
    if len(pieces) != len(out_pieces):
        raise SemanticError(
            g.desc,
            "The number of input and output expressions (after decomposition of axis concatenations) must be the same, "
            f"but got {len(pieces)} input(s) and {len(out_pieces)} output(s).\n%EXPR%",
        )
    it = iter(pieces)
    results = []
    for e in outs:
        results.append(_assemble(g, e.children, it))
    return results


def _concat_pieces(dims):
    for j, d in enumerate(dims):
        if isinstance(d, Concat):
            return [p for c in d.children for p in _concat_pieces(dims[:j] + [c] + dims[j + 1 :])]
        if isinstance(d, Flat) and any(isinstance(x, Concat) for x in _unflatten(d)):
            return _concat_pieces(dims[:j] + _unflatten(d) + dims[j + 1 :])
    return [dims]


def _assemble(g, dims, it):
    for j, d in enumerate(dims):
        if isinstance(d, Concat):
            parts = [_assemble(g, dims[:j] + [c] + dims[j + 1 :], it) for c in d.children]
            return g.emit(g.ad.concat(parts, j))
        if isinstance(d, Flat) and any(isinstance(x, Concat) for x in _unflatten(d)):
            # a concatenation inside a composition (``a ((b + c) d)``): concatenated with the composition unflattened
            # (``a (b + c) d``), then composed; the pieces in the same order (``_concat_pieces``)
            return g.compose(_assemble(g, dims[:j] + _unflatten(d) + dims[j + 1 :], it), dims)
    v, axes = next(it)
    if dims and v in getattr(g, "scalar_vars", ()):  # a Python scalar is returned as is, unless an operation applies to it
        v = g.emit(g.ad.to_array(v))
    out_names = names_of(leaves(dims))
    v = g.align(v, names_of(axes), out_names, broadcast=True)
    return g.compose(v, dims)


def gen_elementwise(g, op, ins, outs, scalars):
    out = outs[0]
    out_names = names_of(leaves(out))
    args, present = [], set()
    for i, e in enumerate(ins):
        if i in scalars:
            args.append(f"t{i}")
            continue
        v, axes = g.single(f"t{i}", e)
        present |= set(names_of(axes))
        args.append(g.align(v, names_of(axes), out_names, broadcast=False, inline=True))
    ad = g.ad
    if ad.name == "numpy" and scalars and len(scalars) < len(ins):
        # einx drops axes of size 1: where every axis of the array operands has size 1 the scalar is passed as is (a weak
        # operand: float32 stays float32), else as an array (NumPy promotes float32 to float64); decided at run time
        ones = " and ".join(f"{g.scode(n, atomic=True)} == 1" for n in out_names if n in present)
        if ones:
            args = [f"({a} if {ones} else {ad.to_array(a)})" if i in scalars else a for i, a in enumerate(args)]
    elif op not in ad.scalar_ok:  # libraries that need arrays here
        args = [
            ad.to_array(a)
            if i in scalars
            and (
                i == 0
                or op not in ("where", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
                or ad.name != "torch"
            )
            else a
            for i, a in enumerate(args)
        ]
    elif len(scalars) == len(ins):
        args[0] = ad.to_array(args[0])
    if ad.name == "torch" and scalars and len(scalars) < len(ins):
        # the same rule on torch: unless every axis has size 1, einx passes the scalar as a tensor of shape (1,), which
        # takes part in type promotion (an int with an int32 tensor gives int64, a float with float16 gives float32);
        # one converted anyway (``maximum``) promotes so too (einx: 0-d with the squeezed 0-d array)
        ones = " and ".join(f"{g.scode(n, atomic=True)} == 1" for n in out_names if n in present)
        ref = next(i for i in range(len(ins)) if i not in scalars)
        if ones:
            strong = [f"torch.asarray(t{i}, device=t{ref}.device).reshape(1)" for i in range(len(ins))]
            args = [
                a if i not in scalars else strong[i] if a != f"t{i}" else f"({a} if {ones} else {strong[i]})"
                for i, a in enumerate(args)
            ]
    kind, f = combine(ad, op, len(args), 0 in scalars)
    if kind == "call":
        v = g.emit(ad.call(op, args))
    else:
        v = args[0]
        for a in args[1:]:
            v = g.emit(f"{v} {f} {a}" if kind == "operator" else ad.call(op, [v, a]))
    if any(n not in present for n in out_names):
        v = g.emit(ad.broadcast_to(v, [g.scode(n) for n in out_names]))
    return [g.compose(v, out.children)]


def gen_reduce(g, op, ins, outs):
    v, axes = g.single("t0", ins[0])
    marked = [k for k, a in enumerate(axes) if a.marked]
    if marked:
        if op == "prod" and g.ad.name == "torch" and len(marked) > 1 and len(marked) != len(axes):
            # einx's torch.prod takes one axis or all; raised by the graph, after its size checks (a size error wins)
            g.lines.append(
                'raise _OpValueError("This backend uses torch.prod which allows reduction only over (1) all axes or (2) a single axis.")'
            )
            return ["None"]
        if op == "logsumexp" and g.ad.name == "numpy":
            v = _logsumexp(g, v, marked, len(axes))
        else:
            v = g.emit(g.ad.call(op, [v], axes=marked))
    elif g.ad.name != "torch" and op != "logsumexp":  # einx calls the op with axis=() (var, std: zeros; any, all: bools)
        v = g.emit(g.ad.call(op, [v], axes=[]))
    elif op not in SCALAR_OP_REDUCE:  # raised by the graph, after its size checks (a size error wins, as in einx)
        msg = f"{op} without any reduced axis.\n%EXPR%"
        g.lines.append(f"raise _NotSupportedError({g.desc!r}, {msg!r})")
        return ["None"]
    rest = [a.name for a in axes if not a.marked]
    out = outs[0]
    v = g.align(v, rest, names_of(leaves(out)), broadcast=True)
    return [g.compose(v, out.children)]


def _logsumexp(g, v, axes, ndim):
    ad = g.ad
    m = g.emit(ad.call("detach", [g.emit(ad.call("keepmax", [v], axes=axes))]))
    keep = [i for i in range(ndim) if i not in axes]
    idx = ", ".join("0" if i in axes else ":" for i in range(ndim))
    s = g.emit(ad.call("sum", [g.emit(ad.call("exp", [g.emit(ad.call("subtract", [v, m]))]))], axes=axes))
    return g.emit(ad.call("add", [g.emit(ad.call("log", [s])), f"{m}[{idx}]" if keep or ndim else m]))


def gen_dot(g, ins, outs):
    letters, specs, args, present = {}, [], [], []
    for i, e in enumerate(ins):
        v, axes = g.single(f"t{i}", e)
        for a in axes:
            letters.setdefault(a.name, chr(ord("a") + len(letters)) if len(letters) < 26 else chr(ord("A") + len(letters) - 26))
        specs.append("".join(letters[a.name] for a in axes))
        args.append(v)
        present.extend(a.name for a in axes)
    out = outs[0]
    out_names = names_of(leaves(out))
    kept = [n for n in out_names if n in present]
    v = g.emit(g.ad.einsum(",".join(specs) + "->" + "".join(letters[n] for n in kept), args))
    v = g.align(v, kept, out_names, broadcast=True)
    return [g.compose(v, out.children)]


def gen_preserve(g, op, ins, outs, shift):
    ad = g.ad
    v, axes = g.single("t0", ins[0])
    marked = [k for k, a in enumerate(axes) if a.marked]
    if op in ("softmax", "log_softmax"):
        if not marked and ad.name == "torch":
            pass  # einx: the input as is; numpy/jax: over axis=() (ones, zeros) as einx
        elif ad.name == "jax" or (ad.name == "torch" and len(marked) == 1):
            v = g.emit(ad.call(op + ("1" if ad.name == "torch" else ""), [v], axes=marked))
        else:
            m = g.emit(ad.call("detach", [g.emit(ad.call("keepmax", [v], axes=marked))]))
            if op == "softmax":
                ex = g.emit(ad.call("exp", [g.emit(ad.call("subtract", [v, m]))]))
                v = g.emit(ad.call("divide", [ex, g.emit(ad.call("keepsum", [ex], axes=marked))]))
            else:
                x = g.emit(ad.call("subtract", [v, m]))
                lse = g.emit(
                    ad.call(
                        "add",
                        [g.emit(ad.call("log", [g.emit(ad.call("keepsum", [g.emit(ad.call("exp", [x]))], axes=marked))])), m],
                    )
                )
                v = g.emit(ad.call("subtract", [v, lse]))
    elif op in ("sort", "argsort"):
        v = g.emit(ad.call(op, [v], axes=marked))
        if ad.name == "torch" and op == "sort":
            v = g.emit(f"{v}[0]")
    elif op == "flip":
        v = g.emit(ad.call(op, [v], axes=marked))
    elif op == "roll":
        sh = tuple(shift) if isinstance(shift, (tuple, list)) else (shift,)
        if len(sh) != len(marked):
            if len(sh) == 1:
                sh = sh * len(marked)
            else:  # raised by the graph, after its size checks (a size error wins, as in einx)
                g.lines.append(
                    f"raise _OpValueError(\"When 'shift' has length != 1, it must have the same length as 'axis'. "
                    f'Got lengths {len(sh)} and {len(marked)}.")'
                )
                return ["None"]
        v = g.emit(ad.roll(v, sh, marked))
    out = outs[0]
    v = g.align(v, names_of(axes), names_of(leaves(out)), broadcast=True)
    return [g.compose(v, out.children)]
