"""torch.export helpers the engines share with the adapters: where an exported
dim starts, the sample to export from, and the size-oblivious retry after a
constraint violation."""

from __future__ import annotations

#: sizes 0 and 1 are specialised by torch.export (and by every system that
#: exports through it): an exported dynamic dim starts at 2
EXPORT_MIN = 2


def export_range(dim) -> tuple[int, int | None]:
    """``(min, max)`` of a case dim (``.min``, ``.max``) as exported: ``min`` at least
    :data:`EXPORT_MIN`, ``max`` its bound (``None``: unbounded). The one place that rule lives."""
    return max(EXPORT_MIN, dim.min), dim.max


def export_spec(dynamic_axes) -> list[dict[int, tuple[str, int, int | None]]]:
    """The one export spec: per input ``{axis: (dim name, least exported size, bound or None)}``
    of ``dynamic_axes`` (a case's ``dynamic_axes(mode)``: per input ``{axis: dim}``, each
    dim with ``name``, ``min`` and ``max``), by :func:`export_range`. Every system that
    exports a case (our StableHLO backends, the peers, torch.export itself) starts here."""
    return [{axis: (d.name, *export_range(d)) for axis, d in axes.items()} for axes in dynamic_axes]


def interval_text(lo: int, hi: int | None) -> str:
    """``"[2, 64]"``, ``"[2, inf]"``: an exported range in words (reports, refusals)."""
    return f"[{lo}, {hi if hi is not None else 'inf'}]"


def export_dim(name: str, least: int, bound: int | None):
    """A ``torch.export.Dim`` from ``least`` up to ``bound`` (``None``: unbounded)."""
    from torch.export import Dim

    return Dim(name, min=least, **({"max": bound} if bound is not None else {}))


def torch_dims(spec, namer=str) -> list[dict]:
    """``torch.export.Dim`` objects per input axis for an :func:`export_spec`: one ``Dim``
    per dim name (``namer(name)`` its name for torch), shared by every input that uses it."""
    made: dict = {}
    out = []
    for axes in spec:
        dims = {}
        for axis, (name, least, bound) in axes.items():
            if name not in made:
                made[name] = export_dim(namer(name), least, bound)
            dims[axis] = made[name]
        out.append(dims)
    return out


def export_sample(args, spec):
    """The arguments to export from: ``args`` (torch tensors) unless a dynamic dim is
    below the least size its Dim allows, then zeros of the same dtypes with every
    such size raised to that least size (within its bound).

    ``spec``: per argument ``{axis: (name, least, bound or None)}``, axes with one
    name sharing one size. torch.export specialises sizes 0 and 1 (and refuses a
    sample outside the Dim's range), so a sweep whose first shape has ``E = 0`` or
    ``B = 1`` would otherwise fix that size; the calls still run the real shapes.
    (torch.export traces fake tensors: the sample's values do not matter.)"""
    import torch

    size: dict = {}
    for a, axes in zip(args, spec, strict=False):
        for axis, (name, least, bound) in (axes or {}).items():
            n = max(int(a.shape[axis]), least)
            size[name] = n if bound is None else min(n, bound)
    if all(
        a.shape[axis] == size[name] for a, axes in zip(args, spec, strict=False) for axis, (name, _, _) in (axes or {}).items()
    ):
        return list(args)
    return [
        torch.zeros([size[axes[i][0]] if axes and i in axes else n for i, n in enumerate(a.shape)], dtype=a.dtype)
        for a, axes in zip(args, spec, strict=False)
    ]


def export_oblivious_retry(run):
    """``run(**options)`` (a torch.export call taking ``torch.export.export``'s
    keyword options); on a constraint violation, once more size-obliviously and
    with guards deferred to runtime asserts.

    torch.export guards a size computed from a Dim against 0 and 1 (``x[:, : t // 2]``
    guards ``t // 2 != 1``, which a Dim from 2 violates); ``backed_size_oblivious``
    drops those guards, and the lowered program computes the same values for
    every size. Guards it still cannot prove over the Dim's range
    (``split_with_sizes(x, [t // 2, t - t // 2])`` guards ``t - t // 2 >= 0``)
    become ``_assert_scalar`` nodes in the graph
    (``prefer_deferred_runtime_asserts_over_guards``), which the lowering checks at
    run time, instead of a refusal. A second violation raises. The retried program
    has ``size_oblivious = True`` (its decomposition must be size-oblivious too).

    The retry can also specialise silently: ``int()`` of a size (``int(math.ceil(n * 0.5))``)
    becomes a deferred assertion ``CeilToInt(0.5*ToFloat(s)) == 10`` that torch never
    places in the graph, leaving a program that slices 10 rows at every size. Such a
    program is refused (:class:`ExportSpecialized`, naming the assertion)."""
    import torch
    import torch.fx.experimental._config as fx_config

    try:
        return run()
    except torch._dynamo.exc.UserError:
        with fx_config.patch(backed_size_oblivious=True):
            ep = run(prefer_deferred_runtime_asserts_over_guards=True)
        ep.size_oblivious = True  # engines.stablehlo.lowering.lower decomposes it the same way
        _refuse_dropped_asserts(ep)
        return ep


class ExportSpecialized(ValueError):
    """torch.export fixed a dynamic size and dropped the assertion that says so."""


def _refuse_dropped_asserts(ep) -> None:
    """Raise :class:`ExportSpecialized` when a deferred runtime assertion of the
    export's shape environment is not an ``_assert_scalar`` of the graph and fixes a
    size to a constant (``Eq(expr, 10)``): the graph then holds for one size only."""
    import sympy
    import torch

    env = next(
        (v.fake_mode.shape_env for n in ep.graph.nodes if isinstance(v := n.meta.get("val"), torch._subclasses.FakeTensor)),
        None,
    )
    if env is None:
        return
    placed = set()
    for n in ep.graph.nodes:
        if n.target is torch.ops.aten._assert_scalar.default and isinstance(n.args[0], torch.fx.Node):
            val = n.args[0].meta.get("val")
            placed.add(getattr(getattr(val, "node", None), "expr", None))
    for ras in env.deferred_runtime_asserts.values():
        for ra in ras:
            e = ra.expr
            if e not in placed and isinstance(e, sympy.Eq) and _fails_somewhere(e, ep.range_constraints):
                raise ExportSpecialized(
                    f"torch.export specialised a dynamic size: the runtime assertion {e} is not in the graph, "
                    f"which then serves one size only (int() of a size specialises it; use torch.sym_int or math.floor)"
                )


def _fails_somewhere(e, ranges) -> bool:
    """``e`` is false for some value of its symbols in their export ranges (tried at
    each end and one step in); an assertion that cannot be evaluated counts as holding."""
    import sympy

    syms = sorted(e.free_symbols, key=str)
    if not syms or any(s not in ranges for s in syms):
        return False
    for pick in (0, 1, 2, 3):
        env = {}
        for s in syms:
            lo, hi = int(ranges[s].lower), ranges[s].upper
            hi = lo + 64 if not hi.is_finite else int(hi)
            env[s] = sympy.Integer((lo, hi, min(lo + 1, hi), max(hi - 1, lo))[pick])
        try:
            if e.xreplace(env) is sympy.false:
                return True
        except Exception:  # an expression sympy cannot evaluate here: not known to fail
            return False
    return False
