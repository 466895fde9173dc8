"""Cached-call latency of the StableHLO-path backends beside jax's own calls, in any mode.

    .venv/bin/python -m benchmarks.scripts.stablehlo_executors [--mode bounded] [--e 1000] [--calls 400]
        [--rounds 15] [--processes 1]

One case (gnn_edge_divide by default, one shape), one XLA thread
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``,
``OMP_NUM_THREADS=1``, as the harness sets in its workers; the script re-runs
itself with them when they are not set). Rows, each a call on an already-seen
shape followed by a sync, timed one call at a time, every row timed as the
harness times it in every mode: the call on inputs already in the program's
native form (padded, on the device) to outputs on the device:

``jax.jit``                  ``jax.jit`` of the case's jax form, device arrays at the live shape
``jax.jit(exported.call)``   jax's own call of the ``jax_export`` backend's module, the same
``jax_jit``                  the ``jax_jit`` backend in ``--mode`` (bounded/bucketed: its
                             static program on inputs padded on the host to the bound/bucket:
                             the same compute as the padded executors; unbounded: static)
``jax_export``               that backend's program in ``--mode``, called as the harness does
                             (``convert`` untimed, then ``program(*args)`` + ``sync``)
``stablehlo_xla``            the same for the torch form, lowered by us
``stablehlo_interp``         the reference interpreter (worker process; not in bucketed mode);
                             its ``call_breakdown()`` medians are printed below the table
``… [MODE]``                 with ``--also MODE``: jax_export and stablehlo_xla in that mode too,
                             interleaved with the rest (e.g. ``--mode bounded --also unbounded
                             --e 2048``: the same compute, compared under the same load)

Rows are interleaved in ``--rounds`` rounds of ``--calls`` calls (the
interpreter gets a tenth of them); the table gives the median and the 10th/90th
percentiles over every call, each median over the ``jax.jit(exported.call)``
and ``jax_export`` medians, and ``e2e``: the median of what a user pays from
host arrays to a host result (``convert`` + call + ``to_numpy``: host padding,
copies and slicing included; a tenth of the calls). With ``--processes N``
the script runs N fresh processes and gives, per row, the median of their
medians and their range (min–max) beside it. Every row's output is checked
against the case's oracle first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ENV = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "OMP_NUM_THREADS": "1"}
MODULE = "benchmarks.scripts.stablehlo_executors"


def _one_thread(argv, module: str = MODULE) -> None:
    """Re-run ``module`` (this script by default) with :data:`ENV` unless it is
    already set (jax and torch read it when they start)."""
    if all(os.environ.get(k) == v for k, v in ENV.items()):
        return
    os.environ.update(ENV)
    os.execv(sys.executable, [sys.executable, "-m", module, *argv])


def harness_call(backend, case, mode, arrays, programs=None):
    """``(call, e2e)`` running the backend's program as the harness does
    (started, prepared, warmed up on ``arrays``' shape, converted again as the
    cached phase does): ``call()`` is the timed region, ``e2e()`` convert +
    call + ``to_numpy``. ``programs`` (a list) gets the program."""
    backend.startup()
    program = backend.prepare(case, mode)
    if programs is not None:
        programs.append(program)
    for _ in range(2):  # the second convert sees the program the first call made (stablehlo_xla)
        args = program.convert(arrays)
        out = program(*args)
        program.sync(out)
        np.testing.assert_allclose(program.to_numpy(out), case.expected(arrays), rtol=1e-6, err_msg=backend.name)

    def call():
        program.sync(program(*args))

    def e2e():
        out = program(*program.convert(arrays))
        program.sync(out)
        program.to_numpy(out)

    return call, e2e


def jax_calls(case, arrays, exported):
    """``jax.jit`` of the jax form and ``jax.jit(exported.call)``, on device arrays."""
    import jax

    args = [jax.device_put(a) for a in arrays]
    direct, via_export = jax.jit(case.jax_fn()), jax.jit(exported.call)
    for f in (direct, via_export):
        np.testing.assert_allclose(np.asarray(f(*args)), case.expected(arrays), rtol=1e-6)

    def e2e(f):
        return lambda: np.asarray(f(*[jax.device_put(a) for a in arrays]))

    return {
        "jax.jit": (lambda: direct(*args).block_until_ready(), e2e(direct)),
        "jax.jit(exported.call)": (lambda: via_export(*args).block_until_ready(), e2e(via_export)),
    }


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


def measure(a) -> dict:
    """One process's rows: per row ``{"median", "p10", "p90", "e2e", "calls"}``
    in seconds, and the interpreter's split."""
    import cases
    from backends.jax_export import JaxExport
    from backends.jax_jit import JaxJit
    from backends.stablehlo_interp import StablehloInterp
    from backends.stablehlo_xla import StablehloXla

    case = cases.get(a.case)
    arrays = case.make_inputs({"e": a.e}, seed=0)
    jx, jj, sx, si = JaxExport(), JaxJit(), StablehloXla(), StablehloInterp()
    made: list = []
    export_call = harness_call(jx, case, a.mode, arrays, made)  # first: jax.jit(exported.call) needs its module
    calls = jax_calls(case, arrays, made[0].exported)
    jit_mode = a.mode if a.mode in JaxJit.modes else "static"
    calls["jax_jit"] = harness_call(jj, case, jit_mode, arrays)
    calls["jax_export"] = export_call
    calls["stablehlo_xla"] = harness_call(sx, case, a.mode, arrays)
    if a.also:  # the same programs in another mode, interleaved in the same rounds (the same load)
        calls[f"jax_export [{a.also}]"] = harness_call(JaxExport(), case, a.also, arrays)
        calls[f"stablehlo_xla [{a.also}]"] = harness_call(StablehloXla(), case, a.also, arrays)
    interp = a.mode in StablehloInterp.modes and not a.no_interp
    if interp:
        calls["stablehlo_interp"] = harness_call(si, case, a.mode, arrays)
    times = {name: [] for name in calls}
    ends = {name: [] for name in calls}
    split = {"interp_eval_s": [], "ipc_s": []}

    def record_split():
        for k, v in split.items():
            v.append(si.call_breakdown()[k])

    try:
        for _ in range(a.rounds):
            for name, (call, e2e) in calls.items():
                n = max(1, a.calls // 10) if name == "stablehlo_interp" else a.calls
                times[name] += sample(call, n, record_split if name == "stablehlo_interp" else None)
                ends[name] += sample(e2e, max(1, n // 10))
    finally:
        si.close()
    rows = {
        name: {
            "median": statistics.median(ts),
            "p10": pct(ts, 0.1),
            "p90": pct(ts, 0.9),
            "e2e": statistics.median(ends[name]),
            "calls": len(ts),
        }
        for name, ts in times.items()
    }
    return {"rows": rows, "split": {k: statistics.median(v) for k, v in split.items() if v}, "jax_jit_mode": jit_mode}


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="gnn_edge_divide")
    ap.add_argument("--mode", default="bounded", choices=("bounded", "unbounded", "bucketed"))
    ap.add_argument("--e", type=int, default=1000, help="the case's dim e")
    ap.add_argument("--calls", type=int, default=400, help="calls per row per round")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--processes", type=int, default=1, help="fresh processes; medians and their range over them")
    ap.add_argument(
        "--also",
        choices=("bounded", "unbounded", "bucketed"),
        help="also the jax_export and stablehlo_xla rows in this mode, interleaved with the others",
    )
    ap.add_argument("--no-interp", action="store_true", help="leave out the stablehlo_interp row")
    ap.add_argument("--json", action="store_true", help="print one process's rows as JSON (used by --processes)")
    a = ap.parse_args(argv)
    _one_thread(argv)
    if a.json:
        print(json.dumps(measure(a)))
        return {}
    runs = []
    child = (
        ["--case", a.case, "--mode", a.mode, "--e", str(a.e), "--calls", str(a.calls), "--rounds", str(a.rounds), "--json"]
        + (["--also", a.also] if a.also else [])
        + (["--no-interp"] if a.no_interp else [])
    )
    for _ in range(a.processes):
        if a.processes == 1:
            runs.append(measure(a))
            continue
        out = subprocess.run([sys.executable, "-m", MODULE, *child], check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return report(a, runs)


def report(a, runs) -> dict:
    """Print the table; return per row the median (over processes) of the per-process medians, in µs."""
    names = list(runs[0]["rows"])
    agg = {}
    for name in names:
        per = [r["rows"][name] for r in runs]
        agg[name] = {k: statistics.median(p[k] for p in per) * 1e6 for k in ("median", "p10", "p90", "e2e")}
        agg[name]["lo"] = min(p["median"] for p in per) * 1e6
        agg[name]["hi"] = max(p["median"] for p in per) * 1e6
        agg[name]["calls"] = sum(p["calls"] for p in per)
    print(
        f"{a.case} ({a.mode}; jax_jit {runs[0]['jax_jit_mode']}), e={a.e}; {a.rounds} rounds x {a.calls} calls; "
        f"{len(runs)} process(es); XLA_FLAGS={os.environ.get('XLA_FLAGS')!r} "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    print("call: the timed region (inputs native, outputs on the device); e2e: host arrays to a host result")
    rng = "min–max over processes" if len(runs) > 1 else "p10–p90"
    print(f"{'row':<24}{'calls':>7}{'median µs':>11}{rng:>24}{'/ jit(exp.call)':>17}{'/ jax_export':>14}{'e2e µs':>10}")
    base, ref = agg["jax.jit(exported.call)"]["median"], agg["jax_export"]["median"]
    for name in names:
        r = agg[name]
        lo, hi = (r["lo"], r["hi"]) if len(runs) > 1 else (r["p10"], r["p90"])
        print(
            f"{name:<24}{r['calls']:>7}{r['median']:>11.1f}{f'{lo:.1f}–{hi:.1f}':>24}{r['median'] / base:>17.2f}"
            f"{r['median'] / ref:>14.2f}{r['e2e']:>10.1f}"
        )
    splits = [r["split"] for r in runs if r["split"]]
    if splits:
        ev = statistics.median(s["interp_eval_s"] for s in splits)
        ipc = statistics.median(s["ipc_s"] for s in splits)
        print(
            f"stablehlo_interp per call: eval_module {ev * 1e3:.2f} ms, "
            f"the rest (pickling, pipes, attribute conversion) {ipc * 1e3:.2f} ms"
        )
    return {name: r["median"] for name, r in agg.items()}


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
