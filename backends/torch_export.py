"""torch.export: static = one export per shape; unbounded/bounded = one
export with ``torch.export.Dim`` (``Dim(max=)`` when bounded), run through
``ep.module()``; bucketed = the static export per bucket of inputs padded on
the host (``backends.padding``). An input outside the exported range raises torch's own
guard error, naming the input and the bound.

Where torch.export refuses the declared range and suggests a narrower one or a relation,
the export is retried once with its fix (:class:`Narrowing`); the job's records carry
the range it ran under (``narrowed``) and a size outside it is ``out_of_range``. A
refusal keeps torch.export's message whole, its parts parsed
(:mod:`engines.torch_export_diagnosis`).

Counts: the backend counts its own calls of :func:`export` (one
``torch.export.export`` each), timed, with the reason: the new input shapes
(static: the program cache is keyed by them) or the dynamic dims the one
export covers. :func:`export` itself counts nothing, so other backends
(``backends.stablehlo_base``) can call it without moving this backend's count."""

from __future__ import annotations

from typing import Any

from engines.torch_export_tools import export_oblivious_retry, export_sample

from .base import (
    MODEL_COST,
    Backend,
    Counter,
    LeftOut,
    OutsideNarrowed,
    Program,
    TorchArrays,
    Unsupported,
    describe_range,
    export_range,
    interval_text,
    torch_dims,
)
from .padding import host_padding

STAGE = "export"


class NarrowedExport:
    """Program mixin: the one export's narrowed retry (:class:`Narrowing`, ``narrowing``:
    ``None`` in static mode) -- the record's ``narrowed`` and a size outside the narrowed
    range refused as ``out_of_range``, naming torch.export's reason. The torch_export peer
    and our lowering paths export alike, so they carry the same architectures."""

    case: Any
    mode: str
    narrowing: Narrowing | None

    def narrowed(self) -> dict | None:
        n = self.narrowing
        if n is None or not n.ran:
            return None
        # the case's declared range is the question (the Dim's started at EXPORT_MIN), the narrowed one the answer
        declared = {d.name: [d.min, d.max] for axes in self.case.dynamic_axes(self.mode) for d in axes.values()}
        return {**n.record(), "declared": declared}

    def _check_narrowed(self, args) -> None:
        """Refuse a size outside the narrowed range as such (``out_of_range``), naming torch.export's reason."""
        n = self.narrowing
        if n is None or not n.ran:
            return
        sizes = {
            d.name: int(a.shape[ax])
            for a, axes in zip(args, self.case.dynamic_axes(self.mode), strict=False)
            for ax, d in axes.items()
        }
        out = n.outside(sizes)
        if out is not None:
            raise OutsideNarrowed(
                f"{self.case.name}: {out}, the range torch.export narrowed the export to ({n.record()['why']})",
                diagnosis=n.diagnosis,
            )


class ExportProgram(NarrowedExport, TorchArrays, Program):
    """``ep.module()`` of one export (Dim ranges), or of one per input shapes (static)."""

    def __init__(self, backend, case, mode):
        self.fn = case.torch_fn()
        self.dynamic = None if mode == "static" else tuple(torch_dims(case, mode))
        #: the exported modules, by input shapes (static) or ``None`` (one for every shape)
        self.modules: dict = {}
        ranges = {d.name: describe_range(d) for axes in case.dynamic_axes(mode) for d in axes.values()}
        self.why = f"first call: one export with dynamic dims {', '.join(ranges.values())}"
        #: the narrowed retry (Dim ranges): what the export ran under where torch.export narrowed it
        self.narrowing = Narrowing() if mode != "static" else None
        #: torch.export's refusal of the one export (Dim ranges), raised again for every later shape
        self.refused: Unsupported | None = None
        super().__init__(backend, case, mode)

    def run(self, *args):
        from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

        case, mode = self.case, self.mode
        key = tuple(tuple(a.shape) for a in args) if mode == "static" else None
        mod = self.modules.get(key)
        if self.refused is not None:  # the one export (Dim ranges) was refused: so is every shape
            r = self.refused
            raise Unsupported(str(r), stage=STAGE, diagnosis=r.diagnosis)
        try:
            if mod is None:
                with self.counting(STAGE, f"new input shapes {key}" if mode == "static" else self.why):
                    try:
                        ep = export(self.fn, args, self.dynamic, case.name, narrow=self.narrowing)
                    except Unsupported as e:
                        if mode != "static":
                            self.refused = e
                        raise
                    mod = self.modules[key] = ep.module()
            self._check_narrowed(args)
            return mod(*args)
        except (AssertionError, ConstraintViolationError, ExportError) as e:  # ep.module()'s guards; export out of range
            raise _range_error(case, mode, args, e) from e


