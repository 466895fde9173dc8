"""The fork server's own side: preload, check it is still one thread, fork a
child per job request and report each one's exit (the parent's side is
:mod:`harness.forkserver`; the two speak over one ``SOCK_SEQPACKET`` socket)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import time
import warnings

from . import zygote_warm
from .zygote_policy import PER_JOB

#: the largest message (a job's environment and argv)
MSG_BYTES = 1 << 20


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
                    data, fds, _, _ = socket.recv_fds(sock, MSG_BYTES, 2)
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


if __name__ == "__main__":
    sys.exit(serve(json.loads(sys.argv[1]), int(sys.argv[2])))
