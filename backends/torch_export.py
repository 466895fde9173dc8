"""torch.export: static = one export per shape; unbounded/bounded = one
export with ``torch.export.Dim`` (``Dim(max=)`` when bounded), run through
``ep.module()``. An input outside the exported range raises torch's own
guard error, naming the input and the bound."""

from __future__ import annotations

from .base import Backend, TorchArrays, Unsupported, torch_dims

_exports = 0


class TorchExport(TorchArrays, Backend):
    name = "torch_export"
    forms = ("torch",)
    modes = ("static", "bounded", "unbounded")
    requires = ("torch",)

    def prepare(self, case, mode):
        fn = case.torch_fn()
        dynamic = None if mode == "static" else tuple(torch_dims(case, mode))
        programs: dict = {}

        def program(*args):
            key = tuple(tuple(a.shape) for a in args) if mode == "static" else None
            mod = programs.get(key)
            if mod is None:
                mod = programs[key] = export(fn, args, dynamic, case.name).module()
            try:
                return mod(*args)
            except AssertionError as e:  # ep.module()'s input guards
                raise _range_error(case, mode, args, e) from e

        return program

    def compile_stats(self):
        return {"export": _exports}


class OutOfRange(ValueError):
    """An input size outside the range the program was exported for."""


def _range_error(case, mode, args, err: AssertionError) -> Exception:
    """Name the input, dim, size and exported range behind a guard failure."""
    for inp, arg, axes in zip(case.inputs, args, case.dynamic_axes(mode)):
        for axis, dim in axes.items():
            size = arg.shape[axis]
            lo, hi = max(2, dim.min), dim.max
            if size < lo or (hi is not None and size > hi):
                return OutOfRange(
                    f"{case.name}: input {inp.name!r} dim {dim.name!r} (axis {axis}) is {size}, outside the "
                    f"exported range [{lo}, {hi if hi is not None else 'inf'}] (torch: {err})"
                )
    return err


def export(fn, args, dynamic_shapes, case_name: str = "?"):
    """``torch.export.export`` of a plain function; counts each export."""
    global _exports
    import torch

    class Program(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    try:
        # forward(*xs) takes one varargs parameter: its specs nest in a 1-tuple
        shapes = None if dynamic_shapes is None else (tuple(dynamic_shapes),)
        ep = torch.export.export(Program(), tuple(args), dynamic_shapes=shapes, strict=False)
    except torch._dynamo.exc.UserError as e:  # constraint violations: the dim is not dynamic
        raise Unsupported(f"torch.export could not keep {case_name}'s dims dynamic: {str(e).splitlines()[0]}") from e
    _exports += 1
    return ep