@host_padding("bucketed")
class TorchExport(Backend):
    name = "torch_export"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)
    warmup = ("torch._dynamo", "torch.export._trace")
    counters = {STAGE: Counter("instrumented", "torch.export.export calls")}
    compile_scope = (
        "torch.export.export per new shape (static, bucketed) or once (Dim ranges): dynamo trace + AOT export to "
        "an ExportedProgram; running ep.module() compiles nothing"
    )
    quick_leaves_out = (LeftOut("model_*", "*", MODEL_COST),)

    def startup(self):
        # what the first export would otherwise import (~1 s: dynamo, sympy, ...)
        import torch
        import torch._dynamo
        import torch.export
        import torch.export._trace  # noqa: F401

    def prepare(self, case, mode):
        return ExportProgram(self, case, mode)


class ExportError(RuntimeError):
    """torch.export itself failed on a case (not a constraint violation): a crash
    inside its symbolic-shape reasoning, say. Its stage is ``export``
    (:func:`backends.base.failed_stage`): the zoo table counts the job as stopped
    at capture, not at run time, even inside a lowering's stage."""

    def __init__(self, message: str, stage: str = STAGE):
        super().__init__(message)
        self.dynshape_stage = stage


class OutOfRange(ValueError):
    """An input size outside the range the program was exported for."""


def _range_error(case, mode, args, err: Exception) -> Exception:
    """Name the input, dim, size and exported range behind a guard failure."""
    for inp, arg, axes in zip(case.inputs, args, case.dynamic_axes(mode), strict=False):
        for axis, dim in axes.items():
            size = arg.shape[axis]
            lo, hi = export_range(dim)
            if size < lo or (hi is not None and size > hi):
                return OutOfRange(
                    f"{case.name}: input {inp.name!r} dim {dim.name!r} (axis {axis}) is {size}, outside the "
                    f"exported range {interval_text(lo, hi)} (torch: {err})"
                )
    return err


