"""What the fork server saves a job: ``python -m benchmarks.scripts.forkserver``.

Runs one job (``--case``, ``--backend``, ``--mode``; default
``gnn_edge_divide[torch_eager-unbounded]``) ``--rounds`` times forked from the
fork server and as many times spawned, alternating, so both see the same load
on a shared machine; prints the median wall time of a job (the runner's
``run_one``: start, measure, records) and of its ``startup_s`` each way. The
fork server's own start (once per run) is reported apart, not in the medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scripts.forkserver")
    ap.add_argument("--case", default="gnn_edge_divide")
    ap.add_argument("--backend", default="torch_eager")
    ap.add_argument("--mode", default="unbounded")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    from harness import runner

    (combo,) = runner.plan(a.case, a.backend, a.mode)
    out = tempfile.mkdtemp(prefix="dynshape-bench-")
    runners = {
        how: runner.Runner(out, progress=False, repeats=1, warmup=0, fork_server=how == "fork") for how in ("fork", "spawn")
    }
    t0 = time.perf_counter()
    first = runners["fork"].run_one(combo, lambda r: None)
    print(
        f"fork server start + first job: {time.perf_counter() - t0:.2f} s "
        f"(preload {first[0]['machine']['worker_start']['preload_s']:.2f} s)"
    )
    wall: dict = {"fork": [], "spawn": []}
    startup: dict = {"fork": [], "spawn": []}
    for _ in range(a.rounds):
        for how, r in runners.items():
            t0 = time.perf_counter()
            got = r.run_one(combo, lambda r: None)
            wall[how].append(time.perf_counter() - t0)
            startup[how].append(got[0]["startup_s"])
            assert got[0]["machine"]["worker_start"]["how"] == how, got[0]["machine"]
    print(f"{combo.id}, {a.rounds} rounds, medians:")
    for how in wall:
        print(f"  {how:5}  job {statistics.median(wall[how]):6.2f} s   startup_s {statistics.median(startup[how]):6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
