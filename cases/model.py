"""The case model: dims, inputs, sweeps, the NumPy oracle and the program forms.

A case imports no tensor framework at module level: its torch and jax forms are
built lazily (``torch_fn()`` / ``jax_fn()``), so the catalogue can be listed from
any environment, including the torch_xla one that has no jax.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from engines.sizes.modes import MODES

from .errors import CaseError
from .inputs import INDEX_LIKE

#: ``zoo`` runs the generated model zoo's cases (``cases/zoo*.py``) on their whole sweep, and nothing else
PROFILES = ("quick", "full", "zoo")
#: what a case name may be: selectable by ``--cases`` as itself (no glob
#: character ``*?[]``, no comma) and usable in a job id and a file name
CASE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclasses.dataclass(frozen=True)
class Dim:
    """One named axis size.

    ``kind`` is ``static`` (``size`` fixed), ``unbounded`` (any size) or
    ``bounded`` (any size up to ``max``).
    """

    name: str
    kind: str = "static"
    size: int | None = None
    max: int | None = None
    min: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise CaseError(f"dim {self.name!r}: a dim name must be an identifier (size expressions use it)")
        if self.kind not in ("static", "bounded", "unbounded"):
            raise CaseError(f"dim {self.name!r}: unknown kind {self.kind!r}")
        if self.kind == "static" and self.size is None:
            raise CaseError(f"dim {self.name!r}: a static dim needs a size")
        if self.kind == "bounded" and self.max is None:
            raise CaseError(f"dim {self.name!r}: a bounded dim needs a max")
        # checked here, not left to the oracle: a negative size fails there
        # with NumPy's message, blaming the oracle for the dim's fault
        for field in ("size", "max", "min"):
            v = getattr(self, field)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise CaseError(f"dim {self.name!r}: {field} must be a non-negative integer, got {v!r}")
        if self.max is not None and self.max < self.min:
            raise CaseError(f"dim {self.name!r}: max {self.max} is below min {self.min}")

    @property
    def dynamic(self) -> bool:
        return self.kind != "static"

    def as_json(self) -> dict:
        d = {"kind": self.kind}
        if self.size is not None:
            d["size"] = self.size
        if self.max is not None:
            d["max"] = self.max
        return d


def static(name: str, size: int) -> Dim:
    return Dim(name, "static", size=size)


def unbounded(name: str, min: int = 0) -> Dim:
    return Dim(name, "unbounded", min=min)


def bounded(name: str, max: int, min: int = 0) -> Dim:
    return Dim(name, "bounded", max=max, min=min)


@dataclasses.dataclass(frozen=True)
class Input:
    """One program input: a shape over dim names (or literal ints) and a generator.

    ``gen`` is ``normal``, ``uniform`` (in ``[low, high)``), ``index`` (int64
    in ``[0, size of dim high)``), or one of :mod:`cases.inputs`' structured
    generators (lengths-based masks, decoder ids, graph batches). ``pad`` is the neutral value that padding
    backends (bucketing, or padding to a bound) fill the padded region with:
    0 for sums, ``-inf`` for softmax scores, 1 for divisors; ``"dummy"`` (index
    inputs only) points padded entries at a slot past the real size of the dim
    ``high`` names, which the padding backend adds and slices off.
    """

    name: str
    shape: tuple[str | int, ...]
    dtype: str = "float32"
    gen: str = "normal"
    low: float = 0.0
    high: float | str = 1.0
    pad: float | str = 0.0


@dataclasses.dataclass(frozen=True)
class EinxForm:
    """An einx call: ``getattr(einx, op)(description, *inputs, **params)``.

    ``program``, when given, is a short einx program instead of one call: a
    factory taking the einx module (real einx, or ``engines.einx_symbolic``)
    and returning the function of the inputs; ``op`` and ``description`` then
    name its einx calls for the report.
    """

    op: str
    description: str
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    program: Callable[[Any], Callable] | None = None

    def bind(self, einx_module: Any) -> Callable:
        """The callable of the inputs, on ``einx_module`` (any object with the einx ops)."""
        if self.program is not None:
            return self.program(einx_module)
        op, description, params = getattr(einx_module, self.op), self.description, dict(self.params)

        def call(*args):
            return op(description, *args, **params)

        return call


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """``|out - expected| <= atol + rtol * |expected|``; ``reason`` says why a
    tolerance is wider than the measured float32 error calls for
    (``dynshape check`` refuses one over 100x that error without it)."""

    rtol: float
    atol: float
    reason: str = ""

    @classmethod
    def from_error(cls, err: float) -> Tolerance:
        """The project's one tolerance rule (``dynshape check``'s proposal and
        the zoo's cases alike): :data:`TOLERANCE_MARGIN` times the measured
        float32-vs-float64 max abs error, at least :data:`TOLERANCE_FLOOR`,
        rounded up to one significant digit, as an absolute bound (outputs O(1))."""
        x = TOLERANCE_MARGIN * max(float(err), TOLERANCE_FLOOR)
        if not math.isfinite(x):
            return cls(0.0, x)
        e = math.floor(math.log10(x))
        return cls(0.0, math.ceil(round(x / 10**e, 9)) * 10**e)


#: the tolerance is this many times the measured float32-vs-float64 error ...
TOLERANCE_MARGIN = 10
#: ... of at least this much (an exact program still gets 1e-6: float32 kernels differ by the ulp)
TOLERANCE_FLOOR = 1e-7


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-9, 1e-12),
    "float32": Tolerance(1e-4, 1e-5),
    "float16": Tolerance(1e-2, 1e-3),
    "bfloat16": Tolerance(2e-2, 1e-2),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """A dynamic-shape program with its dims, sweep, inputs, oracle and forms.

    ``sweep`` lists sizes for the dynamic dims, each entry a novel shape;
    ``quick`` indexes the entries the quick profile (and the CI gate) runs.
    ``oracle`` maps the float64 copies of the inputs to the expected output;
    it must be written in NumPy, independently of every backend. ``out_dtype``
    is the dtype backends must return.
    """

    name: str
    tags: tuple[str, ...]
    dims: tuple[Dim, ...]
    inputs: tuple[Input, ...]
    sweep: tuple[Mapping[str, int], ...]
    oracle: Callable[..., np.ndarray]
    out_shape: tuple[str | int, ...]
    out_dtype: str = "float32"
    quick: tuple[int, ...] = (0, 1, 2)
    einx: EinxForm | None = None
    #: the torch form's factory; the program it returns may carry ``on_device(device)``,
    #: the same program with its weights on ``device`` (``cases.models_base.Model``)
    torch_fn: Callable[[], Callable] | None = None
    jax_fn: Callable[[], Callable] | None = None
    tolerance: Tolerance | None = None
    description: str = ""
    #: run only these of the modes the dims allow (a twin case that exists
    #: for one mode need not repeat its sibling's other modes)
    only_modes: tuple[str, ...] | None = None
    #: the output is a copy of input values (expand, gather, reshape): it must
    #: equal the oracle bit for bit, whatever the dtype's usual tolerance
    exact: bool = False
    #: why padding every dynamic dim to a bucket cannot be neutral here (a
    #: ``cat`` of two dynamic tensors, a mean over a padded axis): the padding
    #: backends' ``bucketed`` mode is then unsupported with this reason
    bucket_unsupported: str | None = None
    #: the case's own buckets for some dynamic dims (ascending sizes, e.g. a
    #: tokenizer's sequence lengths), used by the host-padding backends instead
    #: of powers of two; a size past the last entry falls back to its power of two
    buckets: Mapping[str, tuple[int, ...]] | None = None
    #: the case's own input generator, ``inputs_fn(sizes, rng) -> [array, ...]``:
    #: ``sizes`` every dim's size (static ones included), ``rng`` a seeded
    #: ``numpy.random.Generator``; one array per entry of ``inputs``, in its shape
    #: and dtype. For inputs a generator name cannot say (a sorted batch vector,
    #: a mask from lengths, ``cases.inputs``); ``None``: the ``gen`` of each input
    inputs_fn: Callable[[Mapping[str, int], np.random.Generator], Sequence[np.ndarray]] | None = None
    #: relations between dims every sweep entry must satisfy, each
    #: ``"<size expr> <op> <size expr>"`` with ``op`` one of ``>= <= > < ==``
    #: (``"n >= g"``: a graph batch has at least one node per graph)
    constraints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> CaseError:
            return CaseError(f"case {self.name!r}, field {field!r}: {why}")

        if not isinstance(self.name, str) or not CASE_NAME.fullmatch(self.name):
            raise CaseError(
                f"case {self.name!r}, field 'name': must be letters, digits, '_', '.' or '-' "
                "(starting with a letter or '_'), so that --cases selects it by name"
            )
        if not callable(self.oracle):
            raise bad(
                "oracle", f"missing ({self.oracle!r}): give a NumPy function of the inputs that returns the expected output"
            )
        names = [d.name for d in self.dims]
        if len(set(names)) != len(names):
            raise bad("dims", f"duplicate dim names {names}")
        for inp in self.inputs:
            for ax in inp.shape:
                if isinstance(ax, str) and ax not in names:
                    raise bad("inputs", f"input {inp.name!r} uses unknown dim {ax!r}; dims: {', '.join(names)}")
        dynamic = {d.name for d in self.dims if d.dynamic}
        if dynamic and not self.sweep:
            raise bad("sweep", f"empty, but dims {sorted(dynamic)} are dynamic: give at least one entry of sizes")
        for i, sizes in enumerate(self.sweep):
            if set(sizes) != dynamic:
                raise bad("sweep", f"sweep[{i}] sets {sorted(sizes)}, expected exactly the dynamic dims {sorted(dynamic)}")
            for name, size in sizes.items():
                dim = self.dim(name)
                if not isinstance(size, int) or size < dim.min or (dim.max is not None and size > dim.max):
                    raise bad(
                        "sweep",
                        f"sweep[{i}] {name}={size} outside "
                        f"[{dim.min}, {dim.max if dim.max is not None else 'inf'}] (dim {name!r})",
                    )
        for inp in self.inputs:
            if isinstance(inp.pad, str) and not (inp.pad == "dummy" and inp.gen in INDEX_LIKE and isinstance(inp.high, str)):
                raise bad(
                    "inputs",
                    f"input {inp.name!r}: pad {inp.pad!r} is not a number; only an index input "
                    "whose high names a dim may pad with 'dummy'",
                )
        for name, sizes in (self.buckets or {}).items():
            if name not in dynamic:
                raise bad("buckets", f"dim {name!r} is not a dynamic dim (dynamic: {', '.join(sorted(dynamic))})")
            if not sizes or any(not isinstance(n, int) or n < 1 for n in sizes) or list(sizes) != sorted(set(sizes)):
                raise bad("buckets", f"dim {name!r}: {sizes!r} is not an ascending list of positive sizes")
        for text in self.constraints:
            for i, sizes in enumerate(self.sweep):
                if not _holds(text, self.all_sizes(sizes), self.name):
                    raise bad("constraints", f"sweep[{i}] {dict(sizes)} breaks {text!r}")
        if self.inputs_fn is not None and not callable(self.inputs_fn):
            raise bad("inputs_fn", f"{self.inputs_fn!r} is not callable: give a function (sizes, rng) -> arrays")
        for i in self.quick:
            if not 0 <= i < len(self.sweep):
                raise bad("quick", f"quick index {i} outside the sweep (0..{len(self.sweep) - 1})")
        if self.only_modes is not None and not set(self.only_modes) <= set(self._dim_modes()):
            raise bad("only_modes", f"{self.only_modes} not among {self._dim_modes()}")

    def check_oracle(self) -> None:
        """Run the oracle on the first shape of the quick sweep: its output
        must have the shape ``out_shape`` gives and a dtype ``out_dtype`` can
        hold; else :class:`CaseError` naming the case and the field."""
        sizes = self.sizes_for("quick")[0] if self.quick else (dict(self.sweep[0]) if self.sweep else {})
        where = f"case {self.name!r}, field 'oracle'"
        try:
            out = self.expected(self.make_inputs(sizes, seed=0))
            want = self.out_shape_for(sizes)
        except CaseError:
            raise
        except Exception as e:
            raise CaseError(f"{where}: raised {type(e).__name__}: {e} on sizes {sizes}") from None
        if out.shape != want:
            raise CaseError(f"{where}: returns shape {out.shape} on sizes {sizes}, but out_shape {self.out_shape} says {want}")
        kind = "f" if self.out_dtype == "bfloat16" else np.dtype(self.out_dtype).kind
        allowed = {"f": "fiub", "c": "cfiub", "i": "iub", "u": "iub", "b": "b"}.get(kind, kind)
        if out.dtype.kind not in allowed:
            raise CaseError(
                f"{where}: returns dtype {out.dtype} on sizes {sizes}, which out_dtype {self.out_dtype!r} does not hold exactly"
            )

    # -- dims and modes --------------------------------------------------
    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise CaseError(f"case {self.name!r} has no dim {name!r}")

    @property
    def dynamic_dims(self) -> tuple[Dim, ...]:
        return tuple(d for d in self.dims if d.dynamic)

    @property
    def modes(self) -> tuple[str, ...]:
        """Modes that make sense here: static always; unbounded and bucketed
        (unbounded sizes served by power-of-two buckets, ``engines.sizes.buckets``)
        when any dim is dynamic; bounded when any dim carries a maximum
        (narrowed by ``only_modes``)."""
        modes = self._dim_modes()
        return modes if self.only_modes is None else tuple(m for m in modes if m in self.only_modes)

    def _dim_modes(self) -> tuple[str, ...]:
        kinds = {d.kind for d in self.dims}
        out = ["static"]
        if kinds & {"bounded", "unbounded"}:
            out += ["unbounded", "bucketed"]
        if "bounded" in kinds:
            out.append("bounded")
        return tuple(m for m in MODES if m in out)

    @property
    def forms(self) -> tuple[str, ...]:
        return tuple(f for f, v in (("einx", self.einx), ("torch", self.torch_fn), ("jax", self.jax_fn)) if v is not None)

    def dynamic_axes(self, mode: str) -> list[dict[int, Dim]]:
        """Per input, ``{axis: Dim}`` for the axes that are dynamic in ``mode``.

        In ``static`` mode nothing is dynamic; in ``unbounded`` and
        ``bucketed`` every dynamic dim is unbounded (its max dropped); in ``bounded`` a bounded dim keeps
        its max and an unbounded one stays unbounded.
        """
        if mode not in self._dim_modes():
            raise CaseError(f"case {self.name!r} has no mode {mode!r} (it has {', '.join(self.modes)})")
        out = []
        for inp in self.inputs:
            axes = {}
            for i, ax in enumerate(inp.shape):
                if isinstance(ax, str) and self.dim(ax).dynamic and mode != "static":
                    d = self.dim(ax)
                    if mode in ("unbounded", "bucketed") and d.kind == "bounded":
                        d = Dim(d.name, "unbounded", min=d.min)
                    axes[i] = d
            out.append(axes)
        return out

    # -- sweeps and inputs -----------------------------------------------
    def sizes_for(self, profile: str) -> list[dict[str, int]]:
        if profile in ("full", "zoo"):
            return [dict(s) for s in self.sweep]
        if profile == "quick":
            return [dict(self.sweep[i]) for i in self.quick]
        raise CaseError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")

    def all_sizes(self, sizes: Mapping[str, int]) -> dict[str, int]:
        out = {d.name: d.size for d in self.dims if not d.dynamic}
        out.update(sizes)
        return out

    def shapes(self, sizes: Mapping[str, int]) -> list[tuple[int, ...]]:
        full = self.all_sizes(sizes)
        return [tuple(full[a] if isinstance(a, str) else a for a in inp.shape) for inp in self.inputs]

    def out_shape_for(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The output shape: ``out_shape`` entries are ints or size
        expressions over dim names (``engines.sizes``): ``"2*b"``, ``"n - 1"``,
        ``"s // 2"`` (a stride-2 layer), ``"(s + 3) // 4"``, ``"n % 8"``,
        ``"min(s, 512)"``, ``"max(b, 1)"``, ``"floor(s / 2)"``."""
        env = self.all_sizes(sizes)
        return tuple(a if isinstance(a, int) else int(_eval_size(a, env, self.name)) for a in self.out_shape)

    def make_inputs(self, sizes: Mapping[str, int], seed: int) -> list[np.ndarray]:
        """Seeded inputs in their declared dtypes (deterministic per seed): from
        ``inputs_fn`` where the case has one, else each drawn by its generator
        (:mod:`cases.inputs`)."""
        from . import inputs

        rng = np.random.default_rng(seed)
        if self.inputs_fn is not None:
            return self._own_inputs(self.all_sizes(sizes), rng)
        draw = inputs.Draw(self.name, rng, self.all_sizes(sizes), self.inputs)
        return [inputs.generate(inp, shape, draw) for inp, shape in zip(self.inputs, self.shapes(sizes), strict=False)]

    def _own_inputs(self, full: dict[str, int], rng: np.random.Generator) -> list[np.ndarray]:
        """``inputs_fn``'s arrays, checked against ``inputs`` (count, shape) and cast to their dtypes."""
        assert self.inputs_fn is not None
        where = f"case {self.name!r}, field 'inputs_fn'"
        try:
            got = list(self.inputs_fn(dict(full), rng))
        except CaseError:
            raise
        except Exception as e:
            raise CaseError(f"{where}: raised {type(e).__name__}: {e} on sizes {full}") from None
        if len(got) != len(self.inputs):
            raise CaseError(f"{where}: gave {len(got)} arrays, but the case has {len(self.inputs)} inputs")
        out = []
        for inp, shape, a in zip(self.inputs, self.shapes(full), got, strict=True):
            a = np.asarray(a)
            if a.shape != shape:
                raise CaseError(f"{where}: input {inp.name!r} has shape {a.shape} on sizes {full}, expected {shape}")
            out.append(np.ascontiguousarray(a.astype(inp.dtype, copy=False)))
        return out

    def expected(self, inputs: Sequence[np.ndarray]) -> np.ndarray:
        """The oracle's answer, computed in float64 (ints stay ints)."""
        promoted = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs]
        return np.asarray(self.oracle(*promoted))

    def tol(self) -> Tolerance:
        if self.exact:
            return Tolerance(0.0, 0.0)
        return self.tolerance or DEFAULT_TOLERANCES.get(self.out_dtype, Tolerance(0.0, 0.0))

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "tags": list(self.tags),
            "dims": {d.name: d.as_json() for d in self.dims},
            "forms": list(self.forms),
            "modes": list(self.modes),
            "sweep_full": len(self.sweep),
            "sweep_quick": len(self.quick),
            "exact": self.exact,
        }


