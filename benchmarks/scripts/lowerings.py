"""Three torch.export → StableHLO lowerings side by side on the StableHLO tests' programs.

For each program of ``tests/stablehlo`` (the per-op table and the breadth
table): export it once with its ``Dim``s, lower it with ours
(``engines.stablehlo.lower``) and with torch-mlir
(``torch_mlir.fx.export_and_import(..., output_type="stablehlo")`` legalized by
``engines.stablehlo.shape_dialect``), and say per lowering whether it lowered,
whether ``@main`` keeps ``?`` dims, and whether one XLA program of it
matches torch eager at every size of the program's sweep. torchax is listed
with the reason it cannot run here (its import fails on torch 2.13).

    python -m benchmarks.scripts.lowerings [--only NAME,...] [--json OUT]

Prints a Markdown table and a one-line tally per lowering.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings

import numpy as np


def _programs():
    sys.path.insert(0, ".")
    from tests.stablehlo.cases_breadth import PROGRAMS
    from tests.stablehlo.cases_stablehlo import CASES

    return [("op", c) for c in CASES] + [("breadth", p) for p in PROGRAMS]


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


def _export(p):
    import torch
    import torch.fx.experimental._config as fx_config

    sample = tuple(_torch(a) for a in p.make(p.export_n, np.random.default_rng(0)))
    with fx_config.patch(backed_size_oblivious=p.oblivious):
        dyn = tuple(p.dyn.values()) if isinstance(p.dyn, dict) else p.dyn  # the per-op table names its inputs
        return torch.export.export(p.module, sample, dynamic_shapes={"xs": dyn}, **getattr(p, "export_kw", {}))


def _keeps_dims(text: str) -> bool:
    head = re.search(r"func\.func (?:public )?@main\((.*?)\)\s*->", text, re.S)
    return bool(head and "?" in head.group(1))


def _run(text, p):
    """'match' when one XLA program of ``text`` equals eager at every size, else what went wrong."""
    from engines.stablehlo import Module, XlaProgram
    from engines.stablehlo.execution.executors import to_host

    try:
        return _compare(XlaProgram(Module(text, p.name, [f"x{i}" for i in range(64)])), p, to_host)
    except Exception as e:  # the module does not parse or compile
        return f"error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"


def _compare(prog, p, to_host) -> str:
    for n in p.sizes:
        inputs = p.make(n, np.random.default_rng(n))
        want = _flat(p.module(*[_torch(a) for a in inputs]))
        arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in inputs]
        try:
            out = prog(*prog.convert(arrays))
        except Exception as e:
            return f"error at n={n}: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        got = [np.asarray(to_host(o)) for o in (out if isinstance(out, (list, tuple)) else [out])]
        if len(got) != len(want):
            return f"wrong output count at n={n}"
        for g, w in zip(got, want, strict=True):
            if g.shape != w.shape:
                return f"wrong shape at n={n}: {g.shape} != {w.shape}"
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=p.rtol, atol=p.atol, equal_nan=True):
                return f"wrong values at n={n}"
    return "match"


def lower_ours(ep) -> str:
    from engines.stablehlo import lower

    return lower(ep)


def lower_torch_mlir(ep) -> str:
    from backends.torch_mlir_stablehlo import lower_with_torch_mlir

    return lower_with_torch_mlir(ep)


LOWERINGS = {"ours": lower_ours, "torch_mlir": lower_torch_mlir}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--json", default="", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    only = set(filter(None, args.only.split(",")))
    rows = []
    for table, p in _programs():
        if only and p.name not in only:
            continue
        row = {"program": p.name, "table": table}
        try:
            ep = _export(p)
        except Exception as e:
            row["export"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
            rows.append(row)
            continue
        for name, lower in LOWERINGS.items():
            t0 = time.perf_counter()
            try:
                text = lower(ep)
            except Exception as e:
                row[name] = f"not lowered: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
                continue
            row[f"{name}_s"] = round(time.perf_counter() - t0, 3)
            row[f"{name}_dims"] = _keeps_dims(text)
            row[name] = _run(text, p)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print("| program | ours | torch-mlir | both keep ? |")
    print("|---|---|---|---|")
    for r in rows:
        both = "–" if "export" in r else ("yes" if r.get("ours_dims") and r.get("torch_mlir_dims") else "no")
        print(f"| {r['program']} | {r.get('ours', r.get('export', '–'))} | {r.get('torch_mlir', '–')} | {both} |")
    for name in LOWERINGS:
        done = [r for r in rows if "export" not in r]
        tally = {
            k: sum(1 for r in done if str(r.get(name, "")).startswith(k)) for k in ("match", "wrong", "error", "not lowered")
        }
        print(f"{name}: {len(done)} exported programs: " + ", ".join(f"{v} {k}" for k, v in tally.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
