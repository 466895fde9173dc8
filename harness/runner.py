"""Plan and run jobs: each (case, backend, mode) in its own worker process.

A worker that crashes, aborts, runs out of memory under its limit
(``max_memory``) or runs past its timeout becomes a record with status
``crashed`` / ``oom`` / ``timeout`` (the signal and the last lines of its
stderr in the message); the run goes on, and every record the worker streamed
before is already on disk. An interrupted run (Ctrl-C, a killed parent) keeps
every record written; :func:`harness.resume.resume` finishes it. The release
axis of ``--versions`` (a job per release of a backend's system) is
:mod:`harness.releases`.
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
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import cases
from backends import envs
from backends.base import MODES, Backend

from . import fingerprint, forkserver, job_env, limits, meta, progress, registry, releases, results
from .worker_process import WorkerTail, kill, looks_oom, pump, tail_text

DEFAULT_REPEATS = 7
DEFAULT_WARMUP = 2
#: ``<run_id>.plan.json``: the run's jobs and these settings, for ``--resume``
PLAN_SUFFIX = ".plan.json"
SETTINGS = ("profile", "repeats", "warmup", "timeout_s", "threads", "max_memory", "warm_cache", "processes")


@dataclasses.dataclass(frozen=True)
class Combo:
    """One job: a case on a backend in a mode."""

    case: cases.Case
    backend: Backend
    mode: str
    #: the backend was named by the run's backend globs (an opt-in backend runs only then)
    named: bool = True
    #: why the run's profile leaves this job out (``harness.profiles``), or ``None``
    left_out: str | None = None
    #: the environment of a release of the backend's system to run in instead of
    #: ``backend.env`` (``harness run --versions``: :func:`harness.releases.with_versions`), or ``None``
    env: str | None = None
    #: where the plan found the case (:func:`cases.families`: a family, ``pack:<name>``, ``file``):
    #: the worker loads that source alone, so a pack that breaks fails only its own cases' jobs
    source: str | None = None

    @property
    def env_name(self) -> str:
        """The environment the job's worker runs in."""
        return self.env or self.backend.env

    @property
    def id(self) -> str:
        at = f"@{self.env}" if self.env else ""
        return f"{self.case.name}[{self.backend.name}-{self.mode}{at}]"

    def skip_reason(self) -> tuple[str, str] | None:
        """``(status, reason)`` when this job needs no worker, else ``None``."""
        reason = self.backend.unsupported_reason(self.case, self.mode)
        if reason:
            return "unsupported", reason
        if self.left_out:
            return "skipped", self.left_out
        opt_in = self.backend.opt_in
        if opt_in and not self.named:
            return "skipped", f"{self.backend.name} is opt-in ({opt_in}): name it with --backends"
        ok, why = self.backend.available() if self.env is None else releases.available(self.backend, self.env)
        if not ok:
            return "skipped", why
        return self.case_libraries_missing()

    def case_libraries_missing(self) -> tuple[str, str] | None:
        """``("skipped", why)`` when the case's model libraries (``ModelCase.libraries``)
        are not installed in the backend's environment or a helper's, else ``None``."""
        needs = tuple(getattr(self.case, "libraries", ()))
        if not needs:
            return None
        for env in (self.env or self.backend.env, *self.backend.helper_envs):
            ok, why = envs.modules_available(env, needs)  # the helper env is where the program is exported
            if not ok:
                return "skipped", f"case {self.case.name} needs its model libraries: {why}"
        return None