def export(fn, args, dynamic_shapes, case_name: str = "?", oblivious_retry: bool = False, narrow: Narrowing | None = None):
    """``torch.export.export`` of a plain function (counts nothing: the caller
    does, e.g. :class:`TorchExport` inside ``counting("export")``).

    ``oblivious_retry`` (our lowering paths, not the torch_export peer): after a
    constraint violation, export once more size-obliviously (see
    :func:`export_oblivious_retry`). ``narrow`` (the torch_export peer): after a
    constraint violation whose suggested fixes narrow a range or relate dims, export
    once more with them (``refine_dynamic_shapes_from_suggested_fixes``) from a sample
    inside the narrowed range; ``narrow`` records what it ran under. A refusal
    carries torch.export's message whole and its parsed :mod:`diagnosis
    <engines.torch_export_diagnosis>`."""
    import torch

    from engines.torch_export_diagnosis import parse

    class Program(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    def run(dims=dynamic_shapes, sample=args, **options):
        # forward(*xs) takes one varargs parameter: its specs nest in a 1-tuple
        shapes = None if dims is None else (tuple(dims),)
        return torch.export.export(Program(), tuple(sample), dynamic_shapes=shapes, strict=False, **options)

    try:
        return export_oblivious_retry(run) if oblivious_retry else run()
    except torch._dynamo.exc.UserError as e:  # constraint violations: the dim is not dynamic as declared
        found = parse(str(e))
        if narrow is not None and found is not None and found.narrowable:
            return narrow.retry(run, found, args, dynamic_shapes, case_name, e)
        raise refusal(case_name, e, found) from e
    except Exception as e:  # any other failure of the capture is torch.export's (not re-caught: the Unsupported above)
        raise ExportError(f"torch.export failed on {case_name}: {type(e).__name__}: {e}", stage=STAGE) from e


def refusal(case_name: str, e: Exception, found, retry: Exception | None = None) -> Unsupported:
    """torch.export's refusal to keep ``case_name``'s dims dynamic: its message whole, the
    diagnosis parsed, and why the narrowed retry failed where one was tried."""
    tried = f"\nThe narrowed retry failed too: {type(retry).__name__}: {retry}" if retry is not None else ""
    return Unsupported(
        f"torch.export could not keep {case_name}'s dims dynamic: {e}{tried}",
        stage=STAGE,
        diagnosis=found.as_record() if found is not None else None,
    )


class Narrowing:
    """The narrowed retry of one export and what it ran under (``ran``: per dim
    ``[lo, hi]``, ``hi`` ``None`` when unbounded; ``why``: torch.export's diagnosis)."""

    def __init__(self) -> None:
        self.declared: dict[str, list] = {}
        self.ran: dict[str, list] = {}
        self.relations: dict[str, str] = {}
        self.diagnosis: dict | None = None
        self.dims: dict = {}
        self.oblivious = False

    def retry(self, run, found, args, dims, case_name: str, refused: Exception):
        """Export once more under ``found``'s fixes; where that fails too (torch cannot apply
        its own fix: a relation such as ``t = 2*_t + 1`` read off the sample's parity has
        no valid range), the first refusal raises, saying so."""
        from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

        try:
            # the whole message fails refine_...: it splits every line after "Suggested fixes:"
            refined = refine_dynamic_shapes_from_suggested_fixes(found.fixes_text, (tuple(dims),))[0]
            ep = self._export(run, refined, args, dims)
        except Exception as e:
            self.ran, self.dims, self.relations = {}, {}, {}
            raise refusal(case_name, refused, found, e) from e
        self.diagnosis = found.as_record()
        return ep

    def _export(self, run, refined, args, dims):
        self.declared = _ranges(dims)
        # by the case's dim names: a relation's derived dim is named by its expression ("2*_t")
        names = {getattr(d, "__name__", ""): d for spec in dims for d in (spec or {}).values()}
        self.dims = {}
        for spec, new in zip(dims, refined, strict=False):
            for ax, d in (spec or {}).items():
                if not isinstance(new[ax], int):
                    self.dims[d.__name__] = new[ax]
        self.ran = {name: list(_bounds(d)) for name, d in self.dims.items() if name in names}
        self.relations = {name: str(d.__name__) for name, d in self.dims.items() if hasattr(d, "root")}
        spec = [{ax: (name, lo, hi) for ax, (name, lo, hi) in _axes(a).items()} for a in refined]
        sample = export_sample(list(args), spec)
        # a range torch.export suggested can still break a 0/1 guard it did not suggest
        # ((p // 4) != 1 for a stride-4 conv from p = 4): then once more size-obliviously
        ep = export_oblivious_retry(lambda **options: run(dims=refined, sample=sample, **options))
        self.oblivious = bool(getattr(ep, "size_oblivious", False))
        return ep

    def record(self) -> dict:
        """The record's ``narrowed`` field."""
        why = (self.diagnosis or {}).get("words")
        if self.oblivious:
            why = f"{why}; exported size-obliviously (torch.export's 0/1 guards dropped)"
        out = {"declared": self.declared, "ran": self.ran, "why": why}
        if self.relations:
            out["relations"] = self.relations
        return out

    def outside(self, sizes: dict[str, int]) -> str | None:
        """``p = 2 outside [4, 96]``: the first size outside the narrowed range (or not of
        a related dim's form, ``p = 2*_p``), else ``None``."""
        for name, (lo, hi) in self.ran.items():
            n = sizes.get(name)
            if n is None:
                continue
            if n < lo or (hi is not None and n > hi):
                return f"{name} = {n} outside [{lo}, {hi if hi is not None else 'inf'}]"
            d = self.dims.get(name)
            if hasattr(d, "root") and hasattr(d, "fn"):  # a derived dim: some root value must give n
                rlo, rhi = _bounds(d.root)
                if not any(d.fn(r) == n for r in range(rlo, min(rhi if rhi is not None else n, n) + 1)):
                    return f"{name} = {n} not of the form {name} = {self.relations.get(name, 'f(root)')}"
        return None


def _axes(spec) -> dict:
    """``{axis: (name, min, max or None)}`` of one input's Dim spec (a derived dim is named by its expression)."""
    out = {}
    for ax, d in (spec or {}).items():
        if isinstance(d, int):
            continue
        lo, hi = _bounds(d)
        out[ax] = (getattr(d, "__name__", str(d)), lo, hi)
    return out


def _bounds(d) -> tuple[int, int | None]:
    lo = d.min if isinstance(d.min, int) else 0
    hi = d.max if isinstance(d.max, int) and d.max < 2**62 else None  # int_oo: unbounded
    return int(lo), hi


def _ranges(specs) -> dict[str, list]:
    """``{dim name: [lo, hi]}`` over every input's Dim spec."""
    return {name: [lo, hi] for spec in specs for name, lo, hi in _axes(spec).values()}
