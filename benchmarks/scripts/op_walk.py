"""Which ops the models and layers use that a reference path lacks: a generated walk.

``--path stablehlo`` (the default): ATen ops, after the lowering's decompositions, that the
StableHLO lowering has no rule for. ``--path lazy``: torch functions and tensor methods,
recorded by a ``TorchFunctionMode`` around one eager call of each program, that the lazy
path neither defines on its tensor nor resolves in its op registry (:func:`lazy_covers`).

Each catalogue case matching ``--cases`` (default ``model_*,zoo_*``: the real models and,
where ``cases/zoo.json`` is probed, the zoo) and each layer of :data:`LAYERS` (torch.nn's
activations, normalisations, pooling variants, recurrent layers, attention variants, with a
dynamic batch or sequence) is exported as the StableHLO backends export it (bounded dims,
the size-oblivious retry) and decomposed as the lowering decomposes it; every
``call_function`` target of the decomposed graph is looked up in the lowering registry.

    python -m benchmarks.scripts.op_walk                      # the table: op, lowered?, used by
    python -m benchmarks.scripts.op_walk --write tests/stablehlo/walk_ops.txt   # regenerate the pin
    python -m benchmarks.scripts.op_walk --path lazy --write tests/lazy/walk_ops.txt

The written list (one ``op<TAB>lowered|missing<TAB>users`` line each) is what
``tests/stablehlo/test_op_walk.py`` and ``tests/lazy/test_op_walk.py`` check: an op marked lowered
(or covered) that loses its lowering (or lazy implementation) fails them.
Export failures are listed with their reason, not dropped.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Callable

import numpy as np


def _layers() -> dict[str, tuple[Callable, tuple[int, ...], dict[int, str]]]:
    """name -> (module builder, input shape, {axis: dim name}) for the torch.nn layer walk."""
    import torch
    from torch import nn

    seq = (2, 8, 16)  # (B, L, C): dynamic L
    img = (2, 4, 16, 16)  # (B, C, H, W): dynamic batch
    acts = [
        nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Mish, nn.Hardswish, nn.Hardsigmoid, nn.ELU, nn.SELU, nn.CELU,
        nn.LeakyReLU, nn.Softplus, nn.Softsign, nn.Tanhshrink, nn.Hardtanh, nn.LogSigmoid, nn.Sigmoid, nn.Tanh,
        nn.Hardshrink, nn.Softshrink, nn.PReLU,
    ]  # fmt: skip
    out: dict = {a.__name__: (a, seq, {1: "L"}) for a in acts}
    out["GELU_tanh"] = (lambda: nn.GELU(approximate="tanh"), seq, {1: "L"})
    out["Softmax"] = (lambda: nn.Softmax(-1), seq, {1: "L"})
    out["LogSoftmax"] = (lambda: nn.LogSoftmax(-1), seq, {1: "L"})
    out["GLU"] = (lambda: nn.GLU(-1), seq, {1: "L"})
    out["LayerNorm"] = (lambda: nn.LayerNorm(16), seq, {1: "L"})
    out["RMSNorm"] = (lambda: nn.RMSNorm(16), seq, {1: "L"})
    out["GroupNorm"] = (lambda: nn.GroupNorm(2, 4), img, {0: "B"})
    out["GroupNorm_seq"] = (lambda: nn.GroupNorm(4, 8), (2, 8, 16), {2: "L"})  # wav2vec2's feature norm
    out["BatchNorm2d"] = (lambda: nn.BatchNorm2d(4).eval(), img, {0: "B"})
    out["InstanceNorm2d"] = (lambda: nn.InstanceNorm2d(4), img, {0: "B"})
    out["LocalResponseNorm"] = (lambda: nn.LocalResponseNorm(2), img, {0: "B"})
    out["MaxPool2d"] = (lambda: nn.MaxPool2d(3, 2, 1), img, {0: "B"})
    out["AvgPool2d"] = (lambda: nn.AvgPool2d(3, 2, 1), img, {0: "B"})
    out["AvgPool1d"] = (lambda: nn.AvgPool1d(3, 2), (2, 4, 16), {2: "L"})
    out["MaxPool1d"] = (lambda: nn.MaxPool1d(3, 2), (2, 4, 16), {2: "L"})
    out["AdaptiveAvgPool2d"] = (lambda: nn.AdaptiveAvgPool2d(1), img, {0: "B"})
    out["AdaptiveAvgPool1d"] = (lambda: nn.AdaptiveAvgPool1d(1), (2, 4, 16), {2: "L"})
    out["AdaptiveMaxPool2d"] = (lambda: nn.AdaptiveMaxPool2d(1), img, {0: "B"})
    out["LPPool2d"] = (lambda: nn.LPPool2d(2, 2), img, {0: "B"})
    out["PixelShuffle"] = (lambda: nn.PixelShuffle(2), img, {0: "B"})
    out["Upsample_nearest"] = (lambda: nn.Upsample(scale_factor=2), img, {0: "B"})
    out["Upsample_bilinear"] = (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), img, {0: "B"})
    out["ConvTranspose2d"] = (lambda: nn.ConvTranspose2d(4, 4, 3, 2), img, {0: "B"})
    out["Conv2d_depthwise"] = (lambda: nn.Conv2d(4, 4, 3, groups=4), img, {0: "B"})
    out["Embedding"] = (lambda: nn.Embedding(10, 4), (2, 8), {1: "L"})
    out["LSTM"] = (lambda: nn.LSTM(16, 8, batch_first=True), seq, {1: "L"})
    out["GRU"] = (lambda: nn.GRU(16, 8, batch_first=True), seq, {1: "L"})
    out["RNN"] = (lambda: nn.RNN(16, 8, batch_first=True), seq, {1: "L"})
    out["MultiheadAttention"] = (lambda: _SelfAttention(nn.MultiheadAttention(16, 2, batch_first=True)), seq, {1: "L"})
    out["TransformerEncoderLayer"] = (
        lambda: nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0).eval(), seq, {1: "L"}
    )  # fmt: skip
    out["sdpa_causal"] = (lambda: _Sdpa(is_causal=True), (2, 2, 8, 8), {2: "L"})
    del torch
    return out


class _SelfAttention:
    def __new__(cls, mha):
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = mha

            def forward(self, x):
                return self.mha(x, x, x, need_weights=False)[0]

        return M()


class _Sdpa:
    def __new__(cls, is_causal):
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                return torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=is_causal)

        return M()


def ops_of(ep) -> set[str]:
    """The ``call_function`` targets of ``ep`` decomposed as the lowering decomposes it."""
    from engines.stablehlo.lowering.lower import decomposed

    return {op_name(n.target) for n in decomposed(ep).graph.nodes if n.op == "call_function"}


def _layer_program(build, shape, axes):
    import torch
    from torch.export import Dim

    from engines.torch_export_tools import export_oblivious_retry

    torch.manual_seed(0)
    mod = build().eval()
    x = torch.randint(0, 10, shape) if isinstance(mod, torch.nn.Embedding) else torch.randn(*shape)
    dims = {ax: Dim(name, min=2, max=64) for ax, name in axes.items()}
    with torch.no_grad():
        return export_oblivious_retry(lambda **o: torch.export.export(mod, (x,), dynamic_shapes=(dims,), **o))


def _case_program(case):
    import torch

    from backends.base import torch_dims
    from backends.torch_export import export
    from engines.torch_export_tools import export_sample

    sizes = case.sizes_for("quick")[0]
    args = [torch.from_numpy(np.array(a)) for a in case.make_inputs(sizes, 0)]
    spec = [{ax: (d.name, max(2, d.min), d.max) for ax, d in axes.items()} for axes in case.dynamic_axes("bounded")]
    sample = export_sample(args, spec)
    return export(case.torch_fn(), sample, tuple(torch_dims(case, "bounded")), case.name, oblivious_retry=True)


def _cases(case_globs: list[str]) -> list:
    """``(name, case)`` of the catalogue's torch-form cases matching ``case_globs`` whose libraries load."""
    if not case_globs:
        return []
    import cases

    return [
        (c.name, c)
        for c in cases.catalogue(checked=False)
        if "torch" in c.forms and any(fnmatch.fnmatch(c.name, g) for g in case_globs) and c.unavailable() is None
    ]


