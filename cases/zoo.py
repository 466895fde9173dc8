"""The generated model zoo: what its families (``cases/zoo_hf.py``, ``zoo_tv.py``, ``zoo_pyg.py``,
``zoo_timm.py``, ``zoo_diffusers.py``) share.

Each family enumerates the architectures of one model library (transformers'
auto-model mappings, torchvision's classification, segmentation and video
builders, torch_geometric's conv classes, timm's model families, the diffusers
classes that build tiny from a config), shrinks each generically to a tiny size, and makes one
:class:`~cases.models_base.ModelCase` of it (names ``zoo_<lib>_<arch>``): the
float32 model, its float64 copy as the oracle, the family's dynamic dims and sweep.
A family may define ``resolve(spec)``: what it needs the library for before
building (timm: the arguments its model class takes), run by the probe, whose
result is the entry its case is made from.

Enumerating needs the libraries, listing the catalogue must not (models_base.py),
so the enumeration is a step of its own: ``python -m cases.zoo probe`` walks
every candidate, builds it, runs it in eager on the sweep against its float64
oracle and writes :data:`TABLE` (``cases/zoo.json``): per architecture, the spec
its case is built from and the measured float32 error -- or why it is skipped
(fails to build, to run in eager, too large, its error past :data:`MAX_ERR`).
The catalogue reads that file; :func:`skipped` lists what it leaves out, with
the reason (``harness zoo-table`` prints it). Rerun the probe after a library
upgrade.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("zoo.json")
#: the zoo's families: ``(family module, library)``
LIBRARIES = (
    ("zoo_hf", "transformers"),
    ("zoo_tv", "torchvision"),
    ("zoo_pyg", "torch_geometric"),
    ("zoo_timm", "timm"),
    ("zoo_diffusers", "diffusers"),
)
#: past this float32-vs-float64 max abs error (eager, the sweep) an architecture is skipped as unstable
MAX_ERR = 1e-3
#: an architecture whose generic shrink leaves more parameters than this is skipped (CPU budget)
MAX_PARAMS = 3_000_000
#: seconds one architecture's probe may take (build, eager and float64 runs)
PROBE_S = 30
#: bytes of address space the probe's process may map (``RLIMIT_AS``): a multimodal config whose
#: sub-models the generic shrink misses allocated 22 GB and was OOM-killed (qwen2_audio), taking
#: the shared machine's memory with it; past this an allocation fails, recorded as its build error
MAX_MEMORY = 8 << 30
#: seconds the probe of one family may take; the candidates past it are listed as not probed
#: (no limit in practice: every enumerated architecture is probed, each within :data:`PROBE_S`)
BUDGET_S = 100_000


@functools.cache
def table() -> dict[str, dict[str, Any]]:
    """``{family module: {case name: entry}}`` from :data:`TABLE` (empty without the file)."""
    if not TABLE.exists():
        return {}
    return json.loads(TABLE.read_text(encoding="utf-8"))


def entries(family: str) -> dict[str, dict[str, Any]]:
    """The probed entries of ``family`` (a module name of :data:`LIBRARIES`)."""
    return table().get(family, {})


def cases_of(family: str, make: Callable[[dict[str, Any]], Any]) -> tuple:
    """The cases of ``family``: ``make(entry)`` for each entry that built and ran."""
    return tuple(make(e) for e in entries(family).values() if "skipped" not in e)


def skipped() -> dict[str, str]:
    """``{case name: why}``: every enumerated architecture the zoo leaves out."""
    return {name: e["skipped"] for fam in table().values() for name, e in fam.items() if "skipped" in e}


def tolerance_of(entry: dict[str, Any]):
    """The probed float32-vs-float64 max abs error's tolerance (:meth:`cases.model.Tolerance.from_error`)."""
    from .model import Tolerance

    return Tolerance.from_error(float(entry.get("err", 0.0)))


def param_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def eager_error(case, shapes: int | None = None) -> float:
    """The float32 torch form's max abs error against the float64 oracle over the
    case's sweep (its first ``shapes`` entries), raising when shapes disagree or a
    value is not finite."""
    import numpy as np
    import torch

    program, worst = case.torch_fn(), 0.0
    for i, sizes in enumerate(case.sweep[:shapes]):
        inputs = case.make_inputs(sizes, seed=i)
        with torch.no_grad():
            got = program(*(torch.from_numpy(a) for a in inputs)).numpy()
        want = case.expected(inputs)
        if got.shape != want.shape or got.shape != case.out_shape_for(sizes):
            raise ValueError(
                f"output shape {got.shape}, oracle {want.shape}, out_shape says {case.out_shape_for(sizes)} on {sizes}"
            )
        if not (np.isfinite(got).all() and np.isfinite(want).all()):
            raise ValueError(f"non-finite output on {sizes}")
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)))
    return worst


