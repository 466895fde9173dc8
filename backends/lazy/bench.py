"""Per-step tracing overhead of the lazy path against torch eager.

    .venv/bin/python -m backends.lazy.bench [--repeats 7] [--cases a,b]

For each catalogue case with a torch form (first quick shape, unbounded mode):
median seconds per call of torch eager, of a cached lazy step (trace + key +
run), and of tracing alone (trace + key); ``overhead`` = lazy - eager. The
same steps (:func:`make_step`) are the asv benchmarks in
``harness/benchmarks/bench_lazy.py``.

Every lazy step retraces the program (that is the lazy-tensor model), so the
cached cost is tracing + cache lookup + running the generated FX module.
``path``: ``eager`` (the torch form on tensors), ``lazy`` (a cached step in
unbounded mode), ``trace`` (recording + graph collection + cache key only).
"""

from __future__ import annotations

import argparse
import statistics
import time

CASES = ["gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch"]
PATHS = ["eager", "lazy", "trace"]


def make_step(case_name, path, mode="unbounded"):
    """``(step, args)`` for one catalogue case on one path, compiled and warmed up."""
    import torch

    import cases
    from backends import lazy

    torch.set_num_threads(1)  # the machine is shared: one thread keeps samples stable
    case = cases.get(case_name)
    sizes = case.sizes_for("quick")[0]
    args = [torch.from_numpy(a) for a in case.make_inputs(sizes, seed=0)]
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


def per_call(step, args, repeats: int) -> float:
    """Median seconds per call; each sample lasts about 20 ms."""
    t0 = time.perf_counter()
    step(*args)
    number = max(1, min(10000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            step(*args)
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cases", default=",".join(CASES))
    opts = ap.parse_args(argv)
    print(f"{'case':24s} {'eager us':>10s} {'lazy us':>10s} {'trace us':>10s} {'overhead us':>12s}")
    for name in opts.cases.split(","):
        t = {p: per_call(*make_step(name, p), opts.repeats) * 1e6 for p in PATHS}
        print(f"{name:24s} {t['eager']:10.1f} {t['lazy']:10.1f} {t['trace']:10.1f} {t['lazy'] - t['eager']:12.1f}")


if __name__ == "__main__":
    main()
