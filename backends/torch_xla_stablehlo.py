"""torch_xla StableHLO export, executed by our StableHLO executors.

The backend object runs in the ``main`` environment (where
``engines.stablehlo`` and its jax-based executors live). ``startup`` starts
an :class:`ExportServer`: ``.venv-xla/bin/python -m backends.torch_xla_export``,
which imports torch + torch_xla (~7 s idle on the 2-core machine, 10-20 s
loaded) and waits; or, in a run (:meth:`TorchXlaStableHLO.job_env`), a fork of
the run's export zygote, which imported them once for all the run's jobs
(a fresh process per job still; 0.03 s to start).
The first call of a job sends it the call's inputs (a temporary ``.npz``);
it runs ``torch.export`` with ``torch.export.Dim`` (``Dim(max=)`` in bounded
mode), then ``torch_xla.stablehlo.exported_program_to_stablehlo`` under
``PJRT_DEVICE=CPU EXPERIMENTAL_XLA_UNBOUNDED_DYNAMISM=1``; the server then
idles until :meth:`TorchXlaStableHLO.close` or the end of the process. Every call then runs the returned text on our
XLA executor (or the reference interpreter), its arguments permuted into
torch_xla's ``@main`` order.

Compile stages: ``export`` (1 per successful export, timed inside the
server) and ``xla`` (the executor's XLA compiles: one per novel shape, as it
refines the `?` dims to the call's shapes; in ``bucketed`` mode one per
power-of-two bucket, ``engines.stablehlo.execution.xla_padded``) or, with the interpreter,
``parse`` (one per novel shape in its worker).

A failed export (or a server that could not start, e.g. no ``.venv-xla``)
is remembered: every later call of the job raises the same error without
re-exporting, so each shape's record carries torch_xla's message.

Variants: ``torch_xla_stablehlo`` exports the catalogue's program as it is.
``torch_xla_stablehlo_canon`` first rewrites negative ``unsqueeze`` dims
(``unsqueeze(-1)`` -> ``unsqueeze(rank)``), working around torch_xla 2.9.0's
``dynamic_unsqueeze_to_view`` bug, so the rest of the pipeline can be
measured; ``torch_xla_stablehlo_interp`` is that with the reference interpreter.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import tempfile
import threading
from typing import Any, ClassVar

import numpy as np

from .base import Backend, BoundsChecked, Counter, Program, check_bounds
from .stablehlo_base import (
    PARSE,
    REFINE,
    XLA,
    XLA_SCOPE,
    InterpreterArrays,
    InterpreterHost,
    XlaArrays,
    XlaRuntime,
    single,
    xla_executor,
)
from .torch_xla_export import SOCKET_ENV, ExportFailed, _Forked, _pump, _server_env, shared_socket
from .torch_xla_lazy import XLA_RUNTIME_COST

EXPORT = Counter("instrumented", "torch.export + torch_xla exported_program_to_stablehlo runs (in the xla env's export server)")


class ExportServer:
    """:mod:`backends.torch_xla_export` serving in the xla environment: one
    interpreter start and ``import torch, torch_xla`` (:meth:`start`), then one
    export per :meth:`export` (a JSON line each way).

    ``starts`` counts process starts. Raises :class:`backends.envs.EnvError`
    when ``.venv-xla`` is missing and :class:`ExportFailed` when the server
    dies or gives no answer in time."""

    def __init__(self):
        self.proc = None
        self.starts = 0
        self.import_s = None
        self.pid: int | None = None  # the server process's (a fork of the zygote's, or its own)
        self._lines: queue.Queue | None = None
        self._tmp = None
        self._stderr = None
        self._jobs = 0

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 600.0) -> None:
        """Start the server and wait until it has imported torch_xla (no-op if
        running): forked by the run's zygote where ``$DYNSHAPE_XLA_EXPORT_SOCKET``
        names one that answers, else a process of its own."""
        from backends import envs

        if self.running():
            return
        address = os.environ.get(SOCKET_ENV)
        if address:
            try:
                return self._start_forked(address, timeout)
            except OSError:
                self.close()  # the zygote is gone: a process of our own
        python = envs.python_for("xla")
        env = _server_env(os.environ)
        self._tmp = tempfile.TemporaryDirectory(prefix="dynshape-xla-export-")
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-m", "backends.torch_xla_export"],
            cwd=str(envs.ROOT),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._handshake(timeout, "start (import torch, torch_xla)")

    def _start_forked(self, address: str, timeout: float) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
        self._tmp = tempfile.TemporaryDirectory(prefix="dynshape-xla-export-")
        self._stderr = tempfile.TemporaryFile()
        socket.send_fds(sock, [b"s"], [self._stderr.fileno()])
        sock.settimeout(None)
        self.proc = _Forked(sock)
        self._handshake(timeout, "start (forked by the run's export zygote)")

    def _handshake(self, timeout: float, what: str) -> None:
        """Count the start of :attr:`proc` (a process, or a fork of the zygote) and
        wait for its ready line; :class:`ExportFailed` if it could not import torch_xla."""
        self.starts += 1
        self._lines = queue.Queue()
        threading.Thread(target=_pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        hello = self._answer(timeout, what)
        if not hello.get("ready"):
            self.close()
            raise ExportFailed(f"torch_xla export server could not start: {hello.get('error')}")
        self.import_s = hello.get("import_s")
        self.pid = hello.get("pid")

    def export(self, case_name: str, mode: str, arrays, canonicalize: bool = False, timeout: float = 600.0) -> dict:
        """Export ``case_name``'s torch form in ``mode`` at ``arrays``' sizes; the result dict."""
        self.start(timeout)
        npz = os.path.join(self._tmp.name, f"inputs{self._jobs}.npz")
        self._jobs += 1
        np.savez(npz, **{f"arg{i}": np.asarray(a) for i, a in enumerate(arrays)})
        job = {"case": case_name, "mode": mode, "canonicalize": bool(canonicalize), "inputs": npz}
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # it died: _answer reports how
        try:
            return self._answer(timeout, f"export of {case_name} ({mode})")
        finally:
            os.remove(npz)

    def _answer(self, timeout: float, what: str) -> dict:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise ExportFailed(f"torch_xla export server gave no answer to the {what} within {timeout:.0f}s") from None
        if line is None:
            rc = self.proc.wait()
            tail = self._stderr_tail()
            self.close()
            raise ExportFailed(f"torch_xla export server exited with code {rc} during the {what}; stderr tail:\n{tail}")
        return json.loads(line)

    def _stderr_tail(self, n: int = 15) -> str:
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().decode(errors="replace").strip().splitlines()[-n:])

    def close(self) -> None:
        """Stop the server (it exits when its stdin closes)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.close()
                    self.proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def run_exports(jobs, timeout: float = 600.0) -> list[dict]:
    """Export several ``(case_name, mode, arrays, canonicalize)`` with one
    :class:`ExportServer`; a result dict each."""
    server = ExportServer()
    try:
        server.start(timeout)
        return [server.export(name, mode, arrays, canonicalize, timeout) for name, mode, arrays, canonicalize in jobs]
    finally:
        server.close()


