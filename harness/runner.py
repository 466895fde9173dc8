"""Plan and run jobs: each (case, backend, mode) in its own worker process.

A worker that crashes, aborts or runs past its timeout becomes a record with
status ``crashed`` / ``timeout``; the run goes on, and every record the worker
streamed before is already on disk.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

import cases
from backends.base import MODES

from backends import envs

from . import meta, registry, results, threads

DEFAULT_REPEATS = 7
DEFAULT_WARMUP = 2


@dataclasses.dataclass(frozen=True)
class Combo:
    """One job: a case on a backend in a mode."""

    case: cases.Case
    backend: object
    mode: str
    #: the backend was named by the run's backend globs (an opt-in backend runs only then)
    named: bool = True

    @property
    def id(self) -> str:
        return f"{self.case.name}[{self.backend.name}-{self.mode}]"

    def skip_reason(self) -> tuple[str, str] | None:
        """``(status, reason)`` when this job needs no worker, else ``None``."""
        reason = self.backend.unsupported_reason(self.case, self.mode)
        if reason:
            return "unsupported", reason
        opt_in = getattr(self.backend, "opt_in", "")
        if opt_in and not self.named:
            return "skipped", f"{self.backend.name} is opt-in ({opt_in}): name it with --backends"
        ok, why = self.backend.available()
        if not ok:
            return "skipped", why
        return None


def plan(case_globs: str | None = None, backend_globs: str | None = None, mode_globs: str | None = None) -> list[Combo]:
    """Every (case, backend, mode) the globs select, for the modes each case has.

    An opt-in backend (``Backend.opt_in``) is planned but skipped unless a
    backend glob names it without wildcards. Unknown names raise
    :class:`cases.CaseError` listing the valid ones.
    """
    catalogue = {c.name: c for c in cases.catalogue()}
    all_backends = registry.backends()
    case_names = cases.match_globs(list(catalogue), case_globs, "case")
    backend_names = cases.match_globs(list(all_backends), backend_globs, "backend")
    modes = cases.match_globs(list(MODES), mode_globs, "mode")
    named = {g.strip() for g in (backend_globs or "").split(",")}
    return [
        Combo(catalogue[c], all_backends[b], m, named=b in named)
        for c in case_names
        for b in backend_names
        for m in modes
        if m in catalogue[c].modes
    ]


class Runner:
    """Runs combos and appends their records to ``out_dir/<run_id>.jsonl``."""

    def __init__(
        self,
        out_dir: str | os.PathLike = "results",
        run_id: str | None = None,
        profile: str = "quick",
        repeats: int = DEFAULT_REPEATS,
        warmup: int = DEFAULT_WARMUP,
        timeout_s: float | None = None,
        warm_cache: bool = False,
        progress: bool = True,
        threads: int | None = 1,
        trace_dir: str | os.PathLike | None = None,
    ):
        if profile not in cases.PROFILES:
            raise cases.CaseError(f"unknown profile {profile!r}; valid: {', '.join(cases.PROFILES)}")
        self.run_id = run_id or meta.new_run_id()
        self.path = Path(out_dir) / f"{self.run_id}.jsonl"
        self.profile, self.repeats, self.warmup = profile, repeats, warmup
        self.timeout_s, self.warm_cache, self.progress = timeout_s, warm_cache, progress
        self.threads = threads
        self.trace_dir = Path(trace_dir) if trace_dir else None
        commit, dirty = meta.git_state()
        self._common = {
            "run_id": self.run_id, "commit": commit, "dirty": dirty, "profile": profile,
            "machine": dict(meta.machine(), threads=threads),
        }
        self._lock = threading.Lock()

    def run(self, combos: Iterable[Combo], jobs: int = 1) -> Path:
        """Run every combo (``jobs`` workers at a time) and return the JSONL path."""
        combos = list(combos)
        total = sum(
            0 if c.skip_reason() else 2 * len(c.case.sizes_for(self.profile)) for c in combos
        ) + sum(1 for c in combos if c.skip_reason())
        bar = _progress(total, self.progress)
        with results.Writer(self.path) as writer:

            def one(combo: Combo) -> None:
                def sink(rec: dict) -> None:
                    with self._lock:
                        writer.write(rec)
                        bar.update(1)
                        bar.set_postfix_str(combo.id, refresh=False)

                self.run_one(combo, sink)

            if jobs <= 1:
                for combo in combos:
                    one(combo)
            else:
                with ThreadPoolExecutor(jobs) as pool:
                    list(pool.map(one, combos))
        bar.close()
        return self.path

    def run_one(self, combo: Combo, sink: Callable[[dict], None]) -> list[dict]:
        """Run one combo in a worker; each record goes to ``sink`` as it arrives."""
        got: list[dict] = []
        base = dict(self._common, case=combo.case.name, backend=combo.backend.name, mode=combo.mode,
                    env=combo.backend.env)

        def emit(**fields) -> None:
            rec = results.record(**{**base, "timestamp": meta.now(), **fields})
            got.append(rec)
            sink(rec)

        skip = combo.skip_reason()
        if skip:
            emit(status=skip[0], ok=None, message=skip[1])
            return got
        job = {
            "case": combo.case.name, "mode": combo.mode, "profile": self.profile,
            "repeats": self.repeats, "warmup": self.warmup, "spec": combo.backend.spec,
        }
        timeout = self.timeout_s or combo.backend.timeout_s
        cache_dir = None if self.warm_cache else tempfile.mkdtemp(prefix="dynshape-cache-")
        try:
            self._work(combo, job, timeout, cache_dir, emit)
        finally:
            if cache_dir:
                shutil.rmtree(cache_dir, ignore_errors=True)
        return got

    def _work(self, combo, job, timeout, cache_dir, emit) -> None:
        env = dict(os.environ)
        env.update(envs.env_vars(combo.backend.env))
        env.update(_cache_env(cache_dir))
        env["PYTHONUNBUFFERED"] = "1"
        # one thread policy for torch, BLAS and XLA: small ops on a shared
        # 2-core machine time far more steadily on one thread
        env.update(threads.env_for(self.threads, env))
        if self.trace_dir:
            # dynamo/inductor structured logs per job, for tlparse
            env["TORCH_TRACE"] = str(self.trace_dir / combo.id.replace("[", "-").replace("]", ""))
        try:
            python = envs.python_for(combo.backend.env)
        except envs.EnvError as e:
            emit(status="skipped", ok=None, message=str(e))
            return
        spawned = time.time()
        proc = subprocess.Popen(
            [python, "-m", "harness.worker", json.dumps(job)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=envs.ROOT, start_new_session=True, text=True,
        )
        lines: queue.Queue = queue.Queue()
        tail: collections.deque = collections.deque(maxlen=60)
        threading.Thread(target=_pump, args=(proc.stdout, lines.put, True), daemon=True).start()
        threading.Thread(target=_pump, args=(proc.stderr, tail.append), daemon=True).start()
        versions, done, fatal, measured = None, False, None, 0
        job_fields: dict = {}
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                _kill(proc)
                emit(versions=versions, **job_fields, status="timeout", ok=False,
                     message=f"no result within {timeout:.0f}s; {measured} records were measured before; "
                             f"stderr: {_tail(tail)}")
                return
            if line is None:
                break
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                tail.append(line)
                continue
            if "hello" in msg:
                versions = msg["versions"]
            elif "ready" in msg:
                ready = msg["ready"]
                job_fields = {"startup_s": max(0.0, ready["wall"] - spawned),
                              "machine": dict(self._common["machine"], worker_threads=ready.get("threads"))}
            elif "record" in msg:
                measured += 1
                emit(versions=versions, **{**job_fields, **msg["record"]})
            elif "fatal" in msg:
                fatal = msg["fatal"]
            elif msg.get("done"):
                done = True
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _kill(proc)
            code = proc.wait()
        if fatal:
            emit(versions=versions, **job_fields, status="error", ok=False,
                 message=f"worker failed: {fatal.strip()[-1500:]}")
        elif not done:
            how = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit code {code}"
            emit(versions=versions, **job_fields, status="crashed", ok=False,
                 message=f"worker died ({how}) after {measured} records; stderr: {_tail(tail)}")


def _cache_env(cache_dir: str | None) -> dict[str, str]:
    """Point on-disk compile caches at a fresh directory (so novel means novel),
    or at ``results/.cache`` when warm caches are asked for."""
    if cache_dir is None:
        root = envs.ROOT / "results" / ".cache"
        return {
            "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
            "JAX_COMPILATION_CACHE_DIR": str(root / "jax"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            "XLA_PERSISTENT_CACHE_PATH": str(root / "torch_xla"),
        }
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache_dir, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(cache_dir, "triton"),
        "JAX_ENABLE_COMPILATION_CACHE": "false",
    }


def _pump(stream, put, eof: bool = False) -> None:
    """Feed ``stream``'s lines to ``put``; then ``None`` if ``eof``."""
    for line in stream:
        put(line.rstrip("\n"))
    if eof:
        put(None)


def _tail(tail) -> str:
    lines = [l for l in tail if l]
    return " | ".join(lines[-8:])[-1500:] or "(empty)"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class _NoBar:
    def update(self, n=1):
        pass

    def set_postfix_str(self, *a, **k):
        pass

    def close(self):
        pass


def _progress(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="rec", dynamic_ncols=True, disable=None, leave=False)