def probe_one(module, spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with ``err`` (and ``params``), or with ``skipped``: why it is left out."""
    import signal

    def alarm(*_):
        raise TimeoutError(f"probe took over {PROBE_S} s")

    entry, stage = dict(spec), "build"
    if "skipped" in entry:  # left out by the family itself, with its reason
        return entry
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(PROBE_S)
    try:
        resolve = getattr(module, "resolve", None)
        if resolve is not None:  # the family fills in what needs the library (the class's arguments)
            entry = resolve(entry)
            if "skipped" in entry:
                return entry
        case = module.make(entry)
        entry["params"] = param_count(module.model_of(case).float32())
        limit = getattr(module, "MAX_PARAMS", MAX_PARAMS)
        if entry["params"] > limit:
            entry["skipped"] = f"{entry['params']:,} parameters after the generic shrink (over {limit:,})"
            return entry
        stage = "eager"
        # the first size, not the sweep: the probe walks hundreds of architectures on a shared
        # machine (the tolerance's 10x margin covers the error's spread over sizes)
        err = eager_error(case, shapes=1)
        if err > MAX_ERR:
            entry["skipped"] = f"float32 vs float64 eager error {err:.1e} (over {MAX_ERR:g}): numerically unstable here"
        else:
            entry["err"] = float(f"{err:.2g}")
    except Exception as e:  # any failure is the finding: recorded, not raised
        entry["skipped"] = f"{stage}: {type(e).__name__}: {_one_line(e)}"
        if "can't allocate memory" in str(e):  # a sub-model the generic shrink misses (multimodal configs)
            entry["skipped"] = f"{stage}: over the probe's memory cap of {MAX_MEMORY >> 30} GiB: " + entry["skipped"]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        _release(module, spec["name"])
    return entry


def _release(module, name: str) -> None:
    """Drop the weights the probe built for ``name`` (its :class:`~cases.models_base.Model` caches them
    per process): a probe walks hundreds of architectures, whose weights otherwise all stay in memory."""
    import gc

    model = getattr(module, "MODELS", {}).get(name)
    if model is not None:
        for cached in ("_f32", "_f64"):
            model.__dict__.pop(cached, None)
    gc.collect()


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:200] + ("…" if len(text) > 200 else "")


#: the reasons :func:`probe` with ``retry`` probes again (a failure that a fix of the family may change);
#: a parameter count or an unstable error stands
RETRY = ("build:", "eager:", "not probed:")
#: the entry of an architecture while it is probed: what the table keeps if probing it kills the process
CRASHED = "crashed: probing it killed the probe's process (a fatal signal, or out of memory)"


def probe(
    families: list[str] | None = None,
    out: Path = TABLE,
    budget_s: float = BUDGET_S,
    retry: bool = False,
    only: str | None = None,
    pool: Callable[[str, list[dict[str, Any]]], Iterable[dict[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Enumerate and probe ``families`` (default: all), each for at most ``budget_s``, merge into ``out``.
    With ``retry``, only the architectures ``out`` has no entry for, or an entry skipped for a
    reason of :data:`RETRY`; with ``only`` (comma-separated globs of case names), only those;
    the others keep their entry.

    ``pool`` probes a family's architectures elsewhere (``harness.zoo_cluster``: on a Dask
    cluster, each in a process of its own per worker, :func:`probe_isolated`), yielding their entries as
    they finish; the table is the same as this process's sequential probe makes. The budget
    applies to the sequential probe only (a pool's architectures are probed at once)."""
    if pool is None:
        _limit_memory()
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    unknown = sorted(set(families or ()) - {fam for fam, _ in LIBRARIES})
    if unknown:
        raise ProbeError(f"unknown zoo family {', '.join(unknown)}; valid: {', '.join(fam for fam, _ in LIBRARIES)}")
    matched = 0
    for fam, _lib in LIBRARIES:
        if families and fam not in families:
            continue
        module = importlib.import_module(f"{__package__}.{fam}")
        found: dict[str, dict[str, Any]] = {}
        start = time.perf_counter()
        old = data.get(fam, {})
        specs = module.candidates()
        if retry or only:  # the old entries stay in the table while it runs (a crash loses none); dropped ones go at the end
            found.update(old)
        todo = []
        for spec in specs:
            kept = old.get(spec["name"])
            if retry and kept is not None and not kept.get("skipped", "").startswith(RETRY):
                continue
            if only and not _selected(spec["name"], only):
                continue
            todo.append(spec)
        matched += len(todo)
        if pool is not None:
            for entry in pool(fam, todo):
                found[entry["name"]] = entry
                data[fam] = found  # written as it goes: an interrupted probe keeps what it found
                _write(out, data)
                print(f"{fam} {entry['name']}: {entry.get('skipped', 'ok')}", file=sys.stderr, flush=True)
        for spec in todo if pool is None else ():
            t = time.perf_counter()
            if t - start > budget_s:
                found[spec["name"]] = {**spec, "skipped": f"not probed: the probe's budget of {budget_s:g} s ran out first"}
                continue
            # written first: if probing it kills the process, the table says so (and a --retry goes past it)
            found[spec["name"]] = {**spec, "skipped": CRASHED}
            data[fam] = found
            _write(out, data)
            entry = probe_one(module, spec)
            found[entry["name"]] = entry
            data[fam] = found  # written as it goes: an interrupted probe keeps what it found
            _write(out, data)
            print(
                f"{fam} {entry['name']}: {entry.get('skipped', 'ok')} ({time.perf_counter() - t:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
        names = [spec["name"] for spec in specs]
        data[fam] = {name: found[name] for name in names if name in found}
        _write(out, data)
    table.cache_clear()
    if only and not matched:
        raise ProbeError(f"--only {only!r} names no architecture of {', '.join(families or [f for f, _ in LIBRARIES])}")
    return data


class ProbeError(ValueError):
    """A probe asked for what the zoo does not have (a usage error: exit 2)."""


def _selected(name: str, globs: str) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(name, g.strip()) for g in globs.split(",") if g.strip())


#: seconds :func:`probe_isolated` waits for an entry beyond the probe's own alarm (the family's imports)
ISOLATED_SLACK_S = 120


class _Server:
    """A process that probes one architecture per request (``python -m cases.zoo probe-serve``:
    a spec on a stdin line, its entry on a stdout line), kept for the next one: the family's
    imports are paid once, and the probe's alarm and memory cap are that process's own (an
    alarm needs a main thread, which a Dask task has not). If probing kills it, or it answers
    nothing in time, the entry says so and the next request starts a new one."""

    def __init__(self) -> None:
        import threading

        self.proc: Any = None
        self.lock = threading.Lock()

    def _start(self) -> None:
        import os
        import subprocess

        root = Path(__file__).resolve().parent.parent
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")])))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cases.zoo", "probe-serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=root,
            env=env,
        )

    def probe(self, family: str, spec: dict[str, Any]) -> dict[str, Any]:
        import select

        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            try:
                self.proc.stdin.write(json.dumps({"family": family, "spec": spec}) + "\n")
                self.proc.stdin.flush()
                ready, _, _ = select.select([self.proc.stdout], [], [], PROBE_S + ISOLATED_SLACK_S)
                line = self.proc.stdout.readline() if ready else None
            except (BrokenPipeError, OSError):
                line = ""
            if line:
                return json.loads(line)
            why = CRASHED
            if line is None:  # no answer in time: its alarm did not fire (stuck in native code)
                why = f"build: TimeoutError: no entry within {PROBE_S + ISOLATED_SLACK_S} s (its process killed)"
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {**spec, "skipped": why}