def match_globs(names: Sequence[str], globs: str | None, what: str) -> list[str]:
    """Names matched by comma-separated globs (``None`` or empty: all).

    A glob that matches nothing raises :class:`CaseError` listing the valid names.
    """
    if not globs:
        return list(names)
    out: list[str] = []
    for g in (p.strip() for p in globs.split(",")):
        if not g:
            continue
        hits = [n for n in names if fnmatch.fnmatchcase(n, g)]
        if not hits:
            raise CaseError(f"unknown {what} {g!r}; valid: {', '.join(names)}")
        out.extend(h for h in hits if h not in out)
    return out


_RELATION = re.compile(r"^(.+?)\s*(>=|<=|==|>|<)\s*(.+)$")


def _holds(text: str, env: Mapping[str, int], case: str) -> bool:
    """Whether the constraint ``text`` (``"n >= g"``) holds for the sizes ``env``."""
    m = _RELATION.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise CaseError(f"case {case!r}, field 'constraints': {text!r} is not '<size expr> <op> <size expr>' (op: >= <= > < ==)")
    a, b = _eval_size(m[1], env, case), _eval_size(m[3], env, case)
    return {">=": a >= b, "<=": a <= b, "==": a == b, ">": a > b, "<": a < b}[m[2]]


def _eval_size(expr: str, env: Mapping[str, int], case: str) -> int:
    """A size expression over the case's dims (``"2*b"``), via engines.sizes."""
    from engines import sizes

    try:
        return sizes.evaluate(sizes.parse(expr, names=env), env)
    except sizes.SizeError as e:
        raise CaseError(f"case {case!r}: size expression: {e}") from None
