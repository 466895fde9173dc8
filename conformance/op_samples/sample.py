"""One op sample: a program, its inputs at any size, its dynamic dims, its reference and
what each reference path promises on it.

``dims`` is per input the one export spec of :func:`engines.torch_export_tools.export_spec`,
``{axis: (dim name, least size, bound or None)}``, with two additions the spec has no word
for: an axis entry ``(name, least, bound, k)`` is ``k`` times the dim (a channel count
twice the groups' size), and an input that is a Python int whose value torch.export keeps
symbolic is :data:`SCALAR`. ``None``: an input with no dynamic dim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

#: a Python int input that torch.export keeps symbolic (``Dim.DYNAMIC``)
SCALAR = "scalar"


@dataclass(frozen=True)
class Lazy:
    """``engines.lazy`` in unbounded mode over :attr:`Sample.sizes`.

    compiles:   exact graph compiles over the sweep (2: a size-0/1 guard flips once, or a
                data-dependent count splits the graph in two)
    every_axis: every axis of every input symbolic (``jit``'s default), else the sample's dims
    bounded:    ``(static, bounded)`` compiles over :data:`BOUNDED_SIZES` in the static and
                bounded modes, every axis bounded at 16 (a data-dependent count: both graphs
                per shape static, each once bounded, its variable bounded by the operand's elements)
    fails:      a known failure: a regex of the error the path raises (the reason beside it);
                the sample's test fails when it passes"""

    compiles: int = 1
    every_axis: bool = True
    bounded: tuple[int, int] | None = None
    fails: str = ""


#: the sweep of :attr:`Lazy.bounded` (a repeated shape: no compile in static mode)
BOUNDED_SIZES = (4, 7, 7, 11)


@dataclass(frozen=True)
class Lowered:
    """torch.export -> ``engines.stablehlo.lower`` -> the executors, every size.

    expect:         substrings the lowered text must contain (``?`` dims, bounds, ops)
    export_n:       the size exported at
    oblivious:      export under ``backed_size_oblivious`` (no 0/1 guards on derived sizes)
    export_kw:      further ``torch.export.export`` options
    executors:      which run it
    per_shape:      XLA may refine a bounded module per shape (``on_unsupported="per_shape"``)
    bounded_once:   the compile-once executors pin it (``tests/stablehlo/test_bounded.py``)"""

    expect: Sequence[str] = ()
    export_n: int = 3
    oblivious: bool = False
    export_kw: dict = field(default_factory=dict)
    executors: Sequence[str] = ("xla", "interpreter")
    per_shape: bool = False
    bounded_once: bool = False


@dataclass(frozen=True)
class LazyHlo:
    """The lazy trace lowered to StableHLO (``engines.lazy.to_stablehlo``), ``?`` dims on XLA:
    ``modules`` lowered over the sweep (one per lazy graph); ``fails`` as :attr:`Lazy.fails`."""

    modules: int = 1
    fails: str = ""


@dataclass
class Sample:
    """One row of the op-sample table (see the package's docstring)."""

    name: str
    program: Callable  # torch callable or module, on the inputs
    make: Callable  # (n, rng) -> list of np.ndarray / Python scalars
    dims: Sequence | None  # the export spec per input (module docstring); None: no export, every axis symbolic
    reference: Callable | None = None  # NumPy float64 oracle (params, *inputs) -> list; None: torch eager
    sizes: Sequence[int] = (1, 2, 5, 64)
    rtol: float = 2e-4
    atol: float = 2e-5
    lazy: Lazy | None = None
    lowered: Lowered | None = None
    lazy_hlo: LazyHlo | None = None
    origin: str = ""  # the table it came from

    def module(self) -> torch.nn.Module:
        """The program as a module (what torch.export takes)."""
        return self.program if isinstance(self.program, torch.nn.Module) else Fn(lambda s, *xs: self.program(*xs))

    def params(self) -> dict[str, np.ndarray]:
        """The module's parameters and buffers as float64 arrays (the oracle's ``params``)."""
        if not isinstance(self.program, torch.nn.Module):
            return {}
        return {k: v.detach().numpy().astype(np.float64) for k, v in self.program.state_dict().items()}

    def inputs(self, n: int, seed: int | None = None) -> list:
        """The inputs at size ``n`` (seeded with ``n`` unless told)."""
        return self.make(n, np.random.default_rng(n if seed is None else seed))

    def expected(self, inputs: list) -> list:
        """The reference outputs, flat: the oracle on float64 copies of the inputs, else eager."""
        if self.reference is not None:
            wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in inputs]
            return [np.asarray(o) for o in _flat(self.reference(self.params(), *wide))]
        with torch.no_grad():
            return [o.detach().numpy() for o in _flat(self.program(*[as_torch(a) for a in inputs]))]

    def lazy_dims(self) -> tuple[list | None, list | None]:
        """``(dims, bounds)`` for ``engines.lazy``: each tensor input's ``{axis: name}`` and
        ``{axis: bound}`` (``None``, ``None``: every axis symbolic)."""
        if self.dims is None or (self.lazy is not None and self.lazy.every_axis):
            return None, None
        dims = [{a: e[0] for a, e in d.items()} if isinstance(d, dict) else {} for d in self.dims]
        bounds = [{a: e[2] for a, e in d.items() if e[2] is not None} if isinstance(d, dict) else {} for d in self.dims]
        return dims, bounds


class Fn(torch.nn.Module):
    """A module whose forward is ``fn(self, *xs)``; ``mods`` its submodules (parameters)."""

    def __init__(self, fn, **mods):
        super().__init__()
        self.fn = fn
        for k, m in mods.items():
            setattr(self, k, m)

    def forward(self, *xs):
        return self.fn(self, *xs)


def export_shapes(dims: Sequence) -> tuple:
    """torch.export's ``dynamic_shapes`` for a sample's ``dims``: one ``Dim`` per name
    (:func:`engines.torch_export_tools.torch_dims`), scaled where the entry says so."""
    from engines.torch_export_tools import torch_dims

    made = torch_dims([{a: e[:3] for a, e in d.items()} if isinstance(d, dict) else {} for d in dims])
    out: list = []
    for d, m in zip(dims, made, strict=True):
        if d == SCALAR:
            out.append(torch.export.Dim.DYNAMIC)
        elif d is None:
            out.append(None)
        else:
            out.append({a: m[a] * e[3] if len(e) > 3 else m[a] for a, e in d.items()})
    return tuple(out)


def as_torch(a):
    """An input as the program takes it: arrays as tensors, scalars as they are."""
    return torch.from_numpy(a) if isinstance(a, np.ndarray) else a


def _flat(out) -> list:
    if isinstance(out, (torch.Tensor, np.ndarray)) or np.isscalar(out):
        return [out]
    res: list = []
    for o in out:
        res += _flat(o)
    return res


def flat(out) -> list:
    """A program's (nested) outputs as one list."""
    return _flat(out)