_SERVER = _Server()


def probe_isolated(family: str, spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`probe_one` of ``spec`` in this process's probe server (:class:`_Server`):
    the entry the sequential probe makes, or :data:`CRASHED` if probing killed the server."""
    return _SERVER.probe(family, spec)


def _serve() -> None:
    """``python -m cases.zoo probe-serve``: :func:`probe_one` per request line, entries on stdout."""
    _limit_memory()
    libraries = dict(LIBRARIES)
    for line in sys.stdin:
        msg = json.loads(line)
        # the library is imported before the probe's alarm starts: not the architecture's time
        importlib.import_module(libraries[msg["family"]])
        entry = probe_one(importlib.import_module(f"cases.{msg['family']}"), msg["spec"])
        print(json.dumps(entry, sort_keys=True), flush=True)


def _limit_memory() -> None:
    """Cap this process's address space at :data:`MAX_MEMORY` (not above a lower limit already set)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = MAX_MEMORY if hard == resource.RLIM_INFINITY else min(MAX_MEMORY, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _write(out: Path, data: dict) -> None:
    """``data`` into ``out`` by a rename: a worker that reads the table mid-probe sees the old or the new file."""
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)


def add_probe_args(p) -> None:
    """The probe's arguments: ``python -m cases.zoo probe`` here, ``dynshape zoo-probe`` (on Dask too)."""
    p.add_argument("families", nargs="*", help="zoo_hf, zoo_tv, zoo_pyg, zoo_timm, zoo_diffusers (default: all)")
    p.add_argument("--budget", type=float, default=BUDGET_S, help=f"seconds per family (default {BUDGET_S})")
    p.add_argument("--retry", action="store_true", help="probe again only what failed to build or run (or is new)")
    p.add_argument(
        "--only", metavar="GLOBS", help="probe only these case names (comma-separated globs); the rest keep their entry"
    )


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m cases.zoo",
        description="enumerate and probe the model zoo into cases/zoo.json (on a Dask cluster: dynshape zoo-probe --scheduler)",
    )
    p.add_argument("command", choices=["probe", "probe-serve"])
    add_probe_args(p)
    args = p.parse_args()
    if args.command == "probe-serve":
        _serve()
    else:
        try:
            probe(args.families or None, budget_s=args.budget, retry=args.retry, only=args.only)
        except ValueError as e:  # ProbeError
            print(f"python -m cases.zoo: {e}", file=sys.stderr)
            sys.exit(2)
