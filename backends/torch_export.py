"""torch.export: static = one export per shape; unbounded/bounded = one
export with ``torch.export.Dim`` (``Dim(max=)`` when bounded), run through
``ep.module()``; bucketed = the static export per bucket of inputs padded on
the host (``backends.padding``). An input outside the exported range raises torch's own
guard error, naming the input and the bound.

Counts: the backend counts its own calls of :func:`export` (one
``torch.export.export`` each), timed, with the reason: the new input shapes
(static: the program cache is keyed by them) or the dynamic dims the one
export covers. :func:`export` itself counts nothing, so other backends
(``backends.stablehlo_base``) can call it without moving this backend's count."""

from __future__ import annotations

from engines.torch_export_tools import export_oblivious_retry, export_sample  # noqa: F401 (re-exported)

from .base import (
    MODEL_COST,
    Backend,
    Counter,
    LeftOut,
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


class ExportProgram(TorchArrays, Program):
    """``ep.module()`` of one export (Dim ranges), or of one per input shapes (static)."""

    def __init__(self, backend, case, mode):
        self.fn = case.torch_fn()
        self.dynamic = None if mode == "static" else tuple(torch_dims(case, mode))
        #: the exported modules, by input shapes (static) or ``None`` (one for every shape)
        self.modules: dict = {}
        ranges = {d.name: describe_range(d) for axes in case.dynamic_axes(mode) for d in axes.values()}
        self.why = f"first call: one export with dynamic dims {', '.join(ranges.values())}"
        super().__init__(backend, case, mode)

    def run(self, *args):
        from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

        case, mode = self.case, self.mode
        key = tuple(tuple(a.shape) for a in args) if mode == "static" else None
        mod = self.modules.get(key)
        try:
            if mod is None:
                with self.counting(STAGE, f"new input shapes {key}" if mode == "static" else self.why):
                    mod = self.modules[key] = export(self.fn, args, self.dynamic, case.name).module()
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
    inside its symbolic-shape reasoning, say. The message starts ``torch.export``,
    so the zoo table counts the job as stopped at capture, not at run time."""


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


def export(fn, args, dynamic_shapes, case_name: str = "?", oblivious_retry: bool = False):
    """``torch.export.export`` of a plain function (counts nothing: the caller
    does, e.g. :class:`TorchExport` inside ``counting("export")``).

    ``oblivious_retry`` (our lowering paths, not the torch_export peer): after a
    constraint violation, export once more size-obliviously (see
    :func:`export_oblivious_retry`)."""
    import torch

    class Program(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    # forward(*xs) takes one varargs parameter: its specs nest in a 1-tuple
    shapes = None if dynamic_shapes is None else (tuple(dynamic_shapes),)

    def run(**options):
        return torch.export.export(Program(), tuple(args), dynamic_shapes=shapes, strict=False, **options)

    try:
        return export_oblivious_retry(run) if oblivious_retry else run()
    except torch._dynamo.exc.UserError as e:  # constraint violations: the dim is not dynamic
        raise Unsupported(f"torch.export could not keep {case_name}'s dims dynamic: {str(e).splitlines()[0]}") from e
    except Exception as e:  # any other failure of the capture is torch.export's (not re-caught: the Unsupported above)
        first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
        raise ExportError(f"torch.export failed on {case_name}: {type(e).__name__}: {first}") from e
