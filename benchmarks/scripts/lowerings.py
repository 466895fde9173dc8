"""Three torch.export → StableHLO lowerings side by side: ours, torch-mlir's, torchax's.

Programs: the op-sample table's that claim the lowering (``conformance/op_samples``:
the per-op samples and the breadth programs, each exported with its dims, checked
against torch eager at its sizes), or with ``--catalogue`` the catalogue's torch-form cases (exported
unbounded as the backends export them, checked against the case's oracle at
its quick sizes; ``model_*`` cases left out). Per program and lowering: whether
it lowered, whether ``@main`` keeps ``?`` dims in its arguments (``?in``) and
in its results (``?out``: the output sizes are computed in the module, not
fixed at export), and whether one XLA program of it matches at every size.

Lowerings: ours (``engines.stablehlo.lower``), torch-mlir
(``torch_mlir.fx.export_and_import(..., output_type="stablehlo")`` legalized by
``engines.stablehlo.shape_dialect``) and torchax
(``torchax.export.exported_program_to_stablehlo``; its weights are @main's
first arguments). torchax 0.0.13 imports beside torch 2.9.1 only, so where it
cannot be imported here its column is made in the ``xla`` environment
(``make xla-env``) by this script run there (``--lowerings torchax``), and
merged by program name.

    python -m benchmarks.scripts.lowerings [--catalogue] [--only NAME,...] [--json OUT]

Prints a Markdown table and a one-line tally per lowering.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

LOWERING_NAMES = ("ours", "torch_mlir", "torchax")


@dataclass
class Target:
    """One program to lower: ``export(positional)`` its ExportedProgram (``positional``:
    one parameter per input, which torch 2.9's ``run_decompositions`` needs, see
    :func:`backends.torch_xla_export.named_module`);
    ``inputs()`` ``(label, NumPy inputs)`` per size; ``reference(inputs)`` the expected outputs."""

    name: str
    table: str
    export: Any
    inputs: Any
    reference: Any
    rtol: float
    atol: float


def _torch(a):
    import torch

    return torch.from_numpy(a) if isinstance(a, np.ndarray) else a


def _flat(out):
    import torch

    if isinstance(out, torch.Tensor):
        return [out.detach().numpy()]
    res = []
    for o in out:
        res += _flat(o)
    return res


def _positional(fn, n: int):
    from backends.torch_xla_export import named_module

    return named_module(fn, [f"x{i}" for i in range(n)])


def _export_test_program(s, positional: bool):
    import torch
    import torch.fx.experimental._config as fx_config

    from conformance.op_samples import export_shapes

    sample = tuple(_torch(a) for a in s.inputs(s.lowered.export_n, seed=0))
    dyn = export_shapes(s.dims)
    module, shapes = (_positional(s.module(), len(sample)), dyn) if positional else (s.module(), {"xs": dyn})
    with fx_config.patch(backed_size_oblivious=s.lowered.oblivious):
        return torch.export.export(module, sample, dynamic_shapes=shapes, **s.lowered.export_kw)


def test_target(s, table: str = "op") -> Target:
    """The target of one sample of the op-sample table (``conformance/op_samples``), checked
    against torch eager at ``s.sizes``."""
    return Target(
        s.name,
        table,
        lambda positional: _export_test_program(s, positional),
        lambda: ((f"n={n}", s.inputs(n)) for n in s.sizes),
        lambda inputs: _flat(s.module()(*[_torch(a) for a in inputs])),
        s.rtol,
        s.atol,
    )


def _test_targets() -> list[Target]:
    from conformance.op_samples import SAMPLES

    # (the table names of the two StableHLO tables the samples came from)
    return [test_target(s, "op" if s.origin == "lowering" else s.origin) for s in SAMPLES if s.lowered is not None]


def _catalogue_targets() -> list[Target]:
    import cases

    def export(case, positional):
        import torch

        from backends.base import torch_dims
        from backends.peers.common import dim_spec
        from backends.torch_export import export as export_fn
        from engines.torch_export_tools import export_oblivious_retry, export_sample

        first = case.make_inputs(case.sizes_for("quick")[0], seed=0)
        sample = export_sample([torch.from_numpy(np.ascontiguousarray(a)) for a in first], dim_spec(case, "unbounded"))
        dims = tuple(torch_dims(case, "unbounded"))
        if not positional:
            return export_fn(case.torch_fn(), sample, dims, case.name, oblivious_retry=True)
        module = _positional(case.torch_fn(), len(sample))
        return export_oblivious_retry(
            lambda **kw: torch.export.export(module, tuple(sample), dynamic_shapes=tuple(d or None for d in dims), **kw)
        )

    def target(case):
        tol = case.tol()
        return Target(
            case.name,
            "catalogue",
            lambda positional: export(case, positional),
            lambda: ((str(s), case.make_inputs(s, seed=i)) for i, s in enumerate(case.sizes_for("quick"))),
            lambda inputs: [case.expected(inputs)],
            tol.rtol,
            tol.atol,
        )

    return [
        target(c)
        for c in cases.catalogue()
        if "torch" in c.forms and "unbounded" in c.modes and not c.name.startswith(("model_", "zoo_"))
    ]


def _signature(text: str) -> tuple[bool, bool]:
    """Whether @main's arguments and its results keep ``?`` dims."""
    head = re.search(r"func\.func (?:public )?@main\((.*?)\)\s*->\s*(.*?)\{\n", text, re.S)
    if not head:
        return False, False
    return "?" in head.group(1), "?" in head.group(2)


