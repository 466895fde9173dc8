"""``dynshape.case``: a :class:`cases.Case` from a program and a few keywords."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cases import packs
from cases.model import Case, CaseError, Dim, EinxForm, Input, Tolerance, bounded, static, unbounded
from cases.models_base import Model, ModelCase, float64_eager, seeded

#: case name -> the file that made it (what a worker loads to get it back)
ORIGINS: dict[str, str] = {}


def einx_call(op: str, description: str, **params: Any) -> EinxForm:
    """An einx call as a program: ``einx_call("sum", "b [n] d")`` is ``einx.sum("b [n] d", x)``."""
    return EinxForm(op, description, params)


def case(
    program: Any,
    *,
    inputs: Mapping[str, Sequence[str | int] | Input] | Sequence[Input],
    sweep: Sequence[Mapping[str, int]] | Mapping[str, Sequence[int]],
    dims: Mapping[str, Any] | Sequence[Dim] | None = None,
    oracle: Callable[..., np.ndarray] | None = None,
    name: str | None = None,
    framework: str | None = None,
    forward: Callable[..., Any] | None = None,
    out_shape: Sequence[str | int] | None = None,
    out_dtype: str = "float32",
    make_inputs: Callable[[Mapping[str, int], np.random.Generator], Sequence[np.ndarray]] | None = None,
    constraints: Sequence[str] = (),
    tolerance: Tolerance | tuple[float, float] | None = None,
    quick: Sequence[int] | None = None,
    tags: Sequence[str] = (),
    exact: bool = False,
    description: str = "",
) -> Case:
    """A case for ``program``: a torch ``nn.Module`` or function, a factory (a
    zero-argument callable that builds the module: ``lambda: timm.create_model(...)``,
    or the module's class), a jax function (``framework="jax"``) or an einx call
    (:func:`einx_call`).

    A factory's module is built only where a job of the case runs (in its worker, seeded:
    every worker builds the same weights), never where the file is loaded to plan the run:
    give ``out_shape`` (the planner does not run the model to infer it).

    ``inputs``: ``{name: shape}`` (shape entries dim names or ints) or
    :class:`cases.Input` objects. ``sweep``: a list of ``{dim: size}`` (one
    novel shape each) or ``{dim: [sizes]}`` zipped. ``dims``: ``{name: int}``
    for a static dim, ``"unbounded"``, ``("bounded", max)`` or a
    :class:`cases.Dim`; a swept dim not named is unbounded (min 1).
    ``oracle``: a NumPy function of the float64 inputs; default, the program
    itself in float64 (a module's float64 copy run by torch eager, its own
    float32 casts held at float64; jax with x64; einx on NumPy).
    ``forward(module, *inputs)``: how a module is called (default ``module(*inputs)``,
    the first output of a tuple or ``ModelOutput``). ``out_shape``: size
    expressions (``"s // 2"``, ``"min(s, 512)"``); default, inferred from the
    oracle on the sweep. ``make_inputs(sizes, rng)``: the case's own inputs
    (:attr:`cases.Case.inputs_fn`); ``constraints``: ``["n >= g"]``.
    """
    kind = framework or _framework(program)
    name = name or _name(program)
    inputs_ = _inputs(inputs)
    sweep_ = _sweep(sweep)
    dims_ = _dims(dims or {}, inputs_, sweep_)
    fields: dict[str, Any] = {}
    factory = kind == "torch" and _is_factory(program)
    if factory:
        if out_shape is None:
            raise CaseError(
                f"case {name!r}, field 'out_shape': missing; a factory's module is built only in the workers "
                "that run its jobs, so give out_shape (size expressions such as 's // 2')"
            )
        fields["torch_fn"], default = _factory(program, forward, name)
    elif kind == "torch":
        fields["torch_fn"], default = _torch(program, forward, name)
    elif kind == "jax":
        fields["jax_fn"], default = (lambda: program), _jax_oracle(program)
    elif kind == "einx":
        fields["einx"], default = program, _einx_oracle(program)
    else:
        raise CaseError(f"case {name!r}, field 'framework': {kind!r} is not torch, jax or einx")
    oracle = oracle or default
    if isinstance(tolerance, tuple):
        tolerance = Tolerance(*tolerance)
    made = (ModelCase if factory else Case)(  # a ModelCase's catalogue check runs no model
        name=name,
        tags=tuple(tags) or ("user",),
        dims=dims_,
        inputs=inputs_,
        sweep=sweep_,
        oracle=oracle,
        out_shape=tuple(out_shape) if out_shape is not None else (),
        out_dtype=out_dtype,
        quick=tuple(quick) if quick is not None else tuple(range(min(3, len(sweep_)))),
        tolerance=tolerance,
        description=description or f"{kind} program {name}" + ("" if oracle is not default else "; oracle: itself in float64"),
        exact=exact,
        inputs_fn=make_inputs,
        constraints=tuple(constraints),
        **fields,
    )
    if out_shape is None:
        made = _with_out_shape(made)
    origin = sys._getframe(1).f_globals.get("__file__")
    if origin:
        ORIGINS[name] = origin
    packs.collect(made)
    return made


def _framework(program: Any) -> str:
    """``einx`` for an :class:`EinxForm`, else ``torch`` (a jax function says ``framework="jax"``)."""
    return "einx" if isinstance(program, EinxForm) else "torch"


def _is_module(program: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(program, torch.nn.Module)


def _name(program: Any) -> str:
    raw = program.op if isinstance(program, EinxForm) else getattr(program, "__name__", None) or type(program).__name__
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", raw).lower())
    return name if re.match(r"[A-Za-z_]", name) else "_" + name


def _inputs(inputs) -> tuple[Input, ...]:
    if isinstance(inputs, Mapping):
        return tuple(v if isinstance(v, Input) else Input(k, tuple(v)) for k, v in inputs.items())
    return tuple(inputs)


def _sweep(sweep) -> tuple[dict[str, int], ...]:
    if isinstance(sweep, Mapping):
        lengths = {len(v) for v in sweep.values()}
        if len(lengths) > 1:
            raise CaseError(f"field 'sweep': the size lists differ in length ({ {k: len(v) for k, v in sweep.items()} })")
        return tuple(dict(zip(sweep, sizes, strict=True)) for sizes in zip(*sweep.values(), strict=True))
    return tuple(dict(s) for s in sweep)


def _dims(dims, inputs: tuple[Input, ...], sweep) -> tuple[Dim, ...]:
    if not isinstance(dims, Mapping):
        return tuple(dims)
    out: dict[str, Dim] = {}
    for k, v in dims.items():
        if isinstance(v, Dim):
            out[k] = v
        elif isinstance(v, int) and not isinstance(v, bool):
            out[k] = static(k, v)
        elif v == "unbounded":
            out[k] = unbounded(k, min=1)
        elif isinstance(v, tuple) and len(v) == 2 and v[0] == "bounded":
            out[k] = bounded(k, v[1], min=1)
        else:
            raise CaseError(f"field 'dims': dim {k!r} is {v!r}: give an int (static), 'unbounded' or ('bounded', max)")
    swept = [k for s in sweep[:1] for k in s]
    for k in swept:
        out.setdefault(k, unbounded(k, min=1))
    for inp in inputs:
        for ax in inp.shape:
            if isinstance(ax, str) and ax not in out:
                raise CaseError(f"field 'dims': input {inp.name!r} uses dim {ax!r}, which neither dims nor the sweep sizes")
    return tuple(out.values())


def _first_tensor(out: Any) -> Any:
    if isinstance(out, (tuple, list)) or (hasattr(out, "to_tuple") and not hasattr(out, "shape")):
        return out[0]
    return out


def _torch(program, forward, name):
    """``(torch_fn, oracle)``: a module through :class:`cases.models_base.Model`
    (weights shared across environments, float64 copy), a function as itself."""
    if _is_module(program):

        def build():
            program.eval()
            for p in program.parameters():
                p.requires_grad_(False)
            return program

        def call(module, *args):
            return _first_tensor(forward(module, *args) if forward else module(*args))

        model = Model(name, build, call)
        return model.torch_fn, model.oracle

    def torch_fn():
        return program

    def oracle(*arrays):
        return float64_eager(program, arrays, name)

    return torch_fn, oracle


def _is_factory(program: Any) -> bool:
    """A zero-argument callable that is no module (a program takes its inputs): a factory."""
    import inspect

    if not callable(program) or _is_module(program) or isinstance(program, EinxForm):
        return False
    try:
        params = inspect.signature(program).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: a program
        return False
    required = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return not any(p.kind in required and p.default is p.empty for p in params)


def _factory(factory, forward, name):
    """``(torch_fn, oracle)`` of a module ``factory()`` builds on first use, seeded (the same
    weights in every worker: none are published), in eval mode with frozen parameters."""

    def call(module, *args):
        return _first_tensor(forward(module, *args) if forward else module(*args))

    model = Model(name, lambda: seeded(factory), call, published=False)
    return model.torch_fn, model.oracle


def _jax_oracle(fn):
    def oracle(*arrays):
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            return np.asarray(fn(*(jnp.asarray(a) for a in arrays)))

    return oracle


def _einx_oracle(form: EinxForm):
    def oracle(*arrays):
        import einx

        return np.asarray(form.bind(einx)(*arrays))

    return oracle


def _with_out_shape(made: Case) -> Case:
    """``made`` with ``out_shape`` inferred from the oracle on up to three sweep
    entries: an axis of constant size is that int, one that follows a dim is its name."""
    import dataclasses

    picks = [dict(s) for s in made.sweep[:3]] or [{}]
    shapes = []
    for sizes in picks:
        try:
            shapes.append(made.expected(made.make_inputs(sizes, seed=0)).shape)
        except CaseError:
            raise
        except Exception as e:
            raise CaseError(f"case {made.name!r}, field 'oracle': raised {type(e).__name__}: {e} on sizes {sizes}") from None
    if len({len(s) for s in shapes}) > 1:
        raise CaseError(f"case {made.name!r}, field 'out_shape': the output rank changes over the sweep ({shapes})")
    out: list[str | int] = []
    for ax in range(len(shapes[0])):
        seen = [s[ax] for s in shapes]
        if len(set(seen)) == 1 and (len(picks) > 1 or not made.dynamic_dims):
            out.append(seen[0])
            continue
        full = [made.all_sizes(p) for p in picks]
        hit = [d.name for d in made.dims if [f[d.name] for f in full] == seen]
        if not hit:
            raise CaseError(
                f"case {made.name!r}, field 'out_shape': output axis {ax} has sizes {seen} on {picks}, "
                "which no dim follows: give out_shape (size expressions such as 's // 2')"
            )
        out.append(hit[0] if len(set(seen)) > 1 or made.dim(hit[0]).dynamic else seen[0])
    return dataclasses.replace(made, out_shape=tuple(out))
