"""Per-step cost of the lazy path against torch eager and the C++ lazy tensors.

    .venv/bin/python -m benchmarks.scripts.lazy [--repeats 7] [--cases a,b|all] [--paths eager,lazy,...]
                                            [--clock cpu] [--baseline DIR] [--processes N] [--markdown]

For each catalogue case with a torch form (default: all of them; first quick
shape, unbounded mode), seconds per cached call. Every path runs in a worker
process of its own (eager, the reference, too: the same conditions for all),
the paths' samples interleaved (one sample of each path in turn, one process
sampling at a time), each on the same clock (``--clock cpu``: the worker's
process CPU time; see :func:`run`):

``eager``           the torch form on CPU tensors;
``lazy``            a cached step of ours (record + step-log lookup + run);
``trace``           our recording + graph collection + full cache key (no run):
                    what a step cost before the step log;
``record``          our recording alone: the step's leaves and ops, released
                    unsynced (so ``lazy - record`` is the sync around the kernel);
``kernel``          the step's compiled kernel alone, called in a loop of its own;
``torch_lazy_ts``   torch._lazy on its TorchScript backend (``mark_step`` per call);
``torch_xla_lazy``  torch_xla's LazyTensor (``torch_xla.sync`` per call), measured
                    in the xla environment by a subprocess of this script; skipped
                    (shown as ``-``) where that environment is missing.

Both peers are C++ lazy tensors run through their harness backends
(``prepare`` / ``convert`` / ``sync``), unbounded mode. ``overhead`` = lazy -
eager; ``verdict``: ``ok`` when lazy is no slower than every peer measured,
``SLOWER`` otherwise. A path that cannot run a case shows ``-`` (the reasons
are listed under the table). ``--baseline DIR`` adds ``lazy_before`` (and
``record_before`` when ``record`` is measured): those paths of another checkout
(``DIR``, e.g. main's), this script's worker on that tree's modules, its samples
interleaved with the others. ``record`` and ``kernel`` are not in the default
paths (nor asv's): they split a step for a findings page. The same
steps (:func:`make_step`) are the asv benchmarks in
``benchmarks/bench_lazy.py`` and ``bench_lazy_catalogue.py``.

``--processes N`` repeats the whole measurement with N fresh sets of workers (process
to process variation: import order, allocator state, address layout) and pools their
samples; ``--markdown`` prints the median, the interquartile range (IQR) of the pooled
samples and the ratio to eager per case and path, as a Markdown table (the findings
pages' form; ``docs/findings/2026-12-02-lazy.md``), then per path the geometric mean of
those ratios over the zoo's cases and over the others (:func:`geomeans`: the zoo table's
``cached_x``, ``docs/findings/2026-12-05-lazy-step.md``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
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
    program = backend.prepare(case, mode)
    args = program.convert(arrays)
    sync = program.sync

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
        from backends.torch_xla_lazy import TorchXlaLazy

        step, args = _backend_step(TorchXlaLazy(), case, arrays, mode if mode != "unbounded" else "static")
    else:
        from engines import lazy

        args = [torch.from_numpy(a) for a in arrays]
        if path == "eager":
            step = case.torch_fn()
        else:
            axes = case.dynamic_axes(mode)
            fn = lazy.LazyFunction(
                case.torch_fn(),
                mode,
                [{ax: d.name for ax, d in a.items()} for a in axes],
                [{ax: d.max for ax, d in a.items() if d.max is not None} for a in axes],
            )
            fn(*args)  # compile once
            if path == "kernel":
                step, args = _kernel(fn, args)
            else:
                step = {"lazy": fn, "trace": fn.trace, "record": _recording(fn)}[path]
    step(*args)
    return step, args


def _kernel(fn, args):
    """``(kernel, its inputs)``: the compiled kernel of ``fn``'s step (a ``LazyFunction``) and the
    inputs its last sync passed it (the step's leaves and the constants of its parameters).
    A step that syncs more than once: its last sync's kernel."""
    compiled = fn.ctx.last
    real, seen = compiled.run, []
    compiled.run = lambda *inputs: seen.append(inputs) or real(*inputs)
    try:
        fn(*args)
    finally:
        compiled.run = real
    if not seen or fn.ctx.last is not compiled:
        raise RuntimeError("the step's last kernel changed between two calls")
    return real, list(seen[-1])


def _recording(fn):
    """A step of ``fn`` (a ``LazyFunction``) that records and releases, without the sync: its
    log set aside unkeyed, so each step follows the last full step's, as a cached step does."""
    ctx = fn.ctx

    def record(*args):
        recovers, ctx.recovers = ctx.recovers, True  # (as in a call: a kept optimistic call is replayed)
        try:
            out, flat = fn._record(args)
        finally:
            ctx.recovers = recovers
        ctx.log = None
        del out, flat
        ctx.release()

    return record


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


def serve(paths, clock: str) -> None:
    """``--serve``: a worker's loop, one JSON request a line on stdin, one JSON reply a line.
    ``{"prepare": case}`` builds (compiles, warms, calibrates) the case's steps of ``paths``
    and replies ``{"failures": {path: why}}``; ``{"sample": true}`` takes one sample of each
    and replies ``{"times": {path: seconds per call}}``."""
    now = CLOCKS[clock]
    steps: dict = {}
    numbers: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        failures: dict = {}
        if "prepare" in req:
            steps.clear()
            for p in paths:
                try:
                    steps[p] = make_step(req["prepare"], p)
                except Exception as e:
                    failures[p] = _reason(e)
            numbers = {p: _number(*sa) for p, sa in steps.items()}
            reply: dict = {"failures": failures}
        else:
            reply = {"times": {p: _sample(*sa, numbers[p], now) for p, sa in steps.items()}}
        print(json.dumps(reply), flush=True)


class Worker:
    """A process that measures ``paths`` (``--serve``; :func:`run` gives every path one of its
    own). ``env``: ``"main"`` (this interpreter) or ``"xla"``. ``tree``: another checkout
    whose modules the paths run on (this script's :func:`serve`, that tree's ``backends`` and
    ``cases``); ``label`` renames the paths in the replies (``{"lazy": "lazy_before"}``)."""

    def __init__(self, paths, clock: str, env: str = "main", tree=None, label=None):
        from backends import envs

        python, extra = sys.executable, {}
        if env != "main":
            python, extra = envs.python_for(env), envs.env_vars(env)
        args = ["--serve", "--paths", ",".join(paths), "--clock", clock]
        if tree is None:
            cmd, cwd = [python, "-m", "benchmarks.scripts.lazy", *args], str(envs.ROOT)
        else:  # this file's serve loop on the other tree's modules (cwd first on sys.path)
            code = (
                f"import runpy, sys; sys.argv = ['bench', *{args!r}]; "
                f"runpy.run_path({os.path.abspath(__file__)!r}, run_name='__main__')"
            )
            cmd, cwd = [python, "-c", code], tree
        self.paths = list(paths)
        self.label = dict(label or {})
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd, env={**os.environ, **extra}
        )

    def _ask(self, req: dict):
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            return json.loads(self.proc.stdout.readline())
        except (OSError, ValueError):
            return None

    def prepare(self, name: str, failures: dict) -> bool:
        """Build the case's steps; False (reasons in ``failures``) when none of them runs."""
        reply = self._ask({"prepare": name})
        if reply is None:
            reply = {"failures": dict.fromkeys(self.paths, "the worker process died")}
        for p, why in reply["failures"].items():
            failures[name, self.label.get(p, p)] = why
        return len(reply["failures"]) < len(self.paths)

    def sample(self) -> dict:
        """``{path: seconds per call}``: one sample of each step built; {} if the worker died."""
        reply = self._ask({"sample": True}) or {"times": {}}
        return {self.label.get(p, p): t for p, t in reply["times"].items()}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


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
    ap.add_argument("--processes", type=int, default=1, help="fresh sets of workers whose samples are pooled (default 1)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table: median, IQR and ratio to eager")
    ap.add_argument("--serve", action="store_true", help="a worker: measure as asked on stdin (see serve)")
    opts = ap.parse_args(argv)
    paths = opts.paths.split(",")
    if opts.serve:
        return serve(paths, opts.clock)
    names = catalogue_cases() if opts.cases == "all" else opts.cases.split(",")
    pooled, failures = samples(names, paths, opts.repeats, opts.clock, opts.baseline, opts.processes)
    times = {n: {p: statistics.median(v) if v else None for p, v in by.items()} for n, by in pooled.items()}
    if opts.markdown:
        print(markdown(names, pooled))
        print("\n".join(geomeans(names, pooled)))
    elif opts.json:
        print(json.dumps(times))
        return
    else:
        print(table(names, paths, times, bool(opts.baseline)))
    for (n, p), why in failures.items():
        print(f"# - {n} / {p}: {why}")


