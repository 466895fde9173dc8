"""The ``interpreter`` executor: ``jaxlib.mlir.dialects.stablehlo.eval_module``
on NumPy inputs (:class:`InterpreterProgram`), in a worker subprocess by
default (:class:`InterpreterWorker`: the interpreter aborts the process on ops
it lacks, and a crash becomes :class:`InterpreterCrashed`). The module text
goes to the worker once; the worker parses it once per concrete argument shape
(``eval_module`` specialises the module it runs), reported to
``on_parse(seconds, reason)``; no XLA compile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import _interp_worker
from .module import ExecutionError, Module, Report, format_shapes


class InterpreterCrashed(ExecutionError):
    """The reference interpreter aborted the (worker) process."""


class InterpreterLimitation(InterpreterCrashed):
    """The interpreter aborted on a valid module it is known not to run (a
    limitation of jaxlib's reference interpreter, not of the module)."""


#: stderr text of a known interpreter abort -> what it cannot run (the worker refuses a
#: zero-size contraction before running, :func:`_interp_worker.check_contractions`; this
#: table names the aborts that still happen)
KNOWN_ABORTS = {
    "Incompatible index and shape found while flattening index": "a zero-size dimension in an op such as dot_general (a zero-size contraction)",
}


class InterpreterWorker:
    """A persistent subprocess running ``_interp_worker.py``; restarted after a crash.

    ``starts`` counts process starts; modules are sent once per process."""

    def __init__(self):
        self.proc = None
        self._stderr = None
        self._sent: set = set()
        self.starts = 0

    def start(self) -> None:
        """Start the worker (imports jaxlib, makes its MLIR context) unless it runs."""
        if self.proc is not None and self.proc.poll() is None:
            return
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self.proc = subprocess.Popen(
            [sys.executable, "-u", _interp_worker.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self.starts += 1
        self._sent = set()
        if _interp_worker._read(self.proc.stdout) is None:
            self.proc.wait()
            raise InterpreterCrashed("interpreter worker failed to start:\n" + self._stderr_tail())

    def _stderr_tail(self, n=2000) -> str:
        try:
            self._stderr.seek(0)
            data = self._stderr.read().decode(errors="replace")
            lines = [l for l in data.splitlines() if not l.startswith(("I", "W")) or "ERROR" in l]
            return "\n".join(lines)[-n:]
        except Exception:
            return ""

    def run(self, module: Module, args):
        """``@main`` of ``module`` on NumPy ``args``: (outputs, info from the worker)."""
        self.start()
        try:
            if module.digest not in self._sent:
                _interp_worker._write(self.proc.stdin, ("register", module.digest, module.text))
                self._sent.add(module.digest)
            _interp_worker._write(self.proc.stdin, ("run", module.digest, args))
            msg = _interp_worker._read(self.proc.stdout)
        except (BrokenPipeError, OSError):
            msg = None
        if msg is None:
            self.proc.wait()
            rc = self.proc.returncode
            self.proc = None
            tail = self._stderr_tail()
            for pattern, what in KNOWN_ABORTS.items():
                if pattern in tail:
                    raise InterpreterLimitation(
                        f"{module.label}: jaxlib's StableHLO reference interpreter cannot run this module for argument "
                        f"shapes {format_shapes(a.shape for a in args)}: it aborts on {what} ({pattern!r}); "
                        f"a limitation of the interpreter, the xla executor runs it"
                    )
            raise InterpreterCrashed(
                f"{module.label}: StableHLO interpreter aborted (worker exit code {rc}); "
                f"usually an op the interpreter does not implement:\n{tail}"
            )
        if msg[0] == "limitation":
            raise InterpreterLimitation(f"{module.label}: {msg[1]} (argument shapes {format_shapes(a.shape for a in args)})")
        if msg[0] == "error":
            raise ExecutionError(f"{module.label}: StableHLO interpreter error: {msg[1]}")
        return msg[1], msg[2]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class LocalInterpreter:
    """The interpreter in this process (an abort kills it): tests and debugging."""

    def __init__(self):
        self._evaluator = None

    def start(self) -> None:
        if self._evaluator is None:
            self._evaluator = _interp_worker.Evaluator()

    def run(self, module: Module, args):
        self.start()
        if module.digest not in self._evaluator.texts:
            self._evaluator.register(module.digest, module.text)
        try:
            return self._evaluator.run(module.digest, args)
        except _interp_worker.Refused as e:
            raise InterpreterLimitation(f"{module.label}: {e}") from e
        except Exception as e:
            raise ExecutionError(f"{module.label}: StableHLO interpreter error: {type(e).__name__}: {e}") from e

    def close(self) -> None:
        self._evaluator = None


class InterpreterProgram:
    """``@main`` of one module on the reference interpreter, NumPy in and out.

    ``worker`` is an :class:`InterpreterWorker` (or :class:`LocalInterpreter`);
    :meth:`call_breakdown` splits the last call's time."""

    def __init__(self, module: Module, worker, on_parse: Report | None = None):
        self.module = module
        self.worker = worker
        self.on_parse = on_parse
        self.parses = 0
        self._checked: set = set()
        self._breakdown: dict[str, float] = {}

    def convert(self, arrays, canonicalize: bool = False) -> list[np.ndarray]:
        return self.module.cast(arrays, canonicalize)

    def __call__(self, *args) -> list[np.ndarray]:
        shapes = tuple(a.shape for a in args)
        if shapes not in self._checked:
            self.module.check(shapes, [a.dtype for a in args])
            self._checked.add(shapes)
        t0 = time.perf_counter()
        outs, info = self.worker.run(self.module, args)
        wall = time.perf_counter() - t0
        if info["parsed"]:
            self.parses += 1
            if self.on_parse is not None:
                self.on_parse(info["parse_s"], f"new argument shapes {format_shapes(shapes)} for {self.module.label}")
        self._breakdown = {
            "interp_eval_s": info["eval_s"],
            "interp_parse_s": info["parse_s"],
            "ipc_s": wall - info["eval_s"] - info["parse_s"],
        }
        return outs

    def call_breakdown(self) -> dict[str, float]:
        """The last call's seconds: ``interp_eval_s`` (``eval_module``),
        ``interp_parse_s`` (0 unless its shape was new) and ``ipc_s`` (the rest:
        pickling, pipes, NumPy <-> MLIR attribute conversion)."""
        return dict(self._breakdown)


class InterpreterExecutor:
    """One :class:`InterpreterProgram` per module text on one worker (:func:`execute`)."""

    def __init__(self, isolated: bool = True):
        self.isolated = isolated
        self.worker = InterpreterWorker() if isolated else LocalInterpreter()
        self._programs: dict[str, InterpreterProgram] = {}

    def compile_count(self) -> int:
        return 0

    def program(self, text: str) -> InterpreterProgram:
        p = self._programs.get(text)
        if p is None:
            p = self._programs[text] = InterpreterProgram(Module(text), self.worker)
        return p

    def run(self, text: str, args) -> list[np.ndarray]:
        p = self.program(text)
        return p(*p.convert(args))

    def close(self) -> None:
        self.worker.close()