def run_export(
    case_name: str, mode: str, arrays, canonicalize: bool = False, timeout: float = 600.0, server: ExportServer | None = None
) -> dict:
    """One export, on ``server`` if given (else on a server of its own, see :func:`run_exports`)."""
    if server is None:
        return run_exports([(case_name, mode, arrays, canonicalize)], timeout)[0]
    return server.export(case_name, mode, arrays, canonicalize, timeout)


def describe_failure(res: dict) -> str:
    where = f" [at {res['where']}]" if res.get("where") else ""
    return f"torch_xla {res.get('stage', '?')} failed: {res.get('error', '?')}{where}"


class TorchXlaExported:
    """Program mixin (before the arrays class): the first call exports the case in
    the backend's export server at its shapes; :meth:`executor_for` (the concrete
    program's) runs the module, its arguments permuted into @main's order. A
    failed export is remembered: every later call raises it again."""

    backend: Any
    case: Any
    mode: str
    count: Any
    convert: Any

    def __init__(self, backend, case, mode):
        #: the export server's answer; the failure every call raises once it failed
        self.result: dict | None = None
        self.failure: str | None = backend.startup_failure
        #: what torch_xla made of the case's dims (``guards``)
        self.notes: list[str] = []
        #: ``run(*args)`` of the exported module (made by the first call)
        self.runner: Any = None
        super().__init__(backend, case, mode)  # type: ignore[call-arg]

    def executor_for(self, module):
        raise NotImplementedError

    def run(self, *args):
        if self.runner is None:
            if self.failure is not None:
                raise ExportFailed(self.failure)
            self.runner = self.export(args)
        return self.runner(*args)

    def export(self, args):
        """Export at the first call's sizes; returns ``run(*args)`` for the module."""
        case, mode, backend = self.case, self.mode, self.backend
        try:
            res = run_export(
                case.name,
                mode,
                [np.asarray(a) for a in args],
                backend.canonicalize,
                timeout=min(600.0, backend.timeout_s),
                server=backend.server,
            )
        except Exception as e:  # no answer (server died, timed out) or no xla env: don't retry per shape
            self.failure = str(e) if isinstance(e, ExportFailed) else f"{type(e).__name__}: {e}"
            raise
        self.result = res
        if not res.get("ok"):
            self.failure = describe_failure(res)
            raise ExportFailed(self.failure)
        shapes = ", ".join(str(tuple(a.shape)) for a in args)
        self.count(
            "export",
            1,
            float(res.get("export_s") or 0.0) + float(res.get("to_stablehlo_s") or 0.0),
            f"torch.export + torch_xla StableHLO export of {case.name} ({mode}) at argument shapes {shapes}",
        )
        self.notes = record(case, mode, res)
        return self.module_runner(res)

    def module_runner(self, res):
        """``run(*args)``: the module's program on the case's inputs, permuted into @main's order."""
        from engines.stablehlo import Module

        from .torch_xla_export import array_from_b64

        case, mode = self.case, self.mode
        order = res["arg_positions"]
        consts = dict(res.get("constants", []))
        names = [f"constant {i}" if p is None else case.inputs[p].name for i, p in enumerate(order)]
        module = Module(res["text"], f"{case.name} ({mode}, torch_xla)", names)
        prog = self.executor = self.executor_for(module)
        values = dict(zip(consts, self.convert([array_from_b64(consts[i]) for i in consts]), strict=False))

        def run(*args):
            outs = prog(*[values[i] if p is None else args[p] for i, p in enumerate(order)])
            return single(outs)  # a bucketed program's PaddedResults stays on the device

        return run

    def guards(self):
        return list(self.notes)


