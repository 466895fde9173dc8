"""Cached-call latency of the StableHLO-path backends beside jax's own calls.

    .venv/bin/python -m benchmarks.scripts.stablehlo_executors [--e 1000] [--calls 400] [--rounds 15]

One case (gnn_edge_divide by default, one shape), one process, one XLA thread
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``,
``OMP_NUM_THREADS=1``, as the harness sets in its workers; the script re-runs
itself with them when they are not set). Rows, each a call on an already-seen
shape followed by a sync, timed one call at a time:

``jax.jit``                  ``jax.jit`` of the case's jax form
``jax.jit(exported.call)``   jax's own call of the ``jax_export`` backend's module
``jax_export``               that backend's program, called as the harness does
                             (``convert`` untimed, then ``program(*args)`` + ``sync``)
``stablehlo_xla``            the same for the torch form, lowered by us
``stablehlo_interp``         the reference interpreter (worker process); its
                             ``call_breakdown()`` medians are printed below the table

Rows are interleaved in ``--rounds`` rounds of ``--calls`` calls (the
interpreter gets a tenth of them); the table gives the median and the 10th/90th
percentiles over every call, and each median over the ``jax.jit(exported.call)``
and ``jax_export`` medians. Every row's output is checked against the case's
oracle first.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ENV = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "OMP_NUM_THREADS": "1"}


def _one_thread(argv, module: str = "benchmarks.scripts.stablehlo_executors") -> None:
    """Re-run ``module`` (this script by default) with :data:`ENV` unless it is
    already set (jax and torch read it when they start)."""
    if all(os.environ.get(k) == v for k, v in ENV.items()):
        return
    os.environ.update(ENV)
    os.execv(sys.executable, [sys.executable, "-m", module, *argv])


def harness_call(backend, case, mode, arrays):
    """``call()`` running the backend's program as the harness does (started,
    prepared, warmed up on ``arrays``' shape); and the backend."""
    backend.startup()
    backend.reset_counters()
    program = backend.prepare(case, mode)
    args = backend.convert(arrays)
    out = program(*args)
    backend.sync(out)
    np.testing.assert_allclose(backend.to_numpy(out), case.expected(arrays), rtol=1e-6, err_msg=backend.name)

    def call():
        backend.sync(program(*args))

    return call


def jax_calls(case, arrays, exported):
    """``jax.jit`` of the jax form and ``jax.jit(exported.call)``, on device arrays."""
    import jax

    args = [jax.device_put(a) for a in arrays]
    direct, via_export = jax.jit(case.jax_fn()), jax.jit(exported.call)
    for f in (direct, via_export):
        np.testing.assert_allclose(np.asarray(f(*args)), case.expected(arrays), rtol=1e-6)
    return {"jax.jit": lambda: direct(*args).block_until_ready(),
            "jax.jit(exported.call)": lambda: via_export(*args).block_until_ready()}


def sample(call, n: int, after=None) -> list:
    """``n`` timings of ``call()``; ``after()`` runs untimed after each."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
        if after is not None:
            after()
    return out


def pct(xs, q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="gnn_edge_divide")
    ap.add_argument("--mode", default="bounded")
    ap.add_argument("--e", type=int, default=1000, help="the case's dim e")
    ap.add_argument("--calls", type=int, default=400, help="calls per row per round")
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args(argv)
    _one_thread(argv)

    import cases
    from backends.jax_export import JaxExport
    from backends.stablehlo_interp import StablehloInterp
    from backends.stablehlo_xla import StablehloXla

    case = cases.get(a.case)
    arrays = case.make_inputs({"e": a.e}, seed=0)
    jx, sx, si = JaxExport(), StablehloXla(), StablehloInterp()
    calls = {}
    calls["jax_export"] = harness_call(jx, case, a.mode, arrays)
    calls = {**jax_calls(case, arrays, jx.exported), **calls}
    calls["stablehlo_xla"] = harness_call(sx, case, a.mode, arrays)
    calls["stablehlo_interp"] = harness_call(si, case, a.mode, arrays)
    times = {name: [] for name in calls}
    split = {"interp_eval_s": [], "ipc_s": []}

    def record_split():
        for k, v in split.items():
            v.append(si.call_breakdown()[k])

    try:
        for _ in range(a.rounds):
            for name, call in calls.items():
                if name == "stablehlo_interp":
                    times[name] += sample(call, max(1, a.calls // 10), record_split)
                else:
                    times[name] += sample(call, a.calls)
    finally:
        si.close()
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"{case.name} ({a.mode}), e={a.e}; {a.rounds} rounds; XLA_FLAGS={os.environ.get('XLA_FLAGS')!r} "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{'row':<24}{'calls':>7}{'median µs':>11}{'p10 µs':>9}{'p90 µs':>9}"
          f"{'/ jit(exported.call)':>22}{'/ jax_export':>14}")
    for name, ts in times.items():
        print(f"{name:<24}{len(ts):>7}{med[name] * 1e6:>11.1f}{pct(ts, .1) * 1e6:>9.1f}{pct(ts, .9) * 1e6:>9.1f}"
              f"{med[name] / med['jax.jit(exported.call)']:>22.2f}{med[name] / med['jax_export']:>14.2f}")
    print(f"stablehlo_interp per call: eval_module {statistics.median(split['interp_eval_s']) * 1e3:.2f} ms, "
          f"the rest (pickling, pipes, attribute conversion) {statistics.median(split['ipc_s']) * 1e3:.2f} ms")
    return med


if __name__ == "__main__":
    main()
