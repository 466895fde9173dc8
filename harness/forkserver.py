"""A fork server ("zygote") per environment: import once, fork one worker per job.

(Over 500 lines: the server and its client speak one protocol, kept side by side.)

A worker spawned with ``python -m harness.worker`` spends most of a small job
importing torch (about 2 s). The zygote is a process of the job's environment
that imports the heavy, thread-free modules once (:data:`PRELOAD`: import
only, no backend or device initialisation), checks it still has exactly one
thread, and then forks one child per job. The child is still a fresh process
of its own (its own dynamo caches and counters, memory limit, session,
``PR_SET_PDEATHSIG``, stderr, exit status); it sets the job's environment,
redirects its standard streams to the pipes the parent passed over the socket
(``SCM_RIGHTS``) and runs ``-m harness.worker JOB`` as the interpreter would.

Environment. The zygote starts with the job's environment minus
:data:`PER_JOB` (variables that change from job to job and that nothing in
:data:`PRELOAD` reads at import; the child sets them), so everything a module
reads at import (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``JAX_*``,
``XLA_FLAGS``, ``PYTHONPATH``…) is what spawn would give; jobs whose other
variables differ get another zygote. ``TORCH_TRACE`` is read by
``import torch``, so a traced run spawns (:func:`usable`). Modules that read a
per-job variable at import stay out of :data:`PRELOAD`: ``einx`` (it imports
``torch._dynamo``, whose ``DynamoCache`` resolves ``TORCHINDUCTOR_CACHE_DIR``
at import), ``torch._dynamo``, ``torch._inductor``. The zygote refuses to
serve (and the harness spawns, with one warning) when a preloaded module left
a thread running or set a :data:`PER_JOB` variable. After :data:`PRELOAD`,
a second stage (:mod:`harness.zygote_warm`) imports ``torch._dynamo`` and
inductor and runs inductor's vector-ISA probe with the :data:`PER_JOB`
variables pointing into a scratch directory, then checks that no module kept it.

What a zygote imports depends on its run: :data:`PRELOAD` always, and what
the run's backends declare: their ``Backend.preload`` modules (jax) and their
``Backend.warmup`` steps (dynamo, torch.export, inductor's probe), so that a
run of torch's eager backend starts in ~2 s instead of ~8. The harness names
none of them: it reads them off the registered backends' descriptors.
A zygote that preloads more serves a job that wants less. The worker imports
its backend's ``preload`` and ``warmup`` modules itself before ``startup``, so
where the zygote did not, the import is in ``startup_s``; a job that imports a
module of :func:`catalogue` later, undeclared, is named in a :class:`LateImportWarning`.

Only environments listed in :data:`PRELOAD` get a zygote. ``xla``'s imports
``torch_xla`` (~5 CPU-s), which reads ``PJRT_DEVICE`` and ``XLA_FLAGS`` (the
same for every job) and appends to ``XLA_FLAGS``; it starts no thread and no
PJRT client (the job's ``torch_xla.device()`` does). What the imports set in the
environment is applied over each child's job environment, as a spawned worker's
own imports would. A backend opts out with ``Backend.forkable = False``. ``--no-fork-server`` or
``DYNSHAPE_FORK_SERVER=0`` spawns every worker.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Collection, Iterable
from typing import IO, Protocol

from cases import FAMILIES, libs

from . import zygote_warm

#: the catalogue's in-tree families (``cases.FAMILIES``): every job looks its case up
#: in the catalogue, which imports them all (77 ms a job when each worker did it)
_CASE_FAMILIES = tuple(f"cases.{f}" for f in FAMILIES)
#: what every environment's worker imports for any job, after its array libraries
_HARNESS = (
    "cases",
    *_CASE_FAMILIES,
    "backends.base",
    "harness.worker",
    "harness.measure",
    "harness.meta",
    "harness.registry",
    "harness.threads",
)
#: modules the zygote of each environment imports before forking (optional:
#: one missing from the environment is skipped)
PRELOAD = {
    "main": ("numpy", "torch", *_HARNESS),
    # import only: the PJRT client starts in the job (``torch_xla.device()`` in startup)
    "xla": ("numpy", "torch", "torch_xla", *_HARNESS),
}
#: variables the child sets per job: nothing in :data:`PRELOAD` reads them at import
#: (pytest sets ``PYTEST_CURRENT_TEST`` per test: the gate's jobs share a zygote)
#: (and the address of the run's torch_xla export zygote, which only some backends' jobs get)
PER_JOB = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "PYTEST_CURRENT_TEST", "DYNSHAPE_XLA_EXPORT_SOCKET")
#: variables read at import by a preloaded module, which a zygote cannot vary per job
READ_AT_IMPORT = ("TORCH_TRACE",)
#: seconds the zygote may take to import :data:`PRELOAD` (a loaded 2-core machine)
START_TIMEOUT_S = 180.0
#: the switch: ``0`` spawns every worker
ENV_SWITCH = "DYNSHAPE_FORK_SERVER"
_MSG = 1 << 20  # largest message (a job's environment and argv)


class ForkServerWarning(UserWarning):
    """The fork server could not be used; workers are spawned instead."""


class LateImportWarning(UserWarning):
    """A job imported a module of :func:`catalogue` after its startup that its
    backend's ``preload`` does not name (the worker's ``late_imports`` message)."""

    def __init__(self, msg: dict):
        super().__init__(
            f"{msg['job']}: imported {', '.join(msg['late_imports'])} after its backend's startup; name "
            f"{'them' if len(msg['late_imports']) > 1 else 'it'} in {msg['backend']}.preload (or .warmup), or the import is timed "
            "where the fork server did not preload it"
        )


def enabled() -> bool:
    """Whether ``DYNSHAPE_FORK_SERVER`` leaves the fork server on (the default)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def declared(env_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(preload, warmup)``: every ``Backend.preload`` module and ``Backend.warmup``
    step the registered backends of ``env_name`` declare, in the registry's order
    (a step that imports a module before one that calls a function). A zygote
    imports a module only for a run with a backend that declares it: a run of
    torch's eager backend alone need not wait for jax (~1.4 s) or inductor (~5 s)."""
    from . import registry

    found = [b for b in registry.backends().values() if b.env == env_name]
    preload = tuple(dict.fromkeys(m for b in found for m in b.preload))
    steps = list(dict.fromkeys(s for b in found for s in b.warmup))
    if found:  # the model libraries' imports, for runs whose cases need them (cases.libs.PRELOAD_STEPS)
        steps += [s for s in libs.PRELOAD_STEPS.values() if s not in steps]
    return preload, tuple(sorted(steps, key=lambda s: ":" in s))


def selection(env_name: str, wanted: Collection[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(modules, steps)`` a zygote of ``env_name`` runs for jobs whose backends
    want ``wanted`` (their ``Backend.preload`` and ``warmup`` entries; ``None``:
    every one): :data:`PRELOAD`, then the entries of :func:`declared` that are
    wanted, in their order there."""
    optional, steps = declared(env_name)
    if wanted is not None:
        optional, steps = tuple(m for m in optional if m in wanted), tuple(s for s in steps if s in wanted)
    return (*PRELOAD.get(env_name, ()), *optional), steps


def catalogue(env_name: str) -> tuple[str, ...]:
    """The modules a zygote of ``env_name`` imports for some runs and not others
    (:func:`declared`): a job that imports one after its startup, undeclared by
    its backend, would have its import time in a timed call where its zygote
    did not preload it."""
    optional, steps = declared(env_name)
    return tuple(dict.fromkeys([*optional, *(s.partition(":")[0] for s in steps)]))


def usable(env_name: str, env: dict) -> bool:
    """Whether a job of environment ``env_name`` with variables ``env`` can be forked."""
    return env_name in PRELOAD and not any(k in env for k in READ_AT_IMPORT)


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
                        "harness.forkserver",
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
            hello = json.loads(self._sock.recv(_MSG) or b"null")
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
                data = self._sock.recv(_MSG)
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


# -- the zygote's side ---------------------------------------------------------


def _threads() -> list[str]:
    names = []
    for t in sorted(os.listdir("/proc/self/task")):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            names.append("?")
    return names


def serve(what: dict, fd: int) -> int:
    """The zygote's main loop: preload (``what["preload"]``), check, run the
    steps that need a scratch per-job environment (``what["steps"]``), check
    again (:func:`_preload`), then fork a child per request until the parent
    closes the socket (:func:`_fork_loop`)."""
    from . import limits

    limits.die_with_parent()
    sock = socket.socket(fileno=fd)
    env = _preload(what, sock)
    if env is None:
        return 1
    _fork_loop(sock, *env)
    return 0


def _preload(what: dict, sock: socket.socket) -> tuple[dict, list] | None:
    """Import and warm what the zygote's jobs share, then tell the parent ``ready`` (or
    ``unsafe``, returning None: a thread started, a per-job variable set). Returns what
    the imports set in and removed from the environment, for each child to apply."""
    t0 = time.perf_counter()
    started_env = dict(os.environ)
    loaded, missing, stage = [], [], {}
    for name in what["preload"]:
        try:
            __import__(name)
            loaded.append(name)
        except ImportError:
            missing.append(name)
    leaked = [k for k in PER_JOB if k in os.environ]
    if not leaked:
        try:
            stage = zygote_warm.run(what.get("steps", ()), PER_JOB)
        except Exception as e:
            sock.send(json.dumps({"unsafe": f"{type(e).__name__}: {e}"[:2000]}).encode())
            return None
    preload_s = time.perf_counter() - t0
    threads = _threads()
    if len(threads) != 1 or leaked:
        done = ", ".join([*loaded, *stage.get("steps", [])])
        why = (
            f"{len(threads)} threads after importing {done} ({', '.join(threads)})"
            if len(threads) != 1
            else f"importing {', '.join(loaded)} set {', '.join(leaked)}, which each job sets itself"
        )
        sock.send(json.dumps({"unsafe": why}).encode())
        return None
    # what the imports set in the environment (jax: TF_CPP_MIN_LOG_LEVEL; torch_xla:
    # XLA_FLAGS += --xla_cpu_enable_fast_math=false), which a spawned worker would see
    # after its own imports: each child applies it over its job's environment
    set_by_imports = {k: v for k, v in os.environ.items() if started_env.get(k) != v and k not in PER_JOB}
    unset_by_imports = [k for k in started_env if k not in os.environ]
    import gc

    gc.collect()
    gc.freeze()  # the preloaded objects stay out of the children's collections (fewer copied pages)
    sock.send(
        json.dumps(
            {
                "ready": {
                    "preload_s": preload_s,
                    "preloaded": loaded,
                    "missing": missing,
                    "steps": stage.get("steps", []),
                    "steps_missing": stage.get("missing", []),
                    "steps_s": stage.get("seconds"),
                    "steps_scratch": stage.get("scratch"),
                    "set_by_imports": set_by_imports,
                    "pid": os.getpid(),
                }
            }
        ).encode()
    )
    return set_by_imports, unset_by_imports


def _fork_loop(sock: socket.socket, set_by_imports: dict, unset_by_imports: list) -> None:
    """Fork a child per request on ``sock`` and report each one's exit, until the
    parent closes the socket and the last child has ended."""
    children: dict[int, int] = {}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.set_wakeup_fd(wake_w)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    closing = False
    while not closing or children:
        for key, _ in sel.select():
            if key.fileobj is sock:
                try:
                    data, fds, _, _ = socket.recv_fds(sock, _MSG, 2)
                except OSError:
                    data, fds = b"", []
                if not data:
                    closing = True  # the parent is done: wait for the children, then go
                    sel.unregister(sock)
                    continue
                head, _, body = data.partition(b"\n")
                job_id = json.loads(head)["id"]
                if len(_threads()) != 1:
                    sock.send(json.dumps({"id": job_id, "error": f"a thread appeared: {', '.join(_threads())}"}).encode())
                    for f in fds:
                        os.close(f)
                    continue
                ack_r, ack_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(ack_r)
                    req = json.loads(body)
                    req["env"] = {**{k: v for k, v in req["env"].items() if k not in unset_by_imports}, **set_by_imports}
                    _child(req, fds, ack_w, [sock.fileno(), wake_r, wake_w, sel])
                os.close(ack_w)
                os.read(ack_r, 1)  # the child has its own session: the parent may kill its group
                os.close(ack_r)
                for f in fds:
                    os.close(f)
                children[pid] = job_id
                sock.send(json.dumps({"id": job_id, "pid": pid}).encode())
            else:
                while os.read(wake_r, 4096) == 4096:
                    pass
        _reap(sock, children, closing)


def _reap(sock: socket.socket, children: dict[int, int], closing: bool) -> None:
    """Collect the children that ended; tell the parent each one's exit code (unless it is gone)."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        job_id = children.pop(pid, None)
        if job_id is not None and not closing:
            sock.send(json.dumps({"id": job_id, "exit": os.waitstatus_to_exitcode(status)}).encode())


def _child(req: dict, fds: list[int], ack: int, close: list) -> None:
    """In the forked child: become the job's process and run ``argv``; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sel = close.pop()
        sel.close()
        for f in close:
            os.close(f)
        os.setsid()  # its own session and process group, as start_new_session gives
        from . import limits

        limits.die_with_parent()  # fork clears it: the child dies with the zygote (which dies with the harness)
        os.write(ack, b"1")
        os.close(ack)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for f in (null, *fds):
            os.close(f)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        code = _run(req["argv"])
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            import atexit as _atexit

            _atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _run(argv: list[str]) -> int:
    """Run ``python *argv`` (``-m module …`` or ``-c code …``) in this process; its exit code."""
    import runpy

    # the module was preloaded: runpy's warning about it would land in the job's stderr
    warnings.filterwarnings("ignore", message=".* found in sys.modules after import of package", category=RuntimeWarning)
    flag, target, *rest = argv
    try:
        if flag == "-m":
            sys.argv = [target, *rest]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif flag == "-c":
            sys.argv = ["-c", *rest]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
        else:
            raise ValueError(f"fork server runs '-m module' or '-c code', not {flag!r}")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    return 0


def preload_of(combos: Iterable) -> dict[str, set[str]]:
    """Per environment, the ``Backend.preload`` and ``Backend.warmup`` entries of the combos' backends,
    and the warm-up steps of the model libraries their cases need (``cases.libs.PRELOAD_STEPS``)."""
    out: dict[str, set[str]] = {}
    for c in combos:
        out.setdefault(c.env_name, set()).update(c.backend.preload, c.backend.warmup)
        out[c.env_name].update(
            libs.PRELOAD_STEPS[name] for name in getattr(c.case, "libraries", ()) if name in libs.PRELOAD_STEPS
        )
    return out


if __name__ == "__main__":
    sys.exit(serve(json.loads(sys.argv[1]), int(sys.argv[2])))
