"""Per-step cost of the lazy path against torch eager and the C++ lazy tensors.

    .venv/bin/python -m backends.lazy.bench [--repeats 7] [--cases a,b] [--paths eager,lazy,...] [--clock cpu]

For each catalogue case with a torch form (first quick shape, unbounded mode),
seconds per cached call, every path in one run:

``eager``           the torch form on CPU tensors;
``lazy``            a cached step of ours (record + step-log lookup + run);
``trace``           our recording + graph collection + full cache key (no run):
                    what a step cost before the step log;
``torch_lazy_ts``   torch._lazy on its TorchScript backend (``mark_step`` per call);
``torch_xla_lazy``  torch_xla's LazyTensor (``torch_xla.sync`` per call), measured
                    in the xla environment by a subprocess of this script; skipped
                    (shown as ``-``) where that environment is missing.

Both peers are C++ lazy tensors run through their harness backends
(``prepare`` / ``convert`` / ``sync``), unbounded mode. ``overhead`` = lazy -
eager. The same steps (:func:`make_step`) are the asv benchmarks in
``harness/benchmarks/bench_lazy.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ["gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch"]
PATHS = ["eager", "lazy", "trace", "torch_lazy_ts"]
XLA_PATH = "torch_xla_lazy"
MODE = "unbounded"


def _case_inputs(case_name):
    import cases

    case = cases.get(case_name)
    return case, case.make_inputs(case.sizes_for("quick")[0], seed=0)


def _backend_step(backend, case, arrays, mode):
    backend.startup()
    backend.reset_counters()
    program = backend.prepare(case, mode)
    args = backend.convert(arrays)
    sync = backend.sync

    def step(*a):
        out = program(*a)
        sync(out)
        return out

    return step, args


def make_step(case_name, path, mode=MODE):
    """``(step, args)`` for one catalogue case on one path, compiled and warmed up."""
    import torch

    torch.set_num_threads(1)  # the machine is shared: one thread keeps samples stable
    case, arrays = _case_inputs(case_name)
    if path == "torch_lazy_ts":
        from backends.torch_lazy_ts import TorchLazyTs

        step, args = _backend_step(TorchLazyTs(), case, arrays, mode)
    elif path == XLA_PATH:
        from backends.torch_xla.lazy import TorchXlaLazy

        step, args = _backend_step(TorchXlaLazy(), case, arrays, mode if mode != "unbounded" else "static")
    else:
        from backends import lazy

        args = [torch.from_numpy(a) for a in arrays]
        if path == "eager":
            step = case.torch_fn()
        else:
            axes = case.dynamic_axes(mode)
            fn = lazy.LazyFunction(case.torch_fn(), mode, [{ax: d.name for ax, d in a.items()} for a in axes],
                                   [{ax: d.max for ax, d in a.items() if d.max is not None} for a in axes])
            fn(*args)  # compile once
            step = fn if path == "lazy" else fn.trace
    step(*args)
    return step, args


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def per_call(step, args, repeats: int, clock: str = "wall") -> float:
    """Median seconds per call; each sample lasts about 20 ms. ``clock="cpu"``
    counts the process's CPU time instead of wall time: steadier on a shared,
    overloaded machine (time spent waiting for a core is not counted)."""
    now = CLOCKS[clock]
    t0 = time.perf_counter()
    step(*args)
    number = max(1, min(10000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
    samples = []
    for _ in range(repeats):
        t0 = now()
        for _ in range(number):
            step(*args)
        samples.append((now() - t0) / number)
    return statistics.median(samples)


def _xla_times(case_names, repeats, clock) -> dict:
    """``{case: seconds}`` of torch_xla_lazy from a run of this script in the xla env, or {} without it.

    torch_xla's unbounded mode does not compile on CPU, so its cached step is
    measured in static mode (one shape, compiled once: the same cached step)."""
    from backends import envs

    ok, _ = envs.modules_available("xla", ("torch", "torch_xla"))
    if not ok:
        return {}
    cmd = [envs.python_for("xla"), "-m", "backends.lazy.bench", "--json", "--paths", XLA_PATH,
           "--cases", ",".join(case_names), "--repeats", str(repeats), "--clock", clock]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=str(envs.ROOT),
                          env={**os.environ, **envs.env_vars("xla")})
    if proc.returncode != 0:
        print(f"# {XLA_PATH}: the xla-env run failed: {proc.stderr.strip()[-500:]}", file=sys.stderr)
        return {}
    return {c: t[XLA_PATH] for c, t in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--paths", default=",".join(PATHS + [XLA_PATH]))
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall (default) or process CPU time")
    ap.add_argument("--json", action="store_true", help="print {case: {path: seconds}} as one JSON line")
    opts = ap.parse_args(argv)
    names, paths = opts.cases.split(","), opts.paths.split(",")
    here = importlib.util.find_spec("torch_xla") is not None  # this is the xla env
    local = [p for p in paths if p != XLA_PATH or here]
    times = {n: {p: per_call(*make_step(n, p), opts.repeats, opts.clock) for p in local} for n in names}
    if XLA_PATH in paths and not here:
        for n, t in _xla_times(names, opts.repeats, opts.clock).items():
            times[n][XLA_PATH] = t
    if opts.json:
        print(json.dumps(times))
        return
    cols = paths + (["overhead"] if {"eager", "lazy"} <= set(paths) else [])
    print(f"{'case (us per call)':24s}" + "".join(f"{c:>16s}" for c in cols))
    for n in names:
        t = {p: v * 1e6 for p, v in times[n].items()}
        if "overhead" in cols:
            t["overhead"] = t["lazy"] - t["eager"]
        print(f"{n:24s}" + "".join(f"{t[c]:16.1f}" if c in t else f"{'-':>16s}" for c in cols))


if __name__ == "__main__":
    main()
