"""The bounded executor's cached call beside per-shape compiled XLA on the same module,
and the cost of padding as the live size shrinks relative to the bound.

    .venv/bin/python -m benchmarks.scripts.stablehlo_bounded [--case gnn_edge_divide] [--calls 300] [--rounds 5]

One process, one XLA thread (as ``bench_executors``). The case's torch form is
exported with its bounds and lowered once (``#stablehlo.bounds``); then, for
live sizes from the bound down to 1/64 of it, rows of one call on an
already-seen shape, timed one call at a time (median µs over ``--rounds`` x
``--calls``, interleaved):

``bounded``             :class:`BoundedXlaProgram` as a backend calls it: NumPy
                        in, host padding to the bound, transfer, run, live size
                        read back, host slice (one compile for all sizes)
``bounded exec``        the same executable on arguments already padded and on
                        the device: what the padded computation itself costs
``per-shape``           :class:`XlaProgram` (refined to this shape, its own
                        compile) on device arguments, as the harness times it
``per-shape+transfer``  the same with the host-to-device transfer in the call,
                        the like-for-like peer of ``bounded``

and the compile seconds of each path. Every output is checked against the
case's oracle first; the padding is filled with NaN there, so a value the
padder failed to mask would fail the check.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks.scripts.stablehlo_executors import _one_thread, sample


def lowered(case):
    """The case's bounded StableHLO module (torch.export with ``Dim(max=)`` + our lowering)."""
    import torch

    from backends.base import torch_dims
    from backends.torch_export import export
    from engines.stablehlo import lower

    arrays = case.make_inputs(case.sweep[0], seed=0)
    dims = tuple(torch_dims(case, "bounded"))  # size-oblivious retry as the stablehlo backends (ResNet's side)
    ep = export(case.torch_fn(), [torch.from_numpy(a) for a in arrays], dims, case.name, oblivious_retry=True)
    return lower(ep, bounded=True)


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="gnn_edge_divide")
    ap.add_argument("--calls", type=int, default=300, help="calls per row per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fractions", default="1,0.5,0.25,0.125,0.0625,0.015625", help="live sizes as fractions of the bound")
    a = ap.parse_args(argv)
    _one_thread(argv, "benchmarks.scripts.stablehlo_bounded")

    import cases
    from engines.stablehlo.execution.module import Module
    from engines.stablehlo.execution.xla import XlaProgram, device_put
    from engines.stablehlo.execution.xla_padded import BoundedXlaProgram

    case = cases.get(a.case)
    dyn = [d for d in case.dims if d.dynamic]
    if not all(d.max is not None for d in dyn):
        raise SystemExit(f"{case.name}: every dynamic dim needs a bound for this benchmark")
    module = Module(lowered(case), f"{case.name} (bounded)", [i.name for i in case.inputs])
    compile_s = {"bounded": [], "per-shape": []}
    bounded = BoundedXlaProgram(module, on_compile=lambda s, _: compile_s["bounded"].append(s))
    checked = BoundedXlaProgram(module, pad_value=np.nan)
    per_shape = XlaProgram(module, on_compile=lambda s, _: compile_s["per-shape"].append(s))
    rows, sizes = {}, []
    for f in (float(x) for x in a.fractions.split(",")):
        live = {d.name: max(d.min, 1, round(d.max * f)) for d in dyn}
        arrays = case.make_inputs(live, seed=0)
        want = case.expected(arrays)
        host = [np.ascontiguousarray(x) for x in module.cast(arrays)]  # a call on NumPy arrays stages them itself
        dev = per_shape.convert(arrays)
        for prog, args in ((checked, checked.convert(arrays)), (bounded, host)):
            np.testing.assert_allclose(prog(*args)[0], want, rtol=1e-5, atol=1e-6, err_msg=f"bounded {live}")
        np.testing.assert_allclose(np.asarray(per_shape(*dev)[0]), want, rtol=1e-5, atol=1e-6)
        exe = bounded._exe
        padded = exe.pad(host)
        key = (f, tuple(live.values()))
        sizes.append(key)
        rows[key] = {
            "bounded": lambda h=host: bounded(*h).numpy(),  # pad, copy, run, copy back, slice
            "bounded exec": lambda p=padded, e=exe: [
                o.block_until_ready() for o in e.exe.execute_sharded(p).consume_with_handlers(e.handlers)
            ],
            "per-shape": lambda d=dev: [o.block_until_ready() for o in per_shape(*d)],
            "per-shape+transfer": lambda h=host: [o.block_until_ready() for o in per_shape(*device_put(h))],
        }
    times = {k: {name: [] for name in r} for k, r in rows.items()}
    for _ in range(a.rounds):
        for k, r in rows.items():
            for name, call in r.items():
                times[k][name] += sample(call, a.calls)
    bound = {d.name: d.max for d in dyn}
    print(f"{case.name}: bound {bound}; {a.rounds} x {a.calls} calls per row; one XLA thread")
    print(
        f"compiles: bounded {len(compile_s['bounded'])} ({sum(compile_s['bounded']):.3f} s in all), "
        f"per-shape {len(compile_s['per-shape'])} ({statistics.mean(compile_s['per-shape']):.3f} s each)"
    )
    names = list(next(iter(rows.values())))
    print(f"{'live':>16}{'live/bound':>11}" + "".join(f"{n + ' µs':>22}" for n in names) + f"{'bounded/per-shape+tr':>22}")
    out = {}
    for k in sizes:
        f, live = k
        med = {n: statistics.median(times[k][n]) * 1e6 for n in names}
        out[k] = med
        print(
            f"{live!s:>16}{f:>11.4f}"
            + "".join(f"{med[n]:>22.1f}" for n in names)
            + f"{med['bounded'] / med['per-shape+transfer']:>22.2f}"
        )
    return out


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.1f} s)")