def run(names, paths, repeats: int, clock: str, baseline=None, processes: int = 1) -> tuple:
    """``({case: {path: median seconds or None}}, {(case, path): why})``: :func:`samples`' medians."""
    pooled, failures = samples(names, paths, repeats, clock, baseline, processes)
    return {n: {p: statistics.median(v) if v else None for p, v in by.items()} for n, by in pooled.items()}, failures


def samples(names, paths, repeats: int, clock: str, baseline=None, processes: int = 1) -> tuple:
    """``({case: {path: [seconds per call, ...]}}, {(case, path): why})``: the samples of
    ``processes`` runs of :func:`measure`, each with fresh workers, pooled."""
    pooled: dict = {n: {} for n in names}
    failures: dict = {}
    for _ in range(processes):
        got, why = measure(names, paths, repeats, clock, baseline)
        failures.update(why)
        for n, by in got.items():
            for p, v in by.items():
                pooled[n].setdefault(p, []).extend(v)
    return pooled, failures


def measure(names, paths, repeats: int, clock: str, baseline=None) -> tuple:
    """``({case: {path: [seconds per call, ...]}}, {(case, path): why})``, ``repeats``
    samples a path. Every path (eager too) runs in a worker process of its own (:class:`Worker`; torch_xla_lazy in the xla
    environment), so each system is measured under the same conditions: a fresh
    interpreter holding only its own modules, threads and allocations (torch._lazy's
    runtime threads, or the lazy path's caches, never slow another path). The workers'
    samples are interleaved -- one sample of each path in turn, one process sampling at
    a time -- and each takes the same clock, the worker's own (``cpu``: process CPU time).
    ``baseline``: another checkout, its ``lazy`` (and ``record``) in one more worker, as
    ``lazy_before`` (``record_before``)."""
    from backends import envs

    here = importlib.util.find_spec("torch_xla") is not None  # this is the xla env
    failures: dict = {}
    workers = []
    for p in paths:
        if p == XLA_PATH and not here:
            ok, _why = envs.modules_available("xla", ("torch", "torch_xla"))
            if not ok:
                continue  # no xla environment: the column shows -
            workers.append(Worker([p], clock, env="xla"))
        else:
            workers.append(Worker([p], clock))
    before = ["lazy"] + (["record"] if "record" in paths else []) if baseline else []
    if baseline:
        workers.insert(0, Worker(before, clock, tree=baseline, label={p: p + "_before" for p in before}))
    times = {}
    try:
        for n in names:
            live = [w for w in workers if w.prepare(n, failures)]
            got: dict = {}
            for _ in range(repeats):
                for w in live:
                    for p, t in w.sample().items():
                        got.setdefault(p, []).append(t)
            times[n] = {p: got.get(p, []) for p in [b + "_before" for b in before] + list(paths)}
    finally:
        for w in workers:
            w.close()
    return times, failures


