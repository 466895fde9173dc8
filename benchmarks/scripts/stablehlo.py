"""Benchmark of the StableHLO reference path (engines/stablehlo).

For a few torch modules with dynamic dims:
  * lowering time (``lower(ep)``: decompositions + emission + MLIR verify), and
    the decompositions alone, the lowering's (``decomposed``) beside torch's own
    ``run_decompositions``, which asks the C++ dispatcher for its CIA ops ~50 times,
  * per concrete shape: XLA refine+compile time (one compile per shape) vs
    XLA run time (cached executable) vs reference-interpreter run time
    (isolated worker; 0 compiles, shape-agnostic).
Medians over --reps runs.  Usage:

    python -m benchmarks.scripts.stablehlo [--sizes 1 8 64] [--reps 3]

(``bench_executors`` beside it measures cached-call latency against jax.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch.export import Dim

from engines.stablehlo.execution.interpreter import InterpreterExecutor
from engines.stablehlo.execution.xla_executor import XlaExecutor
from engines.stablehlo.lowering.lower import decomposed, decompositions, lower


class Expand(torch.nn.Module):
    def forward(self, x, y):
        return x.expand(y.shape[0] * 2, -1, -1) + 1.0


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.ln = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16), torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.ln(x + self.l2(torch.nn.functional.gelu(self.l1(x))))


class Attn(torch.nn.Module):
    def forward(self, q, k):
        a = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 4.0, -1)
        return torch.bmm(a, k)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.gn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.gn(self.c(x)).mean((2, 3))


class GNN(torch.nn.Module):
    def forward(self, x, src, dst):
        msg = torch.index_select(x, 0, src)
        return torch.zeros_like(x).index_add(0, dst, msg)


def _f(*s):
    return np.random.default_rng(sum(s)).standard_normal(s).astype(np.float32)


def modules():
    b, n, e = Dim("b", min=1, max=256), Dim("n", min=1), Dim("e", min=1)
    yield ("expand", Expand(), lambda s: [_f(1, 4, 8), _f(s, 8)], {"x": None, "y": {0: b}})
    yield ("mlp", MLP(), lambda s: [_f(s, 16)], {"x": {0: b}})
    yield ("attention", Attn(), lambda s: [_f(2, s, 8), _f(2, s, 8)], {"q": {1: n}, "k": {1: n}})
    yield ("conv2d_gn", Conv(), lambda s: [_f(2, 3, s + 2, s + 2)], {"x": {2: Dim("h", min=1), 3: Dim("w", min=1)}})
    yield (
        "gnn",
        GNN(),
        lambda s: [_f(s, 8), np.arange(2 * s, dtype=np.int64) % s, (np.arange(2 * s, dtype=np.int64) * 7) % s],
        {"x": {0: n}, "src": {0: e}, "dst": {0: e}},
    )


def med(xs):
    return statistics.median(xs) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    interp = InterpreterExecutor(isolated=True)
    rows = []
    print(
        f"{'module':<11}{'lower ms':>10}{'size':>6}{'xla compile ms':>16}{'xla run ms':>12}{'interp run ms':>15}{'compiles':>10}"
    )
    try:
        for name, mod, make, dyn in modules():
            sample = tuple(torch.from_numpy(x) for x in make(3))
            ep = torch.export.export(mod, sample, dynamic_shapes=dyn)
            lt, dt_, ot, et = [], [], [], []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                text = lower(ep)
                lt.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                dec = ep.run_decompositions(decompositions())  # torch's own
                dt_.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                decomposed(ep)  # lower's: the CIA ops materialized once
                ot.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                lower(dec, decompose=False)  # emission + parse/verify only
                et.append(time.perf_counter() - t0)
            print(
                f"# {name}: lower {med(lt):.1f} ms = decomposed {med(ot):.1f} ms (torch's run_decompositions"
                f" {med(dt_):.1f} ms) + emit/verify {med(et):.1f} ms",
                flush=True,
            )
            xla = XlaExecutor()
            interp.run(text, make(a.sizes[0]))  # warm the worker
            for s in a.sizes:
                args = make(s)
                xla.run(text, args)  # compiles exactly once for this shape
                comp = xla.stats.compile_seconds[-1] + xla.stats.refine_seconds[-1]
                xr, ir_ = [], []
                for _ in range(a.reps):
                    t0 = time.perf_counter()
                    xla.run(text, args)
                    xr.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    interp.run(text, args)
                    ir_.append(time.perf_counter() - t0)
                rows.append((name, med(lt), s, comp * 1e3, med(xr), med(ir_), xla.compile_count()))
                print(
                    f"{name:<11}{med(lt):>10.1f}{s:>6}{comp * 1e3:>16.1f}{med(xr):>12.2f}{med(ir_):>15.1f}"
                    f"{xla.compile_count():>10}",
                    flush=True,
                )
    finally:
        interp.close()
    return rows


if __name__ == "__main__":
    main()
