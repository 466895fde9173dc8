"""The sweep: every entry of ``op_db`` through the paths, in worker processes.

A worker (``python -m conformance.opinfo.worker``) runs a shard of entries and
streams one JSON line per verdict, and a ``start`` line before each entry; an entry
that kills its worker (the StableHLO interpreter aborts on ops it lacks, a segfault
in a kernel) gets a ``crash`` verdict naming the exit, and a new worker goes on
from the next entry. Nothing measured is lost: rows are appended as they come.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .verdicts import Verdict

PATHS = ("lazy", "stablehlo", "make_fx")  # make_fx: torch's own symbolic tracer, for comparison


@dataclass(frozen=True)
class Options:
    """What a sweep runs of each entry: ``limit`` samples at ``dtype``, through the StableHLO
    path's ``modes`` (``interpreter`` too: the reference interpreter beside XLA)."""

    limit: int = 3
    dtype: str = "float32"
    modes: tuple[str, ...] = ("bounded", "unbounded")

    def argv(self) -> list[str]:
        return ["--limit", str(self.limit), "--dtype", self.dtype, "--stablehlo-modes", ",".join(self.modes)]


DTYPES = ("float32", "int64", "bool")
STABLEHLO_MODES = ("bounded", "unbounded", "interpreter")


def stablehlo_modes(text: str) -> tuple[str, ...]:
    """``--stablehlo-modes``: comma-separated, each one of :data:`STABLEHLO_MODES`."""
    modes = tuple(m for m in text.split(",") if m)
    bad = [m for m in modes if m not in STABLEHLO_MODES]
    if bad or not modes:
        raise ValueError(f"--stablehlo-modes {text!r}: want some of {', '.join(STABLEHLO_MODES)}")
    return modes


def worker_cmd(path: str, entries: list[str], opts: Options) -> list[str]:
    return [sys.executable, "-m", "conformance.opinfo.worker", "--path", path, *opts.argv(), "--", *entries]


def run_shard(path: str, entries: list[str], opts: Options, sink, families: dict) -> None:
    """Run ``entries`` on ``path`` in workers until each has its verdicts; ``sink(row)`` takes each row."""
    todo = list(entries)
    while todo:
        proc = subprocess.Popen(
            worker_cmd(path, todo, opts),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
        err: list[str] = []
        drain = threading.Thread(target=lambda p=proc: err.extend(p.stderr), daemon=True)
        drain.start()
        current = None
        for line in proc.stdout:
            row = json.loads(line)
            if "start" in row:
                current = row["start"]
                continue
            sink(row)
            if row.get("done"):
                todo.remove(row["entry"])
                current = None
        proc.wait()
        drain.join(timeout=5)
        if current is not None:  # the worker died inside this entry
            tail = " | ".join(x.strip() for x in err[-3:])[:300]
            sink(
                Verdict(
                    current, families.get(current, "other"), path, "crash", message=f"worker exit {proc.returncode}: {tail}"
                ).row()
                | {"done": True}
            )
            todo.remove(current)
        elif proc.returncode != 0 and todo:
            raise RuntimeError(f"opinfo worker ({path}) exited {proc.returncode}: {''.join(err[-5:])}")


def sweep(paths, entries: list[str], families: dict, out: Path, opts: Options = Options(), jobs: int = 2):
    """Every entry through every path in ``paths``, ``jobs`` shards at a time; rows to ``out/<path>.jsonl``."""
    from concurrent.futures import ThreadPoolExecutor

    out.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    files = {p: (out / f"{p}.jsonl").open("w", encoding="utf-8") for p in paths}

    def sink_for(p):
        def sink(row):
            with lock:
                files[p].write(json.dumps(row) + "\n")
                files[p].flush()

        return sink

    shards = [(p, entries[k::jobs]) for p in paths for k in range(jobs)]
    try:
        with ThreadPoolExecutor(jobs) as pool:
            for f in [pool.submit(run_shard, p, es, opts, sink_for(p), families) for p, es in shards if es]:
                f.result()
    finally:
        for f in files.values():
            f.close()
