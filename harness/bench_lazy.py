"""Per-step tracing overhead of the lazy path against torch eager.

    .venv/bin/python -m harness.bench_lazy [--repeats 7] [--cases a,b]

For each catalogue case with a torch form (first quick shape, unbounded mode):
median seconds per call of torch eager, of a cached lazy step (trace + key +
run), and of tracing alone (trace + key); ``overhead`` = lazy - eager. The
same steps are the asv benchmarks in ``harness/benchmarks/bench_lazy.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.benchmarks.bench_lazy import CASES, make_step


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
        t = {p: per_call(*make_step(name, p), opts.repeats) * 1e6 for p in ("eager", "lazy", "trace")}
        print(f"{name:24s} {t['eager']:10.1f} {t['lazy']:10.1f} {t['trace']:10.1f} {t['lazy'] - t['eager']:12.1f}")


if __name__ == "__main__":
    main()
