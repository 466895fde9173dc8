"""Host padding: a per-shape compiler's static program served at fewer shapes.

:func:`host_padding` gives a backend class whose ``static`` program compiles
per input shape (jax.jit, einx, torch.compile ``dynamic=False``, ...) more
modes, each run by that one static program on inputs padded on the host:

``bucketed``
    every dynamic dim padded up to its bucket (``engines.sizes.buckets.case_buckets``:
    the next power of two, at least ``MIN_BUCKET``, or the next of the case's
    own ``buckets``, capped at the dim's bound):
    one compile per bucket the sweep touches;
``bounded``
    every dynamic dim padded up to its bound: one compile for every size.

Padded elements take their input's neutral ``pad`` (0 for sums, ``-inf`` for
softmax scores, 1 for divisors). An index input padded with ``"dummy"`` points
its padded entries at the real size of the dim it indexes (``high``), one slot
past the real data: that dim gets one slot of room (``n + 1`` before bucketing)
and the slot is sliced off with the rest. The output, of shape
``case.out_shape_for(padded sizes)``, is sliced back to
``case.out_shape_for(real sizes)`` on the host, by ``to_numpy`` (so a jax
slice compiles nothing). A case that cannot be padded neutrally says why in
``Case.bucket_unsupported``; the padded modes are then ``unsupported`` with
that reason.

What is timed is the same as in ``static`` mode: the static program's call on
the padded native (device) arrays. ``convert`` pads on the host (``np.pad``,
timed as ``pad_s``) and converts the padded arrays as the static mode does
(``h2d_s``); it appends a :class:`Live` marker (the live and padded output
shapes) that the program passes through to its :class:`Padded` result, so
the call itself does no host work (:class:`PaddedProgram`, around the
backend's static program).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from engines.sizes import buckets

from .base import BoundError, Program, Unsupported

PAD_MODES = ("bucketed", "bounded")


class PadPlan:
    """How one case's inputs are padded in ``mode`` and its output sliced back."""

    def __init__(self, case, mode: str):
        if mode not in PAD_MODES:
            raise ValueError(f"{case.name}: no host padding for mode {mode!r} (valid: {', '.join(PAD_MODES)})")
        self.case, self.mode = case, mode
        #: per input, {axis: dim name} of its dynamic axes
        self.axes = [{axis: dim.name for axis, dim in a.items()} for a in case.dynamic_axes(mode)]
        self.room = buckets.dummy_dims(case)
        dynamic = {d.name for d in case.dynamic_dims}
        for inp in case.inputs:
            if inp.pad == "dummy" and inp.high not in dynamic:
                raise Unsupported(
                    f"{case.name}: input {inp.name!r} pads with 'dummy' into dim {inp.high!r}, "
                    "which is static: there is no slot to add for the dummy"
                )

    def sizes(self, arrays: Sequence[Any]) -> dict[str, int]:
        """The real size of every dynamic dim, read off the inputs (which must agree)."""
        out: dict[str, int] = {}
        for inp, axes, a in zip(self.case.inputs, self.axes, arrays, strict=False):
            for axis, name in axes.items():
                n = int(a.shape[axis])
                if out.setdefault(name, n) != n:
                    raise ValueError(
                        f"{self.case.name}: input {inp.name!r} dim {name!r} (axis {axis}) is {n}, "
                        f"but an earlier input has {name!r} = {out[name]}"
                    )
        return out

    def target(self, sizes: dict[str, int]) -> dict[str, int]:
        """The padded size of every dynamic dim."""
        if self.mode == "bucketed":
            return buckets.case_buckets(self.case, sizes)
        out = {}
        for name, n in sizes.items():
            bound = self.case.dim(name).max
            if bound is None:
                raise ValueError(f"{self.case.name}: dim {name!r} has no bound to pad to")
            if n > bound:
                raise BoundError(
                    f"{self.case.name}: dim {name!r} = {n} exceeds its bound {bound} (bounded mode pads to the bound)"
                )
            out[name] = bound + int(name in self.room)
        return out

    def pad(self, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict[str, int], dict[str, int]]:
        """``(padded arrays, real sizes, padded sizes)``."""
        sizes = self.sizes(arrays)
        target = self.target(sizes)
        out = []
        for inp, axes, a in zip(self.case.inputs, self.axes, arrays, strict=False):
            a = np.asarray(a)
            widths = [(0, 0)] * a.ndim
            for axis, name in axes.items():
                widths[axis] = (0, target[name] - a.shape[axis])
            if not any(w for _, w in widths):
                out.append(a)
                continue
            fill = sizes[inp.high] if inp.pad == "dummy" else inp.pad
            out.append(np.pad(a, widths, constant_values=np.asarray(fill, a.dtype)))
        return out, sizes, target

    def check(self, out, target: dict[str, int]) -> None:
        """The static program's output must have the shape ``out_shape`` gives
        at the padded sizes (else slicing would silently cut the wrong region)."""
        want = self.case.out_shape_for(target)
        got = tuple(int(n) for n in out.shape)
        if got != want:
            raise ValueError(
                f"{self.case.name}: the program's output on inputs padded to {target} has shape "
                f"{got}, but out_shape {self.case.out_shape} says {want} there: cannot slice it back"
            )


