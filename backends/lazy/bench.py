"""Per-step cost of the lazy path against torch eager and the C++ lazy tensors.

    .venv/bin/python -m backends.lazy.bench [--repeats 7] [--cases a,b|all] [--paths eager,lazy,...]
                                            [--clock cpu] [--baseline DIR]

For each catalogue case with a torch form (default: all of them; first quick
shape, unbounded mode), seconds per cached call, every path in one run, the
local paths' samples interleaved (one sample of each path in turn):

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
eager; ``verdict``: ``ok`` when lazy is no slower than every peer measured,
``SLOWER`` otherwise. A path that cannot run a case shows ``-`` (the reasons
are listed under the table). ``--baseline DIR`` adds ``lazy_before``: the
``lazy`` path of another checkout (``DIR``, e.g. main's), measured by that
tree's own script in a subprocess per case, just before this tree's samples
of the case. The same steps (:func:`make_step`) are the asv benchmarks in
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

CASES = ["gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch"]  # the small programs
PATHS = ["eager", "lazy", "trace", "torch_lazy_ts"]
XLA_PATH = "torch_xla_lazy"
PEERS = ("torch_lazy_ts", XLA_PATH)
MODE = "unbounded"


def catalogue_cases(checked: bool = True) -> list:
    """Every catalogue case the lazy path could run: a torch form and an unbounded mode
    (``checked``: the catalogue's oracle check, as :func:`cases.catalogue`)."""
    import cases

    return [c.name for c in cases.catalogue(checked) if "torch" in c.forms and MODE in c.modes]


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


def _number(step, args) -> int:
    """Calls per sample: about 20 ms of them."""
    t0 = time.perf_counter()
    step(*args)
    return max(1, min(10000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))


def _sample(step, args, number: int, now) -> float:
    t0 = now()
    for _ in range(number):
        step(*args)
    return (now() - t0) / number


def per_call(step, args, repeats: int, clock: str = "wall") -> float:
    """Median seconds per call; each sample lasts about 20 ms. ``clock="cpu"``
    counts the process's CPU time instead of wall time: steadier on a shared,
    overloaded machine (time spent waiting for a core is not counted)."""
    return interleaved({"step": (step, args)}, repeats, clock)["step"]


def interleaved(steps: dict, repeats: int, clock: str = "wall") -> dict:
    """``{name: median seconds per call}`` of ``steps`` (``{name: (step, args)}``),
    one sample of each in turn per repeat, so load changes hit every path alike."""
    now = CLOCKS[clock]
    numbers = {k: _number(*sa) for k, sa in steps.items()}
    samples: dict = {k: [] for k in steps}
    for _ in range(repeats):
        for k, (step, args) in steps.items():
            samples[k].append(_sample(step, args, numbers[k], now))
    return {k: statistics.median(v) for k, v in samples.items()}


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:160]


def measure_case(name: str, paths, repeats: int, clock: str, failures: dict) -> dict:
    """``{path: seconds or None}`` for one case; a path that fails to build or run
    its step is None, its reason in ``failures[(name, path)]``."""
    steps = {}
    for p in paths:
        try:
            steps[p] = make_step(name, p)
        except Exception as e:  # noqa: BLE001  (any refusal of a path is reported, not fatal)
            failures[name, p] = _reason(e)
    times = interleaved(steps, repeats, clock) if steps else {}
    return {p: times.get(p) for p in paths}


class Worker:
    """A process of this script (``--serve``) that measures the paths it is given, one case per
    request: each C++ lazy tensor runs in a process of its own (torch._lazy's runtime threads
    would otherwise be counted against, and slow, the other paths), and the cases are still
    interleaved across processes. ``env``: ``"main"`` (this interpreter) or ``"xla"``."""

    def __init__(self, paths, repeats: int, clock: str, env: str = "main"):
        from backends import envs

        python, extra = sys.executable, {}
        if env != "main":
            python, extra = envs.python_for(env), envs.env_vars(env)
        cmd = [python, "-m", "backends.lazy.bench", "--serve", "--paths", ",".join(paths),
               "--repeats", str(repeats), "--clock", clock]
        self.paths = list(paths)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=str(envs.ROOT), env={**os.environ, **extra})

    def measure(self, name: str, failures: dict) -> dict:
        """``{path: seconds or None}``; a dead worker gives None with its reason."""
        try:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
            reply = json.loads(self.proc.stdout.readline())
        except (OSError, ValueError):
            for p in self.paths:
                failures[name, p] = f"the {p} worker process died"
            return dict.fromkeys(self.paths)
        for p, why in reply["failures"].items():
            failures[name, p] = why
        return reply["times"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def serve(paths, repeats: int, clock: str) -> None:
    """``--serve``: one case name a line on stdin, one JSON line ``{times, failures}`` back."""
    for line in sys.stdin:
        failures: dict = {}
        times = measure_case(line.strip(), paths, repeats, clock, failures)
        print(json.dumps({"times": times, "failures": {p: why for (_, p), why in failures.items()}}), flush=True)


def _baseline_time(tree: str, name: str, repeats: int, clock: str):
    """The ``lazy`` path's seconds per call on ``name`` measured by the bench script of
    the checkout ``tree`` (its own modules: run with ``tree`` as the working directory)."""
    cmd = [sys.executable, "-m", "backends.lazy.bench", "--json", "--paths", "lazy", "--cases", name,
           "--repeats", str(repeats), "--clock", clock]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tree)
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])[name].get("lazy")
    except (ValueError, KeyError, IndexError, AttributeError):
        return None