class TorchXlaProgram(TorchXlaExported, XlaArrays):
    """torch_xla's module on the mode's XLA program (bucketed: torch_xla's `?`
    module, bounds dropped anyway, per power-of-two bucket)."""

    def convert(self, arrays):
        """Bounded mode: an input above its bound is refused naming dim, size and bound."""
        check_bounds(self.case, self.mode, arrays)
        if self.host:  # @main's argument order (constants among them) is known at the first call: staged in the call
            return [np.ascontiguousarray(a) for a in arrays]
        return super().convert(arrays)

    def executor_for(self, module):
        return xla_executor(self, module)


class TorchXlaInterpProgram(BoundsChecked, TorchXlaExported, InterpreterArrays):
    """torch_xla's module on the backend's interpreter worker."""

    def executor_for(self, module):
        return self.interpreter_executor(module)


def record(case, mode, res) -> list[str]:
    """What torch_xla made of the case's dims: specialised axes, dropped bounds, rewrites."""
    notes = list(res.get("notes", []))
    sig = res.get("inputs", [])
    for i, p in enumerate(res.get("arg_positions", [])):
        if p is None or i >= len(sig):
            continue
        inp = case.inputs[p]
        dyn = case.dynamic_axes(mode)[p]
        kept = set(sig[i].get("dynamic_dims", []))
        for ax, dim in dyn.items():
            if ax not in kept:
                notes.append(f"{inp.name} axis {ax} ({dim.name}) specialised to {sig[i]['shape'][ax]}")
            elif dim.max is not None:
                notes.append(f"{inp.name} axis {ax} ({dim.name}<={dim.max}): bound dropped, exported as '?'")
    for p in res.get("unused_inputs", []):
        notes.append(f"input {case.inputs[p].name} is not an argument of @main")
    return notes


