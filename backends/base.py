"""The backend interface.

A backend turns a case's program form into something callable on native
inputs, and reports its exact compile counts. Each (case, backend, mode) runs
in its own worker process (in the Python environment the backend names in
``env``), so process-wide counters are per job.

To add one: subclass :class:`Backend`, set the class attributes, implement
``prepare`` and ``compile_stats``, and register the class under the
``dynshape.backends`` entry-point group (``pyproject.toml``). Import tensor
frameworks inside methods, never at module level: ``dynshape list`` imports
every backend module in the main environment.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

MODES = ("static", "bounded", "unbounded")
FORMS = ("einx", "torch", "jax")


class Unsupported(Exception):
    """Raised by ``prepare`` when a case cannot run on this backend in this mode.

    The runner records status ``unsupported`` with the message.
    """


class Backend:
    """Base class of every backend.

    Class attributes:
      name: the backend's name in reports and on the command line.
      forms: program forms it consumes (``einx``, ``torch``, ``jax``).
      modes: modes it offers (``static``, ``bounded``, ``unbounded``).
      env: the Python environment its worker runs in (``main`` or ``xla``,
        see ``harness.envs``).
      requires: modules that must be importable in ``env``.
      timeout_s: wall-clock limit of one job (case, backend, mode).
    """

    name: ClassVar[str] = ""
    forms: ClassVar[tuple[str, ...]] = ()
    modes: ClassVar[tuple[str, ...]] = ()
    env: ClassVar[str] = "main"
    requires: ClassVar[tuple[str, ...]] = ()
    timeout_s: ClassVar[float] = 900.0

    # -- discovery (runs in the parent process) ---------------------------
    def available(self) -> tuple[bool, str]:
        """``(True, "")`` if the backend can run here, else ``(False, reason)``.

        Must not import heavy frameworks; the default checks ``requires``
        with ``find_spec`` in the backend's environment.
        """
        from harness import envs

        return envs.modules_available(self.env, self.requires)

    def unsupported_reason(self, case, mode: str) -> str | None:
        """Why ``case`` cannot run in ``mode`` here, or ``None`` if it can."""
        if mode not in case.modes:
            return f"case {case.name} has no {mode} mode (it has {', '.join(case.modes)})"
        if mode not in self.modes:
            return f"{self.name} offers no {mode} mode (it offers {', '.join(self.modes)})"
        if not set(self.forms) & set(case.forms):
            return f"case {case.name} has no {'/'.join(self.forms)} form (it has {', '.join(case.forms) or 'none'})"
        return None

    # -- execution (runs in the worker) ----------------------------------
    def prepare(self, case, mode: str) -> Callable[..., Any]:
        """Return the program for ``case`` in ``mode``: a callable on the
        native inputs returned by :meth:`convert`. Compiling lazily (on the
        first call) is fine and is what makes the first call's latency
        include the compile."""
        raise NotImplementedError

    def convert(self, arrays: Sequence[np.ndarray]) -> list:
        """NumPy inputs to native inputs (not timed)."""
        return list(arrays)

    def sync(self, out: Any) -> None:
        """Block until ``out`` is computed (timed: part of the call)."""

    def to_numpy(self, out: Any) -> np.ndarray:
        """The program's output as a NumPy array (not timed)."""
        return np.asarray(out)

    def compile_stats(self) -> dict[str, int]:
        """Exact compile counts so far in this process, per stage.

        Stages name where the work happened (``{"export": 1, "xla": 50}``);
        the harness records their sum as ``compiles``.
        """
        return {}

    def compile_time_s(self) -> float | None:
        """Total compile time so far, where the system reports it."""
        return None

    def guards(self) -> list[str]:
        """Specialisations the backend made on concrete sizes (for the record)."""
        return []


class TorchArrays:
    """Mixin: inputs and outputs are CPU torch tensors."""

    def convert(self, arrays):
        import torch

        return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]

    def to_numpy(self, out):
        return out.detach().cpu().numpy()


class JaxArrays:
    """Mixin: inputs and outputs are jax arrays on the default (CPU) device."""

    def convert(self, arrays):
        import jax

        return [jax.device_put(a) for a in arrays]

    def sync(self, out):
        out.block_until_ready()

    def to_numpy(self, out):
        return np.asarray(out)


def torch_dims(case, mode: str) -> list[dict[int, Any]]:
    """``torch.export.Dim`` objects per input axis for ``case`` in ``mode``.

    One ``Dim`` per case dim name, shared by every input that uses it;
    bounded dims carry their ``max``. Sizes 0 and 1 are specialised by
    torch.export, so ``min`` is at least 2.
    """
    from torch.export import Dim

    made: dict[str, Any] = {}
    out = []
    for axes in case.dynamic_axes(mode):
        spec = {}
        for axis, dim in axes.items():
            if dim.name not in made:
                kwargs = {"min": max(2, dim.min)}
                if dim.max is not None:
                    kwargs["max"] = dim.max
                made[dim.name] = Dim(dim.name, **kwargs)
            spec[axis] = made[dim.name]
        out.append(spec)
    return out


def module_available(name: str) -> bool:
    """True if ``name`` can be imported in this process, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