class Padded:
    """A padded program's native output and the shape of its valid region."""

    def __init__(self, value, shape: tuple[int, ...]):
        self.value, self.shape = value, shape


class Live:
    """The last argument ``PaddedProgram.convert`` gives a padded program: the
    output's live ``shape`` (to slice back to), the padded sizes ``target``
    and the ``padded`` output shape the static program must produce there."""

    def __init__(self, shape: tuple[int, ...], target: dict[str, int], padded: tuple[int, ...]):
        self.shape, self.target, self.padded = shape, target, padded


def _static_program(name: str):
    """A :class:`PaddedProgram` method that is the static program's method ``name``."""

    call = operator.methodcaller(name)

    def method(self):
        return call(self.static)

    method.__name__, method.__qualname__ = name, f"PaddedProgram.{name}"
    return method


class PaddedProgram(Program):
    """The static program of a job run in a padded mode: ``convert`` pads on the
    host (timed as ``pad_s``) and converts as the static program does, the call
    passes the :class:`Live` marker through to a :class:`Padded` result, and
    ``to_numpy`` slices it back. Counts, guards and breakdowns are the static
    program's."""

    def __init__(self, static: Program, plan: PadPlan):
        #: the backend's static program, which does the work
        self.static = static
        self.plan = plan
        super().__init__(static.backend, static.case, plan.mode)

    def run(self, *args):
        *arrays, live = args
        out = self.static(*arrays)
        if tuple(out.shape) != live.padded:  # a tuple compare: no host work on the data
            self.plan.check(out, live.target)
        return Padded(out, live.shape)

    def convert(self, arrays):
        """The inputs padded on the host (timed as ``pad_s``), then converted as
        the static program's inputs are, and a :class:`Live` marker."""
        plan = self.plan
        with self.io_timing("pad_s"):
            padded, sizes, target = plan.pad(arrays)
        live = Live(plan.case.out_shape_for(sizes), target, plan.case.out_shape_for(target))
        return [*self.static.convert(padded), live]

    def sync(self, out):
        return self.static.sync(out.value if isinstance(out, Padded) else out)

    def to_numpy(self, out):
        if isinstance(out, Padded):
            return np.asarray(self.static.to_numpy(out.value))[tuple(slice(0, n) for n in out.shape)]
        return self.static.to_numpy(out)

    def take_io(self):
        out = self.static.take_io()
        for step, seconds in super().take_io().items():
            out[step] = out.get(step, 0.0) + seconds
        return out

    # the static program's ledger is the job's
    reset_counters = _static_program("reset_counters")
    compile_stats = _static_program("compile_stats")
    compile_times = _static_program("compile_times")
    compile_reasons = _static_program("compile_reasons")
    work_stats = _static_program("work_stats")
    work_times = _static_program("work_times")
    guards = _static_program("guards")
    call_breakdown = _static_program("call_breakdown")


class HostPadding:
    """Descriptor mixin (first base, see :func:`host_padding`) serving
    ``host_padded`` modes with the backend's static program on host-padded inputs."""

    host_padded: ClassVar[tuple[str, ...]] = ()

    def unsupported_reason(self, case, mode):
        why = super().unsupported_reason(case, mode)  # type: ignore[misc]
        if why is None and mode in self.host_padded and case.bucket_unsupported:
            return (
                f"{self.name} pads {mode} inputs on the host, and {case.name} cannot be padded "  # type: ignore[attr-defined]
                f"neutrally: {case.bucket_unsupported}"
            )
        return why

    def prepare(self, case, mode):
        if mode not in self.host_padded:
            return super().prepare(case, mode)  # type: ignore[misc]
        if case.bucket_unsupported:
            raise Unsupported(self.unsupported_reason(case, mode))
        plan = PadPlan(case, mode)
        return PaddedProgram(super().prepare(case, "static"), plan)  # type: ignore[misc]


def host_padding(*modes: str):
    """Class decorator: the backend class, also offering ``modes`` (of
    :data:`PAD_MODES`) by host padding around its ``static`` program. The
    result is a subclass with :class:`HostPadding` first, under the same name,
    so the class's own methods (``super()`` included) are untouched."""
    bad = [m for m in modes if m not in PAD_MODES]
    if bad:
        raise ValueError(f"host padding serves {', '.join(PAD_MODES)}, not {', '.join(bad)}")

    def wrap(cls):
        attrs = {
            "modes": tuple(dict.fromkeys(cls.modes + modes)),
            "host_padded": modes,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        return type(cls.__name__, (HostPadding, cls), attrs)

    return wrap