class TorchXlaStableHLO(XlaRuntime, Backend):
    name = "torch_xla_stablehlo"
    forms = ("torch",)
    # bucketed is offered where torch_xla's export gets through (the canon
    # variant): as written, its export fails on every catalogue case in every mode
    modes = ("unbounded", "bounded")
    env = "main"  # the executors are here; the export runs in a server process of the xla env
    requires = ("jax", "jaxlib")
    helper_envs = ("xla",)
    counters = {"export": EXPORT, "xla": XLA}
    work_counters = {"refine": REFINE}
    compile_scope = (
        "torch.export + torch_xla's exported_program_to_stablehlo in the export server, once at the "
        "first call's shapes ('export'; its process start is not in it); " + XLA_SCOPE
    )
    quick_leaves_out = (XLA_RUNTIME_COST,)
    canonicalize = False
    program: ClassVar[type[Program]] = TorchXlaProgram

    def __init__(self):
        super().__init__()
        #: this worker's export server, and why it could not start (``startup``)
        self.server: ExportServer | None = None
        self.startup_failure: str | None = None

    def available(self):
        from backends import envs

        ok, why = envs.modules_available("xla", ("torch", "torch_xla"))
        if not ok:
            return ok, why
        return envs.modules_available("main", self.requires)

    def job_env(self, env):
        """The run's export zygote (:func:`shared_socket`): each job's server is
        forked from it instead of importing torch + torch_xla again."""
        address = shared_socket(env)
        return {SOCKET_ENV: address} if address else {}

    def startup(self):
        """Load the executors and start the export server. A server that cannot
        start (no ``.venv-xla``, torch_xla fails to import) does not fail the job:
        every call reports it."""
        super().startup()
        self.server = ExportServer()
        try:
            self.server.start(timeout=min(600.0, self.timeout_s))
        except Exception as e:
            self.server.close()
            self.startup_failure = str(e) if isinstance(e, ExportFailed) else f"{type(e).__name__}: {e}"

    def prepare(self, case, mode):
        return self.program(self, case, mode)

    def teardown(self):
        self.close()

    def close(self):
        """Stop the export server. Until then it idles (its ~1 s teardown would
        otherwise share the CPUs with the calls being measured); it also exits
        when this process does."""
        if self.server is not None:
            self.server.close()


class TorchXlaStableHLOCanon(TorchXlaStableHLO):
    name = "torch_xla_stablehlo_canon"
    canonicalize = True
    modes = ("unbounded", "bounded", "bucketed")


class TorchXlaStableHLOCanonInterp(InterpreterHost, TorchXlaStableHLOCanon):
    name = "torch_xla_stablehlo_interp"
    modes = ("unbounded", "bounded")
    counters = {"export": EXPORT, "parse": PARSE}
    work_counters = {}
    compile_scope = (
        "torch.export + torch_xla's exported_program_to_stablehlo in the export server, once ('export') "
        "+ the interpreter worker's parse/specialisation per new argument shape ('parse')"
    )
    program = TorchXlaInterpProgram

    def close(self):
        InterpreterHost.close(self)
        TorchXlaStableHLO.close(self)
