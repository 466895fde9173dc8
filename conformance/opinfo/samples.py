"""OpInfo samples with symbolic dims: each sample at two sizes, consistently.

A sample of ``op_db`` (``op.sample_inputs``) is flattened to its tensor leaves; a
*strategy* picks which dims are dynamic, grouping dims of equal size into one
size variable (``s0``, ``s1``, ...), and the second sample doubles every dynamic
dim by tiling the leaf along it. Tiling keeps values in the op's domain (``acosh``
stays >= 1) and indices in range (a doubled dim only grows); doubling keeps the
relations between sizes (a dim twice another, one divisible by a window). Where torch
leaves tied values' order unspecified (``sort``, ``argsort``, ``topk``, ``median``: ``TIE_FREE``),
the copies are shifted apart instead, so tiling makes no tie. A linear-algebra entry's doubled
matrix is shifted on its diagonal (``LINALG``): tiled, it would be singular.

Strategies, most demanding first; the first one torch eager accepts (the doubled
sample runs, deterministically, and its outputs keep their structure) is the sample's:

``every``      every dim of size >= 2 of every tensor leaf (a reduction's reduced dim,
               both matmul sides, an index tensor's length)
``dim0_tied``  dim 0 of every leaf, and every dim of the same size as one of them
``dim0``       dim 0 of every leaf
``first``      dim 0 of the first leaf

``size_args``  last, for samples no tensor strategy serves (``arange(10)``, ``ones(5, 5)``,
               ``broadcast_to(x, (5, 5))``): every int argument >= 2 becomes a size read
               from a *carrier* leaf of that length (``z.shape[0]``), so the op gets a
               symbolic size where it takes a Python int
Sizes 0 and 1 stay static (torch.export specialises them; so does broadcasting).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import torch
from torch.utils import _pytree as pytree

STRATEGIES = ("every", "dim0_tied", "dim0", "first", "size_args")
#: entries whose outputs are uninitialised memory (``torch.empty`` and kin): only shapes and dtypes compare
UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"})
GROWTH = 2  # the second size is this multiple of the first


@functools.cache
def op_db() -> list:
    """PyTorch's OpInfo database (``torch.testing._internal``; imports expecttest, ~20 s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db as db
    return list(db)


def entry_name(op) -> str:
    """``name`` or ``name.variant``: unique over ``op_db``."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def family(op) -> str:
    """The op family a table row is filed under: the OpInfo class for ufuncs, reductions,
    shape and spectral functions, else the namespace (``linalg``, ``special``, ``nn``)."""
    kind = type(op).__name__
    name = op.name
    for prefix, fam in (
        ("linalg.", "linalg"),
        ("fft.", "fft"),
        ("special.", "special"),
        ("sparse.", "sparse"),
        ("_refs.", "refs"),
        ("nn.functional.", "nn.functional"),
        ("masked.", "masked"),
        ("signal.", "signal"),
    ):
        if name.startswith(prefix):
            if fam == "nn.functional" and kind in ("UnaryUfuncInfo", "BinaryUfuncInfo"):
                return "elementwise (activation)"
            return fam
    return {
        "UnaryUfuncInfo": "unary elementwise",
        "BinaryUfuncInfo": "binary elementwise",
        "ReductionOpInfo": "reduction",
        "ShapeFuncInfo": "shape",
        "SpectralFuncInfo": "fft",
    }.get(kind, "other")


@dataclass
class DynSample:
    """One OpInfo sample at two sizes: ``leaves[k]`` are the sample's tensors at each
    size, ``dims[i]`` leaf i's dynamic axes (``{axis: variable}``), ``sizes`` each
    variable's two values. ``call(leaves)`` runs the op on a list of leaves."""

    entry: str
    index: int
    strategy: str
    leaves: tuple[list, list]
    dims: list[dict]
    sizes: dict[str, tuple[int, int]]
    treedef: object = field(repr=False)
    fn: object = field(repr=False)
    _flat: list = field(default_factory=list, repr=False)
    #: ``size_args``: flat position of an int argument -> index of its carrier leaf
    carried: dict = field(default_factory=dict, repr=False)
    #: :data:`UP_TO_SIGN` entries: the sample's map of an output to its defined part
    canonical: object = field(default=None, repr=False)

    def call(self, leaves):
        inp, args, kwargs = pytree.tree_unflatten(self._with(leaves), self.treedef)
        return self.fn(inp, *args, **kwargs)

    def _with(self, leaves):
        it = iter(leaves)
        flat = [next(it) if isinstance(x, torch.Tensor) else x for x in self._flat]
        for pos, k in self.carried.items():
            flat[pos] = leaves[k].shape[0]
        return flat

    def describe(self) -> str:
        shapes = ", ".join(
            "[" + ", ".join(d.get(i, str(n)) for i, n in enumerate(t.shape)) + "]"
            for t, d in zip(self.leaves[0], self.dims, strict=True)
        )
        vals = ", ".join(f"{v}={a}->{b}" for v, (a, b) in self.sizes.items())
        return f"{self.entry}#{self.index} ({self.strategy}): {shapes}; {vals}"