def plan(
    case_globs: str | None = None,
    backend_globs: str | None = None,
    mode_globs: str | None = None,
    profile: str | None = None,
    whole: bool = False,
) -> list[Combo]:
    """Every (case, backend, mode) the globs select, for the modes each case has.

    With ``profile`` (as ``harness run`` and the gate plan), the jobs that
    profile leaves out (:mod:`harness.profiles`) are planned as skipped with
    the reason, unless ``whole``.

    An opt-in backend (``Backend.opt_in``) is planned but skipped unless a
    backend glob names it without wildcards. Unknown names raise
    :class:`cases.CaseError` listing the valid ones.
    """
    catalogue = {c.name: c for c in cases.catalogue()}
    source = cases.families()  # the packs resolved once, here: the run's workers load these
    all_backends = registry.backends()
    case_names = cases.match_globs(list(catalogue), case_globs, "case")
    backend_names = cases.match_globs(list(all_backends), backend_globs, "backend")
    modes = cases.match_globs(list(MODES), mode_globs, "mode")
    named = {g.strip() for g in (backend_globs or "").split(",")}
    from .profiles import left_out

    return [
        Combo(
            catalogue[c],
            all_backends[b],
            m,
            named=b in named,
            left_out=None if whole else left_out(c, all_backends[b], m, profile),
            source=source.get(c),
        )
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
        max_memory: int | Literal["default"] | None = "default",
        processes: int = 1,
        fork_server: bool | None = None,
        zygote_preload: dict[str, set[str]] | None = None,
        fingerprints: fingerprint.Fingerprints | None = None,
    ):
        if profile not in cases.PROFILES:
            raise cases.CaseError(f"unknown profile {profile!r}; valid: {', '.join(cases.PROFILES)}")
        self.run_id = run_id or meta.new_run_id()
        self.path = Path(out_dir) / f"{self.run_id}.jsonl"
        self.profile, self.repeats, self.warmup = profile, repeats, warmup
        self.timeout_s, self.warm_cache, self.progress = timeout_s, warm_cache, progress
        self.threads = threads
        if processes < 1:
            raise cases.CaseError(f"processes must be at least 1, not {processes}")
        #: fresh workers per job: the first measures everything, the others
        #: repeat the novel phase (``process`` 1…), for samples of the sweep
        self.processes = processes
        self.trace_dir = Path(trace_dir) if trace_dir else None
        #: bytes a worker may allocate (``None``: no limit)
        self.max_memory = limits.default_bytes() if max_memory == "default" else max_memory
        #: set on Ctrl-C: running workers are killed, pending jobs not started
        self.stop = threading.Event()
        #: fork workers from a zygote that imported the heavy modules once
        #: (:mod:`harness.forkserver`; ``None``: unless ``DYNSHAPE_FORK_SERVER=0``)
        self.fork_server = forkserver.enabled() if fork_server is None else fork_server
        #: per environment, the ``Backend.preload``/``warmup`` entries its zygote runs:
        #: :meth:`run` sets those of its jobs' backends, and the gate passes those of
        #: the jobs it collected; ``None`` (a job run alone): the job's own backend's.
        #: A zygote of this process that preloads more serves the job too
        self.zygote_preload = zygote_preload
        commit, dirty = meta.git_state()
        self._common: dict[str, Any] = {  # the fields every record of the run starts from
            "run_id": self.run_id,
            "commit": commit,
            "dirty": dirty,
            "profile": profile,
            "machine": dict(meta.machine(), threads=threads),
        }
        self._lock = threading.Lock()
        #: content hashes of this run's jobs (``fingerprint`` of each record), files read once a run;
        #: the gate's Runners (one a job) share the session's, as one run's jobs do
        self.fingerprints = fingerprint.Fingerprints() if fingerprints is None else fingerprints

    def run(self, combos: Iterable[Combo], jobs: int = 1) -> Path:
        """Run every combo (``jobs`` workers at a time) and return the JSONL path.

        On Ctrl-C the running workers are killed, no other job starts, and
        the ``KeyboardInterrupt`` propagates; every record written stays.
        """
        combos = list(combos)
        total = sum(1 if c.skip_reason() else (1 + self.processes) * len(c.case.sizes_for(self.profile)) for c in combos)
        self.write_plan(combos)
        if self.zygote_preload is None:
            self.zygote_preload = forkserver.preload_of(combos)
        bar = progress.bar(total, self.progress)
        try:
            with results.Writer(self.path) as writer:
                combos = self.write_idle(combos, writer.write, bar.update)

                def one(combo: Combo) -> None:
                    if self.stop.is_set():
                        return

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
                        futures = [pool.submit(one, c) for c in combos]
                        try:
                            for f in futures:
                                f.result()
                        except BaseException:
                            self.stop.set()
                            raise
        except BaseException:
            self.stop.set()
            raise
        finally:
            bar.close()
        return self.path

    def write_idle(self, combos: list[Combo], write: Callable[[dict], None], done=lambda n: None) -> list[Combo]:
        """Write the records of the jobs that need no worker (no such mode, left
        out, unavailable), grouped (:func:`harness.results.idle_groups`); the rest."""
        idle, rest = [], []
        for combo in combos:
            skip = combo.skip_reason()
            if skip is None:
                rest.append(combo)
                continue
            base = dict(self._common, case=combo.case.name, backend=combo.backend.name, mode=combo.mode, env=combo.env_name)
            idle.append(results.record(**base, process=0, timestamp=meta.now(), status=skip[0], ok=None, message=skip[1]))
        for rec in results.idle_groups(idle):
            write(rec)
        done(len(idle))
        return rest

    def write_plan(self, combos: list[Combo]) -> Path:
        """Write ``<run_id>.plan.json`` (the jobs and settings), unless the run has one."""
        path = plan_path(self.path)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            data = {
                "run_id": self.run_id,
                **{k: getattr(self, k) for k in SETTINGS},
                "jobs": [[c.case.name, c.backend.name, c.mode, *([c.env] if c.env else [])] for c in combos],
            }
            atomic_write(path, json.dumps(data, indent=1) + "\n")
        return path

    def fingerprint(self, combo: Combo) -> str:
        """``combo``'s content hash under this run's settings and machine (:mod:`harness.fingerprint`)."""
        settings = {k: getattr(self, k) for k in fingerprint.SETTINGS}
        with self._lock:  # jobs of a --jobs N run share the file cache
            return self.fingerprints.job(combo, settings, self._common["machine"])

    def run_one(self, combo: Combo, sink: Callable[[dict], None]) -> list[dict]:
        """Run one combo in a worker; each record goes to ``sink`` as it arrives."""
        got: list[dict] = []
        base = dict(
            self._common,
            case=combo.case.name,
            backend=combo.backend.name,
            mode=combo.mode,
            env=combo.env_name,
            process=0,
            fingerprint=self.fingerprint(combo),
            started=meta.now(),
        )

        def emit(**fields) -> None:
            rec = results.record(**{**base, "timestamp": meta.now(), **fields})
            got.append(rec)
            sink(rec)

        skip = combo.skip_reason()
        if skip:
            emit(status=skip[0], ok=None, message=skip[1])
            return got
        job = {
            "case": combo.case.name,
            # where the plan found the case: the worker loads that source alone
            "source": combo.source or cases.families().get(combo.case.name),
            "mode": combo.mode,
            "profile": self.profile,
            "repeats": self.repeats,
            "warmup": self.warmup,
            "spec": combo.backend.spec,
            "max_memory": self.max_memory,
            # the modules the worker warns about when the job imports one after its startup
            "watch": list(forkserver.catalogue(combo.backend.env)),
        }
        timeout = self.timeout_s or combo.backend.timeout_s
        if combo.backend.env != "main" or combo.backend.helper_envs:
            from cases import models_base

            models_base.ensure_weights(combo.case)  # made here (main env), loaded by the other env's worker
        cache_dir = None if self.warm_cache else tempfile.mkdtemp(prefix="dynshape-cache-")
        try:
            self._work(combo, job, timeout, cache_dir, emit)
            for k in range(1, self.processes):
                if cache_dir:  # every repeat starts cold, as the first did
                    shutil.rmtree(cache_dir, ignore_errors=True)
                    os.makedirs(cache_dir)

                def again(k=k, **fields) -> None:
                    emit(**fields, process=k)

                self._work(combo, dict(job, novel_only=True), timeout, cache_dir, again)
        finally:
            if cache_dir:
                shutil.rmtree(cache_dir, ignore_errors=True)
        return got

    def _work(self, combo, job, timeout, cache_dir, emit) -> None:
        env = job_env.compose(combo.backend, cache_dir, self.threads, combo.env_name)
        if self.trace_dir:
            # dynamo/inductor structured logs per job, for tlparse
            env["TORCH_TRACE"] = str(self.trace_dir / combo.id.replace("[", "-").replace("]", ""))
        try:
            python = envs.python_for(combo.env_name)
        except envs.EnvError as e:
            emit(status="skipped", ok=None, message=str(e))
            return
        argv = ["-m", "harness.worker", json.dumps(job)]
        forked = None
        # a release environment (--versions) has no zygote (forkserver.usable): the
        # releases of a system start alike, spawned, whichever interpreter is main's
        if self.fork_server and combo.backend.forkable and forkserver.usable(combo.env_name, env):
            own = (*combo.backend.preload, *combo.backend.warmup)
            wanted = own if self.zygote_preload is None else self.zygote_preload.get(combo.env_name, ())
            forked = forkserver.start(python, combo.env_name, argv, env, str(envs.ROOT), wanted)
        proc: forkserver.WorkerProcess
        if forked is not None:
            proc, spawned = forked, forked.requested
            start = {"how": "fork", "preload_s": forked.info.get("preload_s"), "zygote_steps": forked.info.get("steps")}
        else:
            spawned, start = time.time(), {"how": "spawn", "preload_s": None}
            proc = subprocess.Popen(
                [python, *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=envs.ROOT,
                start_new_session=True,
                text=True,
            )
        lines: queue.Queue = queue.Queue()
        last: collections.deque[str] = collections.deque(maxlen=60)
        threading.Thread(target=pump, args=(proc.stdout, lines.put, True), daemon=True).start()
        err = threading.Thread(target=pump, args=(proc.stderr, last.append), daemon=True)
        err.start()
        # the tail is read once the worker has ended and its stderr is drained
        tail = WorkerTail(last, err)
        try:
            self._watch(proc, lines, tail, spawned, timeout, emit, start)
        except BaseException:  # Ctrl-C in this thread: the worker goes too
            kill(proc)
            raise

    def _watch(self, proc, lines, tail, spawned, timeout, emit, start) -> None:
        """Turn the worker's protocol lines into records until it ends, is
        killed at ``timeout``, or the run is stopped. ``start``: how the worker
        started (``machine["worker_start"]`` of its records)."""
        versions, done, fatal, oom, measured = None, False, None, None, 0
        job_fields: dict = {}
        deadline = time.monotonic() + timeout
        while True:
            if self.stop.is_set():
                kill(proc)
                return
            try:
                line = lines.get(timeout=min(max(deadline - time.monotonic(), 0), 0.25))
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                kill(proc)
                emit(
                    versions=versions,
                    **job_fields,
                    status="timeout",
                    ok=False,
                    message=f"killed (SIGKILL) after no result within {timeout:.0f}s; {measured} records were "
                    f"measured before; stderr: {tail_text(tail)}",
                )
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
                job_fields = {
                    "startup_s": max(0.0, ready["wall"] - spawned),
                    "machine": dict(self._common["machine"], worker_threads=ready.get("threads"), worker_start=start),
                }
            elif "record" in msg:
                measured += 1
                # the record's own versions (what its job imported: harness.worker), else the hello's
                emit(**{"versions": versions, **job_fields, **msg["record"]})
            elif "fatal" in msg:
                fatal = msg["fatal"]
            elif "oom" in msg:
                oom = msg["oom"]
            elif "late_imports" in msg:
                warnings.warn(forkserver.LateImportWarning(msg), stacklevel=1)
            elif msg.get("done"):
                done = True
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill(proc)
            code = proc.wait()
        how = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit code {code}"
        limit = f"its memory limit of {limits.fmt(self.max_memory)} (--max-memory)"
        if oom or (not done and looks_oom(tail)):
            last = (oom or "").strip().splitlines()[-1:] or ["(no Python error)"]
            emit(
                versions=versions,
                **job_fields,
                status="oom",
                ok=False,
                message=f"worker ran out of memory under {limit} ({how}) after {measured} records: {last[0]}; "
                f"stderr: {tail_text(tail)}",
            )
        elif fatal:
            emit(versions=versions, **job_fields, status="error", ok=False, message=f"worker failed: {fatal.strip()[-1500:]}")
        elif not done:
            emit(
                versions=versions,
                **job_fields,
                status="crashed",
                ok=False,
                message=f"worker died ({how}) after {measured} records; stderr: {tail_text(tail)}",
            )


def plan_path(run_path: Path) -> Path:
    return Path(run_path).with_suffix(PLAN_SUFFIX)


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old file or the new, never half."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