def _collect(programs, names_of, failure: str, unit: str, log) -> tuple[dict[str, set[str]], dict[str, str]]:
    """``({name: users}, {program: why not})``: ``names_of(make())`` for each ``(program, make)``."""
    users: dict[str, set[str]] = {}
    failed: dict[str, str] = {}
    for name, make in programs:
        try:
            found = names_of(make())
        except Exception as e:  # the table names it
            failed[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"
            log(f"{name}: {failure} ({failed[name]})", file=sys.stderr)
            continue
        for op in found:
            users.setdefault(op, set()).add(name)
        log(f"{name}: {len(found)} {unit}", file=sys.stderr)
    return users, failed


def walk(case_globs: list[str], layers: bool = True, log=print) -> tuple[dict[str, set[str]], dict[str, str]]:
    """``({op: users}, {program: why it did not export})`` over the matching cases and the layers."""
    programs: list[tuple[str, Callable]] = [(n, lambda c=c: _case_program(c)) for n, c in _cases(case_globs)]
    if layers:
        programs += [(f"nn.{k}", lambda v=v: _layer_program(*v)) for k, v in _layers().items()]
    return _collect(programs, ops_of, "not exported", "ops", log)


def function_name(func) -> str:
    """A torch function's walk name: ``F.gelu``, ``Tensor.view``, ``Tensor.shape`` (an attribute), ``torch.cat``."""
    name = getattr(func, "__name__", str(func))
    owner = getattr(func, "__self__", None)
    if name in ("__get__", "__set__") and owner is not None:  # a tensor attribute's getter or setter
        return f"Tensor.{getattr(owner, '__name__', '?')}" + ("=" if name == "__set__" else "")
    import torch
    import torch.nn.functional as F

    qual = getattr(func, "__qualname__", "")
    if qual.startswith(("TensorBase.", "Tensor.")):
        return "Tensor." + name
    if getattr(F, name, None) is func:  # (some are torch._C._nn's, re-exported by torch.nn.functional)
        return "F." + name
    if getattr(torch, name, None) is func:
        return "torch." + name
    return f"{getattr(func, '__module__', '?')}:{name}"  # e.g. torch.functional's, torch.linalg's


def resolve_name(name: str):
    """The torch function of a walk name (:func:`function_name`'s inverse)."""
    import torch
    import torch.nn.functional as F

    if ":" in name:
        import importlib

        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)
    space, _, attr = name.partition(".")
    if space == "Tensor":
        if attr.endswith("="):
            return getattr(torch.Tensor, attr[:-1]).__set__
        got = getattr(torch.Tensor, attr)
        return got.__get__ if not callable(got) else got
    return getattr(F if space == "F" else torch, attr)