def verdict(t: dict) -> str:
    """``ok`` when lazy is no slower than every peer measured, ``SLOWER`` otherwise."""
    peers = [t[p] for p in PEERS if t.get(p) is not None]
    if t.get("lazy") is None or not peers:
        return "-"
    return "ok" if t["lazy"] <= min(peers) else "SLOWER"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cases", default="all", help="comma-separated case names, or all (default: the catalogue)")
    ap.add_argument("--paths", default=",".join(PATHS + [XLA_PATH]))
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall (default) or process CPU time")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout whose lazy path is shown as lazy_before")
    ap.add_argument("--json", action="store_true", help="print {case: {path: seconds}} as one JSON line")
    ap.add_argument("--serve", action="store_true", help="measure the cases named on stdin (see Worker)")
    opts = ap.parse_args(argv)
    paths = opts.paths.split(",")
    if opts.serve:
        return serve(paths, opts.repeats, opts.clock)
    names = catalogue_cases() if opts.cases == "all" else opts.cases.split(",")
    times, failures = run(names, paths, opts.repeats, opts.clock, opts.baseline)
    if opts.json:
        print(json.dumps(times))
        return
    print(table(names, paths, times, bool(opts.baseline)))
    for (n, p), why in failures.items():
        print(f"# - {n} / {p}: {why}")


def run(names, paths, repeats: int, clock: str, baseline=None) -> tuple:
    """``({case: {path: seconds or None}}, {(case, path): why})``: each peer in a worker of its own
    (:class:`Worker`; torch_xla_lazy in the xla environment, when there is one), the rest here."""
    from backends import envs

    here = importlib.util.find_spec("torch_xla") is not None  # this is the xla env
    workers = []
    if "torch_lazy_ts" in paths:
        workers.append(Worker(["torch_lazy_ts"], repeats, clock))
    if XLA_PATH in paths and not here:
        if envs.modules_available("xla", ("torch", "torch_xla"))[0]:
            workers.append(Worker([XLA_PATH], repeats, clock, env="xla"))
    remote = {p for w in workers for p in w.paths}
    local = [p for p in paths if p not in remote and (p != XLA_PATH or here)]
    failures: dict = {}
    times = {}
    try:
        for n in names:
            t = {"lazy_before": _baseline_time(baseline, n, repeats, clock)} if baseline else {}
            for w in workers:
                t.update(w.measure(n, failures))
            t.update(measure_case(n, local, repeats, clock, failures))
            times[n] = t
    finally:
        for w in workers:
            w.close()
    return times, failures


def table(names, paths, times: dict, baseline: bool) -> str:
    """The figures in microseconds, a verdict per case, and a summary line."""
    cols = (["eager"] if "eager" in paths else []) + (["lazy_before"] if baseline else []) + \
        [p for p in paths if p != "eager"]
    cols += (["overhead"] if {"eager", "lazy"} <= set(paths) else [])
    lines = [f"{'case (us per call)':28s}" + "".join(f"{c:>15s}" for c in cols) + f"{'verdict':>9s}"]
    for n in names:
        t = {p: v * 1e6 for p, v in times[n].items() if v is not None}
        if "overhead" in cols and {"eager", "lazy"} <= set(t):
            t["overhead"] = t["lazy"] - t["eager"]
        lines.append(f"{n:28s}" + "".join(f"{t[c]:15.1f}" if c in t else f"{'-':>15s}" for c in cols)
                     + f"{verdict(times[n]):>9s}")
    ran = [verdict(times[n]) for n in names]
    slower = [n for n, v in zip(names, ran) if v == "SLOWER"]
    lines.append(f"# lazy <= every C++ peer measured on {ran.count('ok')} of {len(ran) - ran.count('-')} cases"
                 + (f"; SLOWER on {', '.join(slower)}" if slower else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