def quartiles(v: list) -> tuple:
    """``(q1, median, q3)`` of the samples ``v``."""
    if len(v) < 2:
        return v[0], v[0], v[0]
    q1, med, q3 = statistics.quantiles(v, n=4)
    return q1, med, q3


def markdown(names, pooled: dict) -> str:
    """One row per case and path: median and IQR in microseconds per call, the ratio of the
    medians to eager's, and the number of samples."""
    lines = ["| case | path | median (us) | IQR (us) | x eager | samples |", "|---|---|---:|---:|---:|---:|"]
    for n in names:
        eager = pooled[n].get("eager")
        base = quartiles(eager)[1] if eager else None
        for p, v in pooled[n].items():
            if not v:
                lines.append(f"| {n} | {p} | - | - | - | 0 |")
                continue
            q1, med, q3 = quartiles(v)
            ratio = f"{med / base:.2f}" if base else "-"
            lines.append(f"| {n} | {p} | {med * 1e6:.1f} | {(q3 - q1) * 1e6:.1f} | {ratio} | {len(v)} |")
    return "\n".join(lines)


def geomeans(names, pooled: dict) -> list:
    """Per group of cases (the zoo's, ``zoo_*``; the others) and path, the geometric mean of
    median / eager's median over the cases where every path measured ran."""
    lines = []
    for group, mine in (("zoo", True), ("catalogue", False)):
        ran = [n for n in names if n.startswith("zoo_") == mine and pooled[n] and all(pooled[n].values())]
        if not ran or not all(pooled[n].get("eager") for n in ran):
            continue
        for p in pooled[ran[0]]:
            if p != "eager":
                logs = [math.log(quartiles(pooled[n][p])[1] / quartiles(pooled[n]["eager"])[1]) for n in ran]
                lines.append(
                    f"# {group}: {p} x eager, geometric mean over {len(ran)} cases: {math.exp(sum(logs) / len(logs)):.2f}"
                )
    return lines


def table(names, paths, times: dict, baseline: bool) -> str:
    """The figures in microseconds, a verdict per case, and a summary line."""
    before = [b for b in ("lazy_before", "record_before") if baseline and any(b in times[n] for n in names)]
    cols = (["eager"] if "eager" in paths else []) + before + [p for p in paths if p != "eager"]
    cols += ["overhead"] if {"eager", "lazy"} <= set(paths) else []
    lines = [f"{'case (us per call)':28s}" + "".join(f"{c:>15s}" for c in cols) + f"{'verdict':>9s}"]
    for n in names:
        t = {p: v * 1e6 for p, v in times[n].items() if v is not None}
        if "overhead" in cols and {"eager", "lazy"} <= set(t):
            t["overhead"] = t["lazy"] - t["eager"]
        lines.append(
            f"{n:28s}" + "".join(f"{t[c]:15.1f}" if c in t else f"{'-':>15s}" for c in cols) + f"{verdict(times[n]):>9s}"
        )
    ran = [verdict(times[n]) for n in names]
    slower = [n for n, v in zip(names, ran, strict=False) if v == "SLOWER"]
    lines.append(
        f"# lazy <= every C++ peer measured on {ran.count('ok')} of {len(ran) - ran.count('-')} cases"
        + (f"; SLOWER on {', '.join(slower)}" if slower else "")
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