def lazy_covers(func) -> bool:
    """Whether the lazy path traces ``func`` on a lazy tensor: a method or attribute its
    tensor class defines, or a function its op registry resolves (``tensor._resolve``)."""
    from engines.lazy.hooks import _CREATION
    from engines.lazy.tensor import LazyTensor, UntraceableOp, _resolve

    name = function_name(func)
    if name in {f"torch.{n}" for n in _CREATION}:  # factories: routed by the step's hooks when a size is symbolic
        return True
    if name.startswith("Tensor."):
        attr = name[len("Tensor.") :].rstrip("=")
        if attr in LazyTensor.__dict__:
            return True
    try:
        _resolve(func)
    except UntraceableOp:
        return False
    return True


def functions_of(program, args) -> set[str]:
    """The walk names of every torch function one eager call of ``program(*args)`` meets (on
    any tensor: also those a lazy step applies to constants only, so the list over-approximates)."""
    import torch
    from torch.overrides import TorchFunctionMode

    seen: set[str] = set()

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.add(function_name(func))
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), Record():
        program(*args)
    return seen


def _case_call(case):
    import torch

    sizes = case.sizes_for("quick")[0]
    return case.torch_fn(), [torch.from_numpy(np.array(a)) for a in case.make_inputs(sizes, 0)]


