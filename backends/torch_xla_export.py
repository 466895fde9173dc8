"""torch.export -> torch_xla StableHLO, run inside the ``xla`` environment.

    .venv-xla/bin/python -m backends.torch_xla_export

An export server: it imports torch + torch_xla (seconds), writes one JSON line
``{"ready": true, "import_s": .., "versions": {...}}`` (or ``{"ready": false,
"error": ..}`` and exits), then answers each JSON line on stdin,
``{"case", "mode", "canonicalize", "inputs": NPZ path}``, with one JSON line,
until stdin closes. The example inputs (``arg0``, ``arg1``, ... in the npz)
are the first call's arrays. An answer is either

    {"ok": true, "text": MLIR, "arg_positions": [...], "constants": [...],
     "inputs": [...], "outputs": [...], "export_s": .., "to_stablehlo_s": ..,
     "counters": {...}, "versions": {...}}

where ``arg_positions[i]`` is the case input that ``@main``'s i-th argument
takes (torch_xla orders ``@main``'s arguments by its own graph traversal, not
by the program's signature, and drops inputs the graph does not read) and
``constants`` lists the extra arrays torch_xla lifted into arguments, or

    {"ok": false, "stage": "export" | "to_stablehlo", "error": "Type: message",
     "where": "file:line in function"}

The client is ``backends.torch_xla_stablehlo.ExportServer``.

    .venv-xla/bin/python -m backends.torch_xla_export --zygote SOCKET

A zygote of export servers, one per harness process (a run, or a pytest
worker of the gate: :func:`shared_socket`, whose :class:`ExportZygote` starts it): it imports torch +
torch_xla once, writes the ready line, listens on the Unix socket ``SOCKET``
and forks one export server per connection, serving that connection as the
server above serves its pipes; the client sends the file descriptor the
server's stderr goes to with its first byte (``SCM_RIGHTS``). Each job still
gets a fresh process of its own; it no longer pays the ~7 CPU-s import (idle,
2-core machine). The zygote dies with the process that started it.

Importable from the main environment (stdlib + numpy at module level); torch
and torch_xla are imported inside the functions.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import io
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np


def named_module(fn, names):
    """An ``nn.Module`` whose ``forward`` takes the case's inputs by name.

    torch 2.9's ``ExportedProgram.module()`` inserts a ``_guards_fn`` that
    fails with ``NameError: name 'L' is not defined`` for a ``forward(*xs)``
    signature; torch_xla re-traces through ``module()`` in
    ``run_decompositions``, so the program needs positional parameters.
    """
    import keyword

    import torch

    params = []
    for i, n in enumerate(names):
        ok = n.isidentifier() and not keyword.iskeyword(n) and n not in ("self", "fn")
        params.append(n if ok and n not in params else f"arg{i}")
    src = (
        f"class Program(torch.nn.Module):\n    def forward(self, {', '.join(params)}):\n        return fn({', '.join(params)})\n"
    )
    ns = {"torch": torch, "fn": fn}
    exec(compile(src, "<dynshape torch_xla program>", "exec"), ns)
    return ns["Program"]()


def canonicalize_dims(ep) -> list[str]:
    """Rewrite ``aten.unsqueeze(x, d)`` with ``d < 0`` to ``d + x.dim() + 1``.

    torch_xla 2.9.0's ``dynamic_unsqueeze_to_view`` pass splices the new
    axis in at ``view_args[:d] + [1] + view_args[d:]`` without normalising a
    negative ``d``: ``unsqueeze(-1)`` of a ``(?,)`` tensor becomes a
    ``(1, ?)`` view. Returns a note per rewrite.
    """
    import torch

    notes = []
    for n in ep.graph_module.graph.nodes:
        if n.op == "call_function" and n.target == torch.ops.aten.unsqueeze.default:
            d = n.args[1]
            if isinstance(d, int) and d < 0:
                rank = n.args[0].meta["val"].dim()
                n.args = (n.args[0], d + rank + 1)
                notes.append(f"{n.name}: unsqueeze dim {d} -> {d + rank + 1}")
    if notes:
        ep.graph_module.recompile()
    return notes


def _where(e: BaseException) -> str:
    """``path:line in function: source`` of the innermost torch_xla frame (else
    the innermost frame), the path relative to site-packages."""
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    ours = [f for f in tb if "/torch_xla/" in f.filename.replace(os.sep, "/")]
    f = (ours or tb)[-1]
    path = f.filename
    i = path.rfind("site-packages/")
    if i >= 0:
        path = path[i + len("site-packages/") :]
    return f"{path}:{f.lineno} in {f.name}" + (f": {f.line.strip()}" if f.line else "")


def _error_text(e: BaseException, limit: int = 1500) -> str:
    msg = str(e)
    # C++ errors carry long frame dumps; keep the message proper
    cut = msg.find("\nException raised from")
    if cut > 0:
        msg = msg[:cut]
    msg = "\n".join(l for l in msg.splitlines() if not l.startswith("Use tlparse")).strip()
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text if len(text) <= limit else text[:limit] + " ..."


def _array_b64(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode()


def array_from_b64(s: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(s)), allow_pickle=False)


def export_case(case, mode: str, arrays, canonicalize: bool = False) -> dict:
    """Export ``case``'s torch form in ``mode`` (``unbounded``/``bounded``)
    with ``arrays`` as example inputs; returns the result dict described above."""
    import torch
    import torch_xla
    import torch_xla.debug.metrics as met
    from torch_xla.stablehlo import StableHLOExportOptions, exported_program_to_stablehlo

    from .base import torch_dims

    result: dict = {"versions": {"torch": torch.__version__, "torch_xla": torch_xla.__version__}}
    names = [inp.name for inp in case.inputs]
    module = named_module(case.torch_fn(), names)
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)
    dynamic = tuple(torch_dims(case, mode)) if mode != "static" else None
    dynamic = tuple(d or None for d in dynamic) if dynamic else None

    t0 = time.perf_counter()
    try:
        ep = torch.export.export(module, args, dynamic_shapes=dynamic, strict=False)
    except Exception as e:
        return dict(result, ok=False, stage="export", error=_error_text(e), where=_where(e))
    result["export_s"] = time.perf_counter() - t0
    result["range_constraints"] = {str(k): str(v) for k, v in ep.range_constraints.items()}
    result["notes"] = canonicalize_dims(ep) if canonicalize else []

    t0 = time.perf_counter()
    try:
        shlo = exported_program_to_stablehlo(ep, StableHLOExportOptions(include_human_readable_text=True))
        text = shlo.get_stablehlo_text("forward")
    except Exception as e:
        return dict(result, ok=False, stage="to_stablehlo", error=_error_text(e), where=_where(e))
    result["to_stablehlo_s"] = time.perf_counter() - t0

    func = shlo._bundle.stablehlo_funcs[0]
    meta = func.meta
    positions, constants = [], []
    for loc in meta.input_locations:
        kind = getattr(loc.type_, "value", str(loc.type_))
        if kind == "input_arg":
            positions.append(int(loc.position))
        elif kind == "constant":
            positions.append(None)
            constants.append((len(positions) - 1, _array_b64(shlo._bundle.additional_constants[loc.position])))
        else:  # a parameter: the case programs have none
            return dict(
                result,
                ok=False,
                stage="to_stablehlo",
                error=f"@main argument {len(positions)} is parameter {loc.name!r}: not supported",
            )
    result.update(
        ok=True,
        text=text,
        arg_positions=positions,
        constants=constants,
        inputs=[{"shape": s.shape, "dtype": s.dtype, "dynamic_dims": list(s.dynamic_dims or [])} for s in meta.input_signature],
        outputs=[{"shape": s.shape, "dtype": s.dtype} for s in meta.output_signature],
        unused_inputs=[int(p.position) for p, _ in meta.unused_inputs],
        counters={k: int(met.counter_value(k) or 0) for k in ("UncachedCompile", "CachedCompile")},
    )
    return result


def run_job(job: dict) -> dict:
    """One export job: ``{"case", "mode", "canonicalize", "inputs": NPZ path}``."""
    import cases

    try:
        case = cases.get(job["case"], checked=False)  # the harness checked its oracle
        with np.load(job["inputs"], allow_pickle=False) as z:
            arrays = [z[f"arg{i}"] for i in range(len(z.files))]
        return export_case(case, job["mode"], arrays, bool(job.get("canonicalize")))
    except Exception as e:  # anything else: still answer
        return {
            "ok": False,
            "stage": "worker",
            "error": _error_text(e),
            "where": _where(e),
            "traceback": traceback.format_exc()[-4000:],
        }


def _send(out, msg: dict) -> None:
    out.write(json.dumps(msg) + "\n")
    out.flush()


def serve(inp, out) -> int:
    """Import torch + torch_xla, say ready on ``out``, then answer one JSON line
    per job line of ``inp`` until it closes."""
    t0 = time.perf_counter()
    try:
        import torch
        import torch_xla
        import torch_xla.debug.metrics
        import torch_xla.stablehlo

        import cases  # noqa: F401
    except Exception as e:
        _send(out, {"ready": False, "error": _error_text(e), "where": _where(e)})
        return 1
    _send(
        out,
        {
            "ready": True,
            "import_s": time.perf_counter() - t0,
            "pid": os.getpid(),
            "versions": {"torch": torch.__version__, "torch_xla": torch_xla.__version__},
        },
    )
    for line in inp:
        if line.strip():
            _send(out, run_job(json.loads(line)))
    return 0


# -- the client's side (imported by backends.torch_xla_stablehlo in the main environment) --

#: where a job finds its run's export zygote (set by ``TorchXlaStableHLO.job_env``)
SOCKET_ENV = "DYNSHAPE_XLA_EXPORT_SOCKET"


class ExportFailed(RuntimeError):
    """torch_xla could not produce StableHLO for the case (message: torch_xla's error)."""


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


class _Forked:
    """The part of :class:`subprocess.Popen` :class:`ExportServer` uses, for a
    server the zygote forked: its pipes are one Unix socket; it ends when the
    socket closes (its exit status is the zygote's to reap: ``-1`` here)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.stdin = sock.makefile("w", encoding="utf-8")
        self.stdout = sock.makefile("r", encoding="utf-8")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.stdin.close()
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.returncode = -1
        return self.returncode

    def kill(self) -> None:
        self.wait()


class ExportZygote:
    """``backends.torch_xla_export --zygote``: torch + torch_xla imported once,
    an export server forked per job that connects (:data:`SOCKET_ENV`)."""

    def __init__(self, env: dict, timeout: float = 600.0):
        from backends import envs

        self._dir = tempfile.mkdtemp(prefix="dynshape-xla-zygote-")
        self.address = os.path.join(self._dir, "export.sock")
        self.proc = subprocess.Popen(
            [envs.python_for("xla"), "-m", "backends.torch_xla_export", "--zygote", self.address],
            cwd=str(envs.ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(self.proc.stdout, lines), daemon=True).start()
        try:
            hello = json.loads(lines.get(timeout=timeout) or "{}")
        except queue.Empty:
            hello = {"error": f"no answer within {timeout:.0f}s"}
        if not hello.get("ready"):
            self.close()
            raise ExportFailed(f"torch_xla export zygote could not start: {hello.get('error', 'it exited')}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


_ZYGOTES: dict[tuple, ExportZygote | None] = {}
_ZYGOTES_LOCK = threading.Lock()


def shared_socket(env: dict) -> str | None:
    """The address of this process's export zygote for ``env`` (started on first
    use, closed at exit), or ``None`` where it cannot start: each job then starts
    a server of its own, which reports why."""
    key = tuple(sorted(env.items()))
    with _ZYGOTES_LOCK:  # the runner's job threads
        if key not in _ZYGOTES:
            try:
                _ZYGOTES[key] = ExportZygote(_server_env(env))
            except Exception:
                _ZYGOTES[key] = None
        z = _ZYGOTES[key]
    return None if z is None or z.proc.poll() is not None else z.address


@atexit.register
def _close_zygotes() -> None:
    for z in _ZYGOTES.values():
        if z is not None:
            z.close()
    _ZYGOTES.clear()


def _server_env(base) -> dict:
    """An export server's environment: its job's (``base``) and the xla environment's variables."""
    from backends import envs

    env = dict(base)
    env.update(envs.env_vars("xla"))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``, Linux)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def zygote(path: str, out) -> int:
    """Import torch + torch_xla, listen on ``path`` and fork an export server
    (:func:`serve`) per connection, its stderr the descriptor the client sent."""
    _die_with_parent()
    t0 = time.perf_counter()
    try:
        import torch_xla
        import torch_xla.debug.metrics
        import torch_xla.stablehlo

        import cases  # noqa: F401
    except Exception as e:
        _send(out, {"ready": False, "error": _error_text(e), "where": _where(e)})
        return 1
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    _send(out, {"ready": True, "import_s": time.perf_counter() - t0, "pid": os.getpid(), "torch_xla": torch_xla.__version__})
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        conn, _ = listener.accept()
        try:
            _, fds, _, _ = socket.recv_fds(conn, 1, 1)
        except OSError:
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            for fd in fds[:1]:
                os.dup2(fd, 1)  # library prints, as in main()
                os.dup2(fd, 2)
            rc = 1
            try:
                rc = serve(conn.makefile("r", encoding="utf-8"), conn.makefile("w", buffering=1, encoding="utf-8"))
            finally:
                os._exit(rc)
        for fd in fds:
            os.close(fd)
        conn.close()


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # library prints must not corrupt the protocol
    sys.stdout = sys.stderr
    if sys.argv[1:2] == ["--zygote"]:
        return zygote(sys.argv[2], proto)
    return serve(sys.stdin, proto)


if __name__ == "__main__":
    sys.exit(main())