def _pick(tensors: list, strategy: str) -> dict[tuple[int, int], int]:
    """``{(leaf, axis): size}`` of the dims ``strategy`` makes dynamic."""
    picked: dict = {}
    if strategy == "every":
        for i, t in enumerate(tensors):
            for a, n in enumerate(t.shape):
                if n >= 2:
                    picked[i, a] = n
        return picked
    firsts = [(i, t) for i, t in enumerate(tensors) if t.ndim and t.shape[0] >= 2]
    if strategy == "first":
        firsts = firsts[:1]
    for i, t in firsts:
        picked[i, 0] = t.shape[0]
    if strategy == "dim0_tied":
        values = set(picked.values())
        for i, t in enumerate(tensors):
            for a, n in enumerate(t.shape):
                if n in values:
                    picked[i, a] = n
    return picked


#: entries whose result at tied values torch leaves unspecified: ``sort``/``argsort`` are unstable
#: unless asked (which of two equal elements comes first), and ``topk``, ``kthvalue``, ``median``
#: name any index of a tied value. Tiling gives every value a twin, so two correct
#: implementations may differ there; these entries' doubled samples are tiled apart (:func:`_tile`).
#: (Ops that define their ties -- ``argmax`` the first, ``cummax`` the last -- keep the twins: they test it.)
TIE_FREE = frozenset({"sort", "argsort", "topk", "kthvalue", "median", "nanmedian"})


def _tile(t: torch.Tensor, axes, apart: bool = False) -> torch.Tensor:
    """``t`` tiled ``GROWTH`` times along each of ``axes``. ``apart``: copy ``k`` shifted by ``k``
    times (the span of the finite values + 1), so every copy's values lie above the last's and
    tiling makes no tie (order is all these ops read: no domain to leave); bool as it is."""
    for a in axes:
        if apart and t.dtype != torch.bool and t.numel():
            finite = t[torch.isfinite(t)] if t.is_floating_point() else t
            step = (finite.max() - finite.min() + 1) if finite.numel() else 0
            t = torch.cat([t + k * step for k in range(GROWTH)], dim=a)
        else:
            t = torch.cat([t] * GROWTH, dim=a)
    return t


#: entries of linear algebra, whose results past a singular matrix's rank are rounding noise that
#: two correct LAPACKs compute differently (LU's trailing rows, an inverse, a condition number, the
#: singular vectors of a repeated singular value). Tiling makes every doubled matrix singular
#: (``[[A, A], [A, A]]``), so these entries' doubled matrices are shifted on their diagonal (:func:`_well_posed`).
#: entries whose outputs torch defines only up to sign (eigen- and singular vectors): two correct
#: LAPACKs (torch's MKL, jaxlib's) pick other signs. Their samples name the part that is defined
#: (OpInfo's ``output_process_fn_grad``: ``abs`` of the vectors, ``U @ Vh``), which is compared.
UP_TO_SIGN = frozenset({"linalg.eigh", "linalg.svd", "svd"})

LINALG = frozenset({"cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "lu", "lu_solve"})
LINALG |= frozenset({"lu_unpack", "ormqr", "pinverse", "qr", "svd", "triangular_solve", "geqrf"})


def well_posed(entry: str) -> bool:
    """Whether ``entry``'s doubled matrices are shifted apart from singular (:data:`LINALG`, ``linalg.*``)."""
    return entry.startswith("linalg.") or entry.split(".")[0] in LINALG


def _well_posed(t: torch.Tensor, axes) -> torch.Tensor:
    """A tiled matrix (a float leaf with a tiled axis among its last two) plus ``c * (1 + i/n)`` on
    its ``i``-th diagonal entry, ``c`` one more than its largest absolute row sum: strictly
    diagonally dominant (nonsingular) with diagonal entries apart, and as triangular,
    symmetric or positive definite as it was."""
    if t.ndim < 2 or not t.is_floating_point() or not t.numel() or not {t.ndim - 2, t.ndim - 1} & set(axes):
        return t
    n = min(t.shape[-2:])
    c = t.abs().sum(-1).max() + 1
    shift = c * (1 + torch.arange(n, dtype=t.dtype) / n)
    out = t.clone()
    out.diagonal(dim1=-2, dim2=-1).add_(shift)
    return out


def _structure(out) -> list:
    leaves, spec = pytree.tree_flatten(out)
    return [str(spec)] + [(x.ndim, x.dtype) if isinstance(x, torch.Tensor) else type(x).__name__ for x in leaves]


def _same(a, b) -> bool:
    """Two eager results are equal (NaN equal to NaN): the sample is deterministic."""
    for x, y in zip(pytree.tree_leaves(a), pytree.tree_leaves(b), strict=True):
        if isinstance(x, torch.Tensor):
            if not (x.shape == y.shape and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))):
                return False
        elif x != y and x == x:
            return False
    return True