def _layer_call(build, shape, axes):
    import torch

    torch.manual_seed(0)
    mod = build().eval()
    x = torch.randint(0, 10, shape) if isinstance(mod, torch.nn.Embedding) else torch.randn(*shape)
    return mod, [x]


def walk_lazy(case_globs: list[str], layers: bool = True, log=print) -> tuple[dict[str, set[str]], dict[str, str]]:
    """``({function: users}, {program: why it did not run})``: :func:`walk` for the lazy path."""
    programs: list[tuple[str, Callable]] = [(n, lambda c=c: _case_call(c)) for n, c in _cases(case_globs)]
    if layers:
        programs += [(f"nn.{k}", lambda v=v: _layer_call(*v)) for k, v in _layers().items()]
    return _collect(programs, lambda call: functions_of(*call), "did not run", "functions", log)


def op_name(target) -> str:
    """A graph target's name, the same in every process: ATen overloads print as
    ``aten.add.Tensor``, builtins as ``<built-in function add>``; a Python function
    (``torch.sym_min``) by its module and name, not the ``repr`` with its address."""
    if type(target).__name__ == "function":
        return f"{target.__module__}.{target.__qualname__}"
    return str(target)


def lowered_ops() -> set[str]:
    from engines.stablehlo.lowering.registry import LOWERINGS

    return {op_name(t) for t in LOWERINGS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="model_*,zoo_*", help="comma-separated globs of catalogue cases ('' for none)")
    ap.add_argument("--no-layers", action="store_true", help="leave out the torch.nn layer walk")
    ap.add_argument("--path", choices=("stablehlo", "lazy"), default="stablehlo", help="the reference path to walk")
    ap.add_argument("--write", help="write the op list (op, lowered|missing, users) to this file")
    a = ap.parse_args(argv)
    globs = [g for g in a.cases.split(",") if g]
    if a.path == "lazy":
        users, failed = walk_lazy(globs, layers=not a.no_layers)
        have = {fn for fn in users if lazy_covers(resolve_name(fn))}
    else:
        users, failed = walk(globs, layers=not a.no_layers)
        have = lowered_ops()
    rows = sorted(users, key=lambda op: (op in have, -len(users[op]), op))
    print(f"| op | {'lowered' if a.path == 'stablehlo' else 'lazy'} | programs using it |\n|---|---|---|")
    for op in rows:
        u = sorted(users[op])
        print(f"| `{op}` | {'yes' if op in have else '**no**'} | {len(u)}: {', '.join(u[:6])}{' …' if len(u) > 6 else ''} |")
    for name, why in sorted(failed.items()):
        print(f"\nnot {'exported' if a.path == 'stablehlo' else 'run'}: {name}: {why}", end="")
    print()
    if a.write:
        lines = [f"{op}\t{'lowered' if op in have else 'missing'}\t{','.join(sorted(users[op]))}" for op in sorted(users)]
        flag = " --path lazy" if a.path == "lazy" else ""
        head = f"# generated by `python -m benchmarks.scripts.op_walk{flag} --write {a.write}`: op, lowered|missing, users\n"
        with open(a.write, "w", encoding="utf-8") as f:
            f.write(head + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
