"""Benchmark: einx 0.4.3 vs einx_symbolic vs raw torch on the report's divide loop.

    .venv/bin/python -m benchmarks.scripts.einx_symbolic [--repeats 5] [--skip-einx] [--clock cpu]

Each loop measurement runs in a fresh process (so the graph builds are
included): ``n`` novel edge counts E = 1000..1000+n-1, d = 8, op
``divide("e d, e -> e d", d, c)`` (raw torch: ``d / c.unsqueeze(-1)``).
Cached-call overhead: one shape, many calls, microseconds per call.
Medians over ``--repeats`` runs. ``--clock cpu`` times with the process's CPU clock
(``time.process_time``: time the process was descheduled on a loaded machine is not
counted) instead of the wall clock (``time.perf_counter``).

The asv benchmarks (``benchmarks/bench_einx_symbolic.py``) take the
workload from here: :data:`DESC`, :func:`inputs`, :func:`fresh`.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

DESC = "e d, e -> e d"
D = 8
FIRST_E = 1000  # the n novel edge counts of a loop: FIRST_E, FIRST_E + 1, ...


def inputs(edges):
    """``[(d, c), ...]``: one pair of torch inputs of ``divide(DESC, d, c)`` per edge count."""
    import torch

    return [(torch.randn(e, D), torch.rand(e) + 1) for e in edges]


def fresh():
    """The einx_symbolic module with nothing cached, as in a fresh process: its graphs
    and the parses of descriptions (``clear_cache`` keeps those) are forgotten."""
    from engines import einx_symbolic as ex
    from engines.einx_symbolic import parse

    ex.clear_cache()
    parse.parse.cache_clear()
    return ex


def _impl(name):
    if name == "torch":
        return lambda d, c: d / c.unsqueeze(-1)
    if name == "einx":
        import einx

        return lambda d, c: einx.divide(DESC, d, c)
    from engines import einx_symbolic as ex

    return lambda d, c: ex.divide(DESC, d, c)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def worker(name, n, mode, clock="wall"):
    f = _impl(name)
    now = CLOCKS[clock]
    if mode == "first":  # the first call of the process (the graph build) and the next, on a novel size
        (d, c), (d2, c2) = inputs([FIRST_E, FIRST_E + 1])
        t = now()
        f(d, c)
        t1 = now()
        f(d2, c2)
        dt, second = t1 - t, now() - t1
    elif mode == "loop":
        data = inputs(range(FIRST_E, FIRST_E + n))
        t = now()
        for d, c in data:
            f(d, c)
        dt = now() - t
    else:  # cached: warm up once, then n calls on one shape
        ((d, c),) = inputs([FIRST_E])
        for _ in range(50):
            f(d, c)
        t = now()
        for _ in range(n):
            f(d, c)
        dt = (now() - t) / n
    builds = None
    if name == "einx_symbolic":
        from engines import einx_symbolic as ex

        builds = ex.compile_count()
    print(json.dumps({"seconds": dt, "builds": builds, **({"second": second} if mode == "first" else {})}))


def _once(name, n, mode, clock="wall"):
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.scripts.einx_symbolic", "--worker", name, str(n), mode, clock],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_all(n, mode, repeats, names=("torch", "einx_symbolic", "einx"), clock="wall"):
    """``(medians, fastest, builds)`` in seconds per implementation; runs are
    interleaved so machine load hits all alike (the table reports medians; the
    fastest runs are context for a noisy shared machine)."""
    vals = {k: [] for k in names}
    builds = None
    for _ in range(repeats):
        for name in names:
            r = _once(name, n, mode, clock)
            vals[name].append(r["seconds"])
            if name == "einx_symbolic":
                builds = r["builds"]
    return {k: statistics.median(v) for k, v in vals.items()}, {k: min(v) for k, v in vals.items()}, builds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-einx", action="store_true", help="only raw torch and einx_symbolic (quick iterations)")
    p.add_argument("--first", action="store_true", help="only the first and second call of a fresh process (the build's cost)")
    p.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: time.perf_counter; cpu: time.process_time (not counting time descheduled under load)",
    )
    p.add_argument("--worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)  # IMPL N MODE [CLOCK]
    a = p.parse_args(argv)
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), *a.worker[2:])
        return
    names = ("torch", "einx_symbolic") if a.skip_einx else ("torch", "einx_symbolic", "einx")
    if a.first:
        m, fastest, _ = measure_all(0, "first", a.repeats, names, a.clock)
        print(
            f"first call of a fresh process (us), median / fastest of {a.repeats}: "
            + ", ".join(f"{k} {m[k] * 1e6:.0f} / {fastest[k] * 1e6:.0f}" for k in names)
        )
        return
    rows, fastest = [], {}
    for n in (50, 500):
        m, fastest[n], builds = measure_all(n, "loop", a.repeats, names, a.clock)
        rows.append((f"loop {n} novel sizes (s)", m["torch"], m.get("einx", float("nan")), m["einx_symbolic"], builds))
    m, _, _ = measure_all(20000, "cached", a.repeats, names, a.clock)
    c_torch, c_einx, c_sym = m["torch"], m.get("einx", float("nan")), m["einx_symbolic"]
    print(f"divide({DESC!r}), d=8, medians of {a.repeats} fresh processes, {a.clock} clock")
    print(
        f"{'measurement':32} {'raw torch':>11} {'einx 0.4.3':>11} {'einx_symbolic':>14} {'einx/torch':>11} {'sym/torch':>10} {'sym builds':>10}"
    )
    for label, t, e, s, b in rows:
        print(f"{label:32} {t:11.5f} {e:11.5f} {s:14.5f} {e / t:10.1f}x {s / t:9.2f}x {b:>10}")
    print(
        f"{'cached call (us/call)':32} {c_torch * 1e6:11.2f} {c_einx * 1e6:11.2f} {c_sym * 1e6:14.2f} {c_einx / c_torch:10.2f}x "
        f"{c_sym / c_torch:9.2f}x"
    )
    print(
        f"cached overhead over raw torch (us/call): einx {1e6 * (c_einx - c_torch):.2f}, einx_symbolic {1e6 * (c_sym - c_torch):.2f}"
    )
    for n in (50, 500):
        m = fastest[n]
        print(
            f"fastest of {a.repeats}, loop {n}: raw torch {m['torch']:.5f} s, einx_symbolic {m['einx_symbolic']:.5f} s "
            f"({m['einx_symbolic'] / m['torch']:.2f}x)"
        )


if __name__ == "__main__":
    main()
