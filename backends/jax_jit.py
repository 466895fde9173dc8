"""jax.jit: static = XLA compiles once per input shape; bounded = pad every
bounded axis to its maximum on the host (with each input's neutral ``pad``
value), so one executable serves every size, and slice the result back.

Counts come from jax.monitoring's backend-compile events: every XLA compile
in the process, including any the padding or slicing would cause.
"""

from __future__ import annotations

import numpy as np

from .base import Backend, JaxArrays

_compiles = 0
_compile_s = 0.0
_listening = False


def _listen() -> None:
    global _listening
    if _listening:
        return
    import jax.monitoring

    def on_event(event, duration, **kwargs):
        global _compiles, _compile_s
        if event == "/jax/core/compile/backend_compile_duration":
            _compiles += 1
            _compile_s += duration

    jax.monitoring.register_event_duration_secs_listener(on_event)
    _listening = True


class Padded:
    """A padded device result and the valid region to read back."""

    def __init__(self, value, shape):
        self.value, self.shape = value, shape

    def block_until_ready(self):
        self.value.block_until_ready()
        return self


class JaxJit(JaxArrays, Backend):
    name = "jax_jit"
    forms = ("jax",)
    modes = ("static", "bounded")
    requires = ("jax",)

    def prepare(self, case, mode):
        import jax

        _listen()
        jitted = jax.jit(case.jax_fn())
        # bounded mode pads NumPy inputs on the host before moving them
        self._host_inputs = mode != "static"
        if mode == "static":
            return jitted
        axes = case.dynamic_axes(mode)
        pads = [inp.pad for inp in case.inputs]

        def program(*arrays):
            sizes = {}
            padded = []
            for a, spec, pad in zip(arrays, axes, pads):
                widths = [(0, 0)] * a.ndim
                for axis, dim in spec.items():
                    sizes[dim.name] = a.shape[axis]
                    if dim.max is None:
                        raise ValueError(f"{case.name}: dim {dim.name!r} has no bound to pad to")
                    if a.shape[axis] > dim.max:
                        raise ValueError(
                            f"{case.name}: dim {dim.name!r} = {a.shape[axis]} exceeds its bound {dim.max}"
                        )
                    widths[axis] = (0, dim.max - a.shape[axis])
                padded.append(jax.device_put(np.pad(a, widths, constant_values=pad)))
            return Padded(jitted(*padded), case.out_shape_for(sizes))

        return program

    def convert(self, arrays):
        if getattr(self, "_host_inputs", False):
            return list(arrays)
        return super().convert(arrays)

    def to_numpy(self, out):
        if isinstance(out, Padded):
            return np.asarray(out.value)[tuple(slice(0, n) for n in out.shape)]
        return np.asarray(out)

    def compile_stats(self):
        return {"xla": _compiles}

    def compile_time_s(self):
        return _compile_s