def _run(lowered, t: Target) -> str:
    """'match' when one XLA program of the module equals the reference at every size, else what went wrong."""
    from engines.stablehlo import Module, XlaProgram
    from engines.stablehlo.execution.executors import to_host

    text, weights, canonical = lowered
    try:
        prog = XlaProgram(Module(text, t.name, [f"x{i}" for i in range(64)]))
    except Exception as e:  # the module does not parse
        return f"error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    for n, inputs in t.inputs():
        want = t.reference(inputs)
        arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in inputs]
        try:
            out = prog(*prog.convert([*weights, *arrays], canonicalize=canonical))
        except Exception as e:
            return f"error at {n}: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        got = [np.asarray(to_host(o)) for o in (out if isinstance(out, (list, tuple)) else [out])]
        if len(got) != len(want):
            return f"wrong output count at {n}"
        for g, w in zip(got, want, strict=True):
            w = np.asarray(w)
            if g.shape != w.shape:
                return f"wrong shape at {n}: {g.shape} != {w.shape}"
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=t.rtol, atol=t.atol, equal_nan=True):
                return f"wrong values at {n}"
    return "match"


def lower_ours(ep):
    from engines.stablehlo import lower

    return lower(ep), [], False


def lower_torch_mlir(ep):
    from backends.torch_mlir_stablehlo import lower_with_torch_mlir

    return lower_with_torch_mlir(ep), [], False


def lower_torchax(ep):
    from backends.torchax_stablehlo import lower_with_torchax

    text, weights = lower_with_torchax(ep)
    return text, weights, True  # jax's x64 is off under torchax: int64 inputs are i32 in @main


LOWERINGS = {"ours": lower_ours, "torch_mlir": lower_torch_mlir, "torchax": lower_torchax}


def torchax_here() -> str | None:
    """``None`` if torchax imports in this interpreter, else why not (its first line)."""
    if importlib.util.find_spec("torchax") is None:
        return "torchax is not installed here"
    try:
        import torchax  # noqa: F401
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return None


def rows_for(targets: list[Target], names) -> list[dict]:
    """One row per target: each lowering's verdict, seconds and signature."""
    rows = []
    positional = "torchax" in names  # torchax runs beside torch 2.9, whose re-trace needs it
    for t in targets:
        row: dict = {"program": t.name, "table": t.table}
        try:
            ep = t.export(positional)
        except Exception as e:
            row["export"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
            rows.append(row)
            continue
        for name in names:
            t0 = time.perf_counter()
            try:
                lowered = LOWERINGS[name](ep)
            except Exception as e:
                row[name] = f"not lowered: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]}"
                continue
            row[f"{name}_s"] = round(time.perf_counter() - t0, 3)
            row[f"{name}_dims"], row[f"{name}_out_dims"] = _signature(lowered[0])
            row[name] = _run(lowered, t)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def torchax_elsewhere(argv: list[str]) -> list[dict]:
    """The torchax column, made by this script in the ``xla`` environment."""
    from backends import envs

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "torchax.json")
        env = dict(os.environ, **envs.ENVS["xla"].get("vars", {}))
        cmd = [envs.python_for("xla"), "-m", "benchmarks.scripts.lowerings", *argv, "--lowerings", "torchax", "--json", out]
        subprocess.run(cmd, cwd=str(envs.ROOT), env=env, check=True)
        with open(out) as f:
            return json.load(f)


def _cell(r: dict, name: str) -> str:
    if "export" in r:
        return "–"
    v = str(r.get(name, "–"))
    if name + "_dims" in r:
        v += f" (?in {'yes' if r[name + '_dims'] else 'no'}, ?out {'yes' if r[name + '_out_dims'] else 'no'})"
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--catalogue", action="store_true", help="the catalogue's torch-form cases instead of the tests' programs")
    ap.add_argument("--lowerings", default=",".join(LOWERING_NAMES), help="comma-separated, of " + ", ".join(LOWERINGS))
    ap.add_argument("--json", default="", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    names = [n for n in args.lowerings.split(",") if n]
    only = set(filter(None, args.only.split(",")))
    targets = [t for t in (_catalogue_targets() if args.catalogue else _test_targets()) if not only or t.name in only]
    elsewhere = "torchax" in names and len(names) > 1 and torchax_here() is not None
    here = [n for n in names if not (elsewhere and n == "torchax")]
    rows = rows_for(targets, here)
    if elsewhere:
        passed = [*(["--catalogue"] if args.catalogue else []), *(["--only", args.only] if args.only else [])]
        theirs = {r["program"]: r for r in torchax_elsewhere(passed)}
        for r in rows:
            other = theirs.get(r["program"], {})
            r.update({k: v for k, v in other.items() if k.startswith("torchax")})
            if "export" in other and "export" not in r:
                r["torchax"] = f"not exported (torch 2.9.1): {other['export']}"
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("| program | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for r in rows:
        print(f"| {r['program']} | " + " | ".join(_cell(r, n) if "export" not in r else r["export"] for n in names) + " |")
    done = [r for r in rows if "export" not in r]
    for name in names:
        tally = {
            k: sum(1 for r in done if str(r.get(name, "")).startswith(k)) for k in ("match", "wrong", "error", "not lowered")
        }
        print(f"{name}: {len(done)} exported programs: " + ", ".join(f"{v} {k}" for k, v in tally.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