def run_eager(fn, leaves):
    """``fn(leaves)`` on fresh copies of the leaves (ops may write their inputs), seeded."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn([t.clone() for t in leaves])


def dynamic(op, index: int, sample) -> DynSample | None:
    """``sample`` with symbolic dims and its doubled twin (the first strategy eager
    accepts), or None when no strategy gives one (every dim 0 or 1, sizes fixed by
    non-tensor arguments, eager fails)."""
    flat, treedef = pytree.tree_flatten((sample.input, list(sample.args), dict(sample.kwargs)))
    tensors = [x for x in flat if isinstance(x, torch.Tensor)]
    if any(t.is_sparse or t.layout != torch.strided or t.is_complex() for t in tensors):
        return None
    base = DynSample(entry_name(op), index, "", ([], []), [], {}, treedef, op, flat)
    if base.entry in UP_TO_SIGN:
        base.canonical = sample.output_process_fn_grad
    try:
        want = _structure(run_eager(base.call, tensors))
    except Exception:
        return None
    tried = set()
    for strategy in STRATEGIES:
        picked = _pick(tensors, strategy)
        key = tuple(sorted(picked))
        if not picked or key in tried:
            continue
        tried.add(key)
        names = {n: f"s{k}" for k, n in enumerate(sorted(set(picked.values())))}
        dims = [{a: names[n] for (j, a), n in picked.items() if j == i} for i in range(len(tensors))]
        apart = base.entry.split(".")[0] in TIE_FREE
        grown = [_tile(t, sorted(d), apart) for t, d in zip(tensors, dims, strict=True)]
        if well_posed(base.entry):
            grown = [_well_posed(t, d) for t, d in zip(grown, dims, strict=True)]
        try:
            out = run_eager(base.call, grown)
            if _structure(out) != want:
                continue
            if base.entry.split(".")[0] not in UNINITIALISED and not _same(out, run_eager(base.call, grown)):
                continue  # (tiling broke a precondition -- embedding_bag's increasing offsets -- and eager reads garbage)
        except Exception:
            continue
        sizes = {v: (n, n * GROWTH) for n, v in names.items()}
        return DynSample(
            base.entry, index, strategy, (list(tensors), grown), dims, sizes, treedef, op, flat, canonical=base.canonical
        )
    return _size_args(base, tensors, want)


def _size_args(base: DynSample, tensors: list, want) -> DynSample | None:
    """The ``size_args`` strategy: each int argument >= 2 read from a carrier leaf (one per value)."""
    ints = {pos: x for pos, x in enumerate(base._flat) if type(x) is int and x >= 2}
    if not ints:
        return None
    values = sorted(set(ints.values()))
    carriers = [torch.zeros(n) for n in values]
    base.carried = {pos: len(tensors) + values.index(x) for pos, x in ints.items()}
    leaves = list(tensors) + carriers
    grown = list(tensors) + [torch.zeros(n * GROWTH) for n in values]
    try:
        if _structure(run_eager(base.call, leaves)) != want or _structure(run_eager(base.call, grown)) != want:
            return None
    except Exception:
        return None
    dims = [{} for _ in tensors] + [{0: f"s{k}"} for k in range(len(values))]
    sizes = {f"s{k}": (n, n * GROWTH) for k, n in enumerate(values)}
    base.strategy, base.leaves, base.dims, base.sizes = "size_args", (leaves, grown), dims, sizes
    return base


def samples(op, dtype=torch.float32, limit: int | None = 3) -> list[DynSample]:
    """The first ``limit`` samples of ``op`` at ``dtype`` that have symbolic dims."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = op.sample_inputs("cpu", dtype, requires_grad=False)
        for i, s in enumerate(gen):
            d = dynamic(op, i, s)
            if d is not None:
                out.append(d)
                if limit is not None and len(out) >= limit:
                    break
    return out
