"""What the model families (``cases/models_*.py``) share: :class:`ModelCase`,
seeded builds and the float64 eager oracle.

A model case runs a real model class of transformers, torchvision or
torch_geometric, built from a small config with random weights drawn under a
fixed seed (nothing is downloaded), in eval mode with every parameter frozen
(``requires_grad=False``: no autograd graph, so no ``torch.no_grad`` context
has to be traced by the compilers). Its torch form is the float32 model; its
oracle is *the same model in float64, run by torch eager* -- not a NumPy
program written independently: re-implementing GPT-2 in NumPy would test the
re-implementation. The float64 copy is made from the float32 weights, so both
hold the same values bit for bit.

Nothing here imports torch or a model library at module level: the catalogue
is listed in environments that have neither.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import libs
from .model import Case, CaseError

#: the seed of every model's weights (and of nothing else)
SEED = 0
#: how every model case's description names its oracle
ORACLE = "; oracle: the same model in float64, run by torch eager"


@dataclasses.dataclass(frozen=True)
class ModelCase(Case):
    """A :class:`~cases.model.Case` whose program is a library model.

    ``libraries`` names the model libraries (keys of :data:`cases.libs.LIBRARIES`)
    the torch form and the oracle import. The catalogue check runs no model
    (importing transformers alone takes seconds): it checks that the libraries
    are importable specs and the output shape evaluates; ``tests/test_models.py``
    runs every oracle.
    """

    libraries: tuple[str, ...] = ()

    def unavailable(self) -> str | None:
        """Why this case cannot run in this environment (a library is missing), or ``None``."""
        missing = libs.missing(*self.libraries)
        if not missing:
            return None
        return f"needs {', '.join(missing)} (the models extra: `make setup` installs it)"

    def check_oracle(self) -> None:
        unknown = [n for n in self.libraries if n not in libs.LIBRARIES]
        if unknown:
            raise CaseError(f"case {self.name!r}, field 'libraries': unknown {unknown} (known: {', '.join(libs.LIBRARIES)})")
        sizes = self.sizes_for("quick")[0] if self.quick else dict(self.sweep[0])
        self.out_shape_for(sizes)


def seeded(build: Callable[[], Any]) -> Any:
    """``build()`` under :data:`SEED`, the caller's RNG state left as it was;
    the model in eval mode with frozen parameters."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = build()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class Model:
    """A case's model: ``build`` (no arguments -> the seeded float32 ``nn.Module``,
    e.g. :func:`cases.models_text.gpt2`) and ``forward`` (the module and the
    torch inputs -> the output tensor).

    ``float32()`` is built once per process; ``float64()`` is its copy in
    float64 (same weights), for the oracle.
    """

    def __init__(self, name: str, build: Callable[[], Any], forward: Callable[..., Any], published: bool = True):
        self.name, self.build, self.forward = name, build, forward
        #: whether a run saves its weights for every worker (:func:`publish_weights`); a
        #: factory's seeded build (``dynshape.case``) draws the same ones in every worker
        self.published = published

    @functools.cached_property
    def _f32(self):
        from . import weights

        return weights.shared(self.name, self.build())

    def float32(self):
        """The float32 model (built on first use, then shared in this process)."""
        return self._f32

    @functools.cached_property
    def _f64(self):
        import copy

        return copy.deepcopy(self._f32).double()

    def float64(self):
        """The float32 model's weights in float64."""
        return self._f64

    def torch_fn(self) -> Callable:
        """The case's torch form: the float32 model on torch tensors.

        The program also carries ``on_device(device)`` (see :meth:`on_device`):
        the weights are the program's, not its inputs', so a backend whose
        tensors live on a device of their own (torch_xla) can only move them
        through the program."""
        program = self._program(self.float32())
        program.on_device = self.on_device
        return program

    def on_device(self, device) -> Callable:
        """The torch form on a copy of the float32 weights moved to ``device``:
        what a torch_xla user does (``model.to(xla_device)``). The shared CPU
        model stays where it is, for the other forms and the oracle."""
        import copy

        return self._program(copy.deepcopy(self.float32()).to(device))

    def _program(self, model) -> Callable:
        forward = self.forward

        def program(*args):
            return forward(model, *args)

        program.__name__ = self.name
        return program

    def oracle(self, *arrays: np.ndarray) -> np.ndarray:
        """The float64 model, run by torch eager on the (float64) inputs, its
        own casts to lower float dtypes held at float64 (:func:`float64_eager`)."""
        model = self.float64()
        return float64_eager(lambda *t: self.forward(model, *t), arrays, self.name)


def model_of(case) -> Model | None:
    """The :class:`Model` behind a case's torch form, or ``None``."""
    model = getattr(getattr(case, "torch_fn", None), "__self__", None)
    return model if isinstance(model, Model) else None


def ensure_weights(case):
    """:func:`cases.weights.ensure` for the case's model (called by the main environment
    before another environment runs the case); ``None`` for a case without one."""
    from . import weights

    model = model_of(case)
    return weights.ensure(model.name, model.build) if model else None


def publish_weights(case):
    """Save the weights of a user case's module as built (``dynshape.case``, a
    cases file): the workers rebuild it with weights of their own draw, and
    load these instead. ``None`` for a case without a :class:`Model`."""
    from . import weights

    model = model_of(case)
    return weights.save(model.name, model.build()) if model and model.published else None


#: per program name, the ops that still gave a lower-precision float tensor in
#: its float64 oracle (the last run's): an oracle that is partly float32
PARTLY_FLOAT32: dict[str, tuple[str, ...]] = {}


def float64_eager(fn: Callable[..., Any], arrays, name: str = "") -> np.ndarray:
    """``fn`` run by torch eager on the arrays as torch tensors, under
    :func:`hold_float64`: a model's explicit casts to float32 (transformers'
    RMSNorm ``hidden_states.to(torch.float32)``) stay float64, so the oracle
    rounds nowhere. Ops that still made a lower float dtype are recorded in
    :data:`PARTLY_FLOAT32` under ``name``."""
    import torch

    with torch.no_grad(), hold_float64() as mode:
        out = fn(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays))
    PARTLY_FLOAT32[name] = tuple(sorted(mode.lowered))
    return out.numpy()


def hold_float64():
    """A ``TorchFunctionMode`` that rewrites float32/float16/bfloat16 to
    float64 wherever a program names a dtype (``.to(torch.float32)``,
    ``.float()``, ``.half()``, ``.type(...)``, ``dtype=`` of factories and
    reductions) and records in ``lowered`` the ops whose result is still a lower
    float dtype (what it could not hold)."""
    import torch
    from torch.overrides import TorchFunctionMode

    low = {torch.float32, torch.float16, torch.bfloat16}
    renamed = {"float": "double", "half": "double", "bfloat16": "double"}

    def lift(v):
        return torch.float64 if isinstance(v, torch.dtype) and v in low else v

    class HoldFloat64(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.lowered: set[str] = set()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", str(func))
            if name in renamed and args and isinstance(args[0], torch.Tensor):
                func, name = torch.Tensor.double, "double"
            if "dtype" in kwargs:
                kwargs["dtype"] = lift(kwargs["dtype"])
            if name in ("to", "type"):
                args = tuple(lift(a) for a in args)
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor) and out.dtype in low:
                self.lowered.add(name)
            return out

    return HoldFloat64()
