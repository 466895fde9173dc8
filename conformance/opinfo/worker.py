"""A sweep worker: ``python -m conformance.opinfo.worker --path lazy -- ENTRY ...``.

Prints ``{"start": entry}`` before an entry, then one JSON row per verdict, the
entry's last row with ``"done": true`` (see :mod:`.sweep`)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from .paths import LAZY_MODES, run_lazy, run_make_fx, run_stablehlo
from .samples import entry_name, family, op_db, samples
from .sweep import DTYPES, PATHS, Options, stablehlo_modes
from .verdicts import Verdict


def verdicts(op, path: str, opts: Options) -> list[Verdict]:
    """Every verdict of ``op`` on ``path`` (one per sample and mode; one ``no-sample`` row
    when the entry has no sample at ``opts.dtype`` with a symbolic dim)."""
    fam = family(op)
    rows: list[Verdict] = []
    dtype = getattr(torch, opts.dtype)
    if dtype not in op.supported_dtypes("cpu"):
        return [Verdict(entry_name(op), fam, path, "no-sample", message=f"no {opts.dtype} on CPU")]
    limit = opts.limit
    for s in samples(op, dtype, limit):
        if path == "lazy":
            rows += [run_lazy(s, m, fam) for m in LAZY_MODES]
        elif path == "make_fx":
            rows.append(run_make_fx(s, fam))
        else:
            rows += run_stablehlo(s, fam, opts.modes)
    return rows or [Verdict(entry_name(op), fam, path, "no-sample", message="no sample with a dim of size >= 2 both sizes run")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", choices=PATHS, required=True)
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--dtype", choices=DTYPES, default="float32")
    ap.add_argument("--stablehlo-modes", type=stablehlo_modes, default=Options.modes)
    ap.add_argument("entries", nargs="*")
    a = ap.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    torch.set_num_threads(1)
    db = {entry_name(o): o for o in op_db()}
    # the protocol's own stream: anything else printing to stdout (a kernel's C++ log) goes to stderr
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for name in a.entries:
        print(json.dumps({"start": name}), file=out, flush=True)
        rows = verdicts(db[name], a.path, Options(a.limit, a.dtype, a.stablehlo_modes))
        for i, v in enumerate(rows):
            print(json.dumps(v.row() | ({"done": True} if i == len(rows) - 1 else {})), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
