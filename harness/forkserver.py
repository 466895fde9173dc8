"""A fork server ("zygote") per environment: import once, fork one worker per job.

A worker spawned with ``python -m harness.worker`` spends most of a small job
importing torch (about 2 s). The zygote is a process of the job's environment
that imports the heavy, thread-free modules once (:data:`PRELOAD`: import
only, no backend or device initialisation), checks it still has exactly one
thread, and then forks one child per job. The child is still a fresh process
of its own (its own dynamo caches and counters, memory limit, session,
``PR_SET_PDEATHSIG``, stderr, exit status); it sets the job's environment,
redirects its standard streams to the pipes the parent passed over the socket
(``SCM_RIGHTS``) and runs ``-m harness.worker JOB`` as the interpreter would.

The policy (what a zygote imports, which jobs it serves) is
:mod:`harness.zygote_policy`; the zygote's own loop is :mod:`harness.zygote`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Collection
from typing import IO, Protocol

from .zygote import MSG_BYTES
from .zygote_policy import (  # re-exported: the runner, worker and tests ask the fork server
    ENV_SWITCH as ENV_SWITCH,
)
from .zygote_policy import PER_JOB as PER_JOB
from .zygote_policy import PRELOAD as PRELOAD
from .zygote_policy import LateImportWarning as LateImportWarning
from .zygote_policy import catalogue as catalogue
from .zygote_policy import declared as declared
from .zygote_policy import enabled as enabled
from .zygote_policy import preload_of as preload_of
from .zygote_policy import selection as selection
from .zygote_policy import usable as usable

#: seconds the zygote may take to import its preload (a loaded 2-core machine)
START_TIMEOUT_S = 180.0


class ForkServerWarning(UserWarning):
    """The fork server could not be used; workers are spawned instead."""


# -- the parent's side ----------------------------------------------------------


class WorkerProcess(Protocol):
    """The part of :class:`subprocess.Popen` (text pipes) the runner uses, which
    :class:`ForkedProcess` has too: the runner watches either kind alike."""

    @property
    def pid(self) -> int | None: ...
    @property
    def stdout(self) -> IO[str] | None: ...
    @property
    def stderr(self) -> IO[str] | None: ...
    def wait(self, timeout: float | None = None) -> int: ...


class ForkedProcess:
    """A forked worker, with the part of :class:`subprocess.Popen` the runner uses:
    ``pid`` (also its process group: the child starts a session), ``stdout`` and
    ``stderr`` (text pipes), ``wait`` and ``returncode`` (negative: the signal)."""

    #: when the fork was asked for (the runner's ``startup_s`` counts from here); set by :meth:`Zygote.start`
    requested: float

    def __init__(self, stdout: IO[str], stderr: IO[str]):
        self.stdout, self.stderr = stdout, stderr
        self.pid: int | None = None
        self.returncode: int | None = None
        self._started, self._ended = threading.Event(), threading.Event()
        #: what the zygote reported at start (``preload_s``, ``preloaded``, ``missing``, ``pid``)
        self.info: dict = {}

    def _exit(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            assert timeout is not None  # Event.wait(None) returns only once the event is set
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout)
        assert self.returncode is not None  # _exit sets it before it sets _ended
        return self.returncode


class Zygote:
    """The parent's handle on one fork server (one environment, one set of variables)."""

    def __init__(
        self,
        python: str,
        env_name: str,
        env: dict,
        cwd: str,
        preload: tuple[str, ...] | None = None,
        steps: tuple[str, ...] = (),
    ):
        self.env_name, self.cwd = env_name, cwd
        #: what it imports and the warm-up steps it runs (``None``: all of :func:`selection`)
        self.preload: tuple[str, ...]
        self.steps: tuple[str, ...]
        self.preload, self.steps = (preload, steps) if preload is not None else selection(env_name)
        self.info: dict = {}
        self.dead: str | None = None
        self._lock = threading.Lock()
        self._jobs: dict[int, ForkedProcess] = {}
        self._next = 0
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        started: list = []
        ready = threading.Event()

        def launch() -> None:
            # PR_SET_PDEATHSIG fires when the *thread* that forked the zygote ends,
            # so a thread that lives as long as the zygote starts (and reaps) it
            try:
                proc = subprocess.Popen(
                    [
                        python,
                        "-m",
                        "harness.zygote",
                        json.dumps({"preload": self.preload, "steps": self.steps}),
                        str(theirs.fileno()),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=env,
                    cwd=cwd,
                    pass_fds=[theirs.fileno()],
                    start_new_session=True,
                )
            except OSError as e:
                started.append(e)
                ready.set()
                return
            started.append(proc)
            ready.set()
            assert proc.stderr is not None  # stderr=PIPE
            self._stderr = proc.stderr.read().decode(errors="replace")  # until it exits
            proc.wait()

        self._stderr = ""
        threading.Thread(target=launch, name="dynshape-zygote", daemon=True).start()
        ready.wait()
        theirs.close()
        if isinstance(started[0], OSError):
            self.dead = f"cannot start {python}: {started[0]}"
            return
        self.proc = started[0]
        self._sock.settimeout(START_TIMEOUT_S)
        try:
            hello = json.loads(self._sock.recv(MSG_BYTES) or b"null")
        except (OSError, ValueError) as e:
            hello = None
            self.dead = f"no answer within {START_TIMEOUT_S:.0f}s ({e})"
        self._sock.settimeout(None)
        if not isinstance(hello, dict) or "ready" not in hello:
            self.close()
            self.dead = self.dead or (hello or {}).get("unsafe") or "it exited while importing"
            return
        self.info = hello["ready"]
        threading.Thread(target=self._read, name="dynshape-zygote-reader", daemon=True).start()

    def start(self, argv: list[str], env: dict) -> ForkedProcess | None:
        """Fork a child that runs ``python *argv`` with environment ``env``; ``None``
        when this zygote cannot (it died, or found itself unsafe)."""
        if self.dead:
            return None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        proc = ForkedProcess(open(out_r, encoding="utf-8", errors="replace"), open(err_r, encoding="utf-8", errors="replace"))
        msg = json.dumps({"argv": argv, "env": env, "cwd": self.cwd})
        proc.requested = time.time()
        try:
            with self._lock:
                self._next += 1
                job_id = self._next
                self._jobs[job_id] = proc
                socket.send_fds(self._sock, [json.dumps({"id": job_id}).encode() + b"\n" + msg.encode()], [out_w, err_w])
        except OSError as e:
            self.dead = self.dead or f"lost ({e})"
        finally:
            os.close(out_w)
            os.close(err_w)
        if not self.dead:
            proc._started.wait()
        if proc.pid is None:
            proc.stdout.close()
            proc.stderr.close()
            return None
        return proc

    def busy(self) -> bool:
        return bool(self._jobs)

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(MSG_BYTES)
            except OSError:
                data = b""
            if not data:
                break
            msg = json.loads(data)
            with self._lock:
                proc = self._jobs.get(msg["id"])
                if "exit" in msg:
                    self._jobs.pop(msg["id"], None)
            if proc is None:
                continue
            if "pid" in msg:
                proc.pid = msg["pid"]
                proc._started.set()
            elif "error" in msg:
                self.dead = msg["error"]
                proc._started.set()
            elif "exit" in msg:
                proc._exit(msg["exit"])
        # the zygote is gone: its children die with it (PR_SET_PDEATHSIG)
        self.dead = self.dead or f"exited; stderr: {self._stderr.strip()[-500:] or '(empty)'}"
        with self._lock:
            jobs, self._jobs = self._jobs, {}
        for proc in jobs.values():
            proc._started.set()
            proc._exit(-signal.SIGKILL)

    def close(self, wait: float = 10.0) -> None:
        """End the zygote: it exits once its children have (waiting up to
        ``wait`` seconds, then it and they are killed), and is reaped, so its
        CPU time counts in this process's children's."""
        try:
            # close() alone does not reach the zygote while the reader thread is
            # blocked in recv (that call holds the socket open), so the zygote
            # waited out ``wait``; shutdown ends the connection for both ends now
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            self._sock.close()
        proc = getattr(self, "proc", None)
        if proc is None:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_ZYGOTES: dict = {}
_CREATE = threading.Lock()
_WARNED: set = set()
#: zygotes kept at once (one per environment and set of variables); idle ones go first
MAX_ZYGOTES = 3


def _covers(more: tuple[tuple[str, ...], tuple[str, ...]], less: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
    """Whether a zygote that runs ``more`` (modules, steps) serves jobs that want ``less``."""
    return set(less[0]) <= set(more[0]) and set(less[1]) <= set(more[1])


def start(
    python: str, env_name: str, argv: list[str], env: dict, cwd: str, wanted: Collection[str] | None = None
) -> ForkedProcess | None:
    """Start ``python *argv`` (with ``env``, in ``cwd``) as a child of a zygote
    for ``env_name`` and these variables that preloads at least ``wanted``
    (:func:`selection`), starting one first if needed. ``None`` (after one
    warning per reason) when no zygote can serve: spawn instead."""
    base = {k: v for k, v in env.items() if k not in PER_JOB}
    preload, steps = selection(env_name, wanted)
    key = (python, env_name, cwd, tuple(sorted(base.items())))
    with _CREATE:
        # one that preloads more serves too; one that failed stays: its jobs
        # spawn (a retry would import again per job)
        z = next((v for k, v in _ZYGOTES.items() if k[0] == key and _covers((v.preload, v.steps), (preload, steps))), None)
        if z is None:
            # an idle one of these variables that preloads less is of no more use (the new one
            # serves its jobs): it goes first, so that it does not push out one that is
            less = [
                k for k, v in _ZYGOTES.items() if k[0] == key and not v.busy() and _covers((preload, steps), (v.preload, v.steps))
            ]
            idle = [k for k, v in _ZYGOTES.items() if not v.busy() and k not in less]
            for old in less + idle[: max(0, len(_ZYGOTES) - len(less) + 1 - MAX_ZYGOTES)]:
                _ZYGOTES.pop(old).close()
            z = _ZYGOTES[key, preload, steps] = Zygote(python, env_name, base, cwd, preload, steps)
    proc = z.start(argv, env)
    if proc is not None:
        proc.info = z.info
    else:
        why = f"fork server for env {env_name!r} ({python}) not used, workers are spawned instead: {z.dead}"
        if why not in _WARNED:
            _WARNED.add(why)
            warnings.warn(why, ForkServerWarning, stacklevel=2)
    return proc


@atexit.register
def close_all() -> None:
    """End every zygote of this process (a Ctrl-C while they finish kills them, without a traceback)."""
    with _CREATE:
        zs = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for i, z in enumerate(zs):
        try:
            z.close()
        except KeyboardInterrupt:
            for rest in zs[i:]:
                rest.close(wait=0)
            return
