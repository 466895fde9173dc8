"""Executors for StableHLO text with `?` (and bounded) dims.

``xla``
    Per call: check the arguments against ``@main``'s signature (rank, static
    dims, dtype, ``#stablehlo.bounds``), drop the bounds, give ``@main`` the
    call's concrete argument types, run ``jax.extend.mlir.refine_polymorphic_shapes``
    (propagates the static shapes through ``get_dimension_size``/``dynamic_*``;
    also evaluates jax's ``shape_assertion`` custom calls), compile with the
    PJRT CPU client (``compile_and_load``).  Executables are cached per
    (module, concrete argument types); ``stats.compiles`` counts XLA compiles
    exactly.
``interpreter``
    ``jaxlib.mlir.dialects.stablehlo.eval_module`` on a freshly parsed module
    (shape-agnostic, 0 compiles).  It aborts the process on ops it lacks, so
    ``isolated=True`` (the default) runs it in a worker subprocess and turns a
    crash into :class:`InterpreterCrashed`.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import types as T
from . import _interp_worker


class ExecutionError(Exception):
    pass


class InterpreterCrashed(ExecutionError):
    """The reference interpreter aborted the (worker) process."""


# --------------------------------------------------------------- signatures
def main_signature(text: str):
    """[(shape, dtype, bounds)] of @main's args and results (shape: None = `?`)."""
    from jaxlib.mlir import ir

    from .verify import make_context

    ctx = make_context()
    with ctx:
        module = ir.Module.parse(text)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                return ([T.parse_tensor_type(str(t)) for t in ft.inputs],
                        [T.parse_tensor_type(str(t)) for t in ft.results])
    raise ExecutionError("module has no @main")


def check_args(sig_inputs, args) -> None:
    if len(sig_inputs) != len(args):
        raise ExecutionError(f"@main takes {len(sig_inputs)} arguments, got {len(args)}")
    for i, ((shape, dtype, bounds), a) in enumerate(zip(sig_inputs, args)):
        a = np.asarray(a)
        want = T.MLIR_TO_NUMPY.get(dtype)
        if want is not None and a.dtype != want:
            raise ExecutionError(f"argument {i}: dtype {a.dtype} but @main expects {dtype} ({want})")
        if a.ndim != len(shape):
            raise ExecutionError(f"argument {i}: rank {a.ndim} but @main expects rank {len(shape)}")
        for d, (s, n) in enumerate(zip(shape, a.shape)):
            if s is not None and s != n:
                raise ExecutionError(f"argument {i}: dim {d} is {n} but @main fixes it to {s}")
            if bounds is not None and bounds[d] is not None and n > bounds[d]:
                raise ExecutionError(f"argument {i}: dim {d} is {n}, above its bound {bounds[d]}")


# --------------------------------------------------------------------- XLA
@dataclass
class XlaStats:
    compiles: int = 0
    cache_hits: int = 0
    compile_seconds: List[float] = field(default_factory=list)
    refine_seconds: List[float] = field(default_factory=list)


def refine(text: str, arg_types: Sequence) -> bytes:
    """Module bytecode with @main specialised to ``arg_types`` [(shape, np dtype)] and refined."""
    import jax.extend.mlir as jm
    from jaxlib.mlir import ir

    from .verify import make_context

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(T.strip_bounds(text))
        main = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                main = op
        if main is None:
            raise ExecutionError("module has no @main")
        from jaxlib.mlir.dialects import stablehlo

        ft = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        new_inputs = []
        for (shape, dtype), old in zip(arg_types, ft.inputs):
            elt = ir.RankedTensorType(old).element_type
            new_inputs.append(ir.RankedTensorType.get(list(shape), elt))
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, ft.results))
        block = main.regions[0].blocks[0]
        # Static arg types + a shape-only `stablehlo.convert` back to the
        # original `?` type (what jax does when it calls an exported module):
        # every use (incl. func.call into private functions) stays valid and
        # the refinement pass folds the converts away.
        for i, t in enumerate(new_inputs):
            arg = block.arguments[i]
            old_t = arg.type
            arg.set_type(t)
            if str(old_t) != str(t):
                conv = stablehlo.convert(old_t, arg, ip=ir.InsertionPoint.at_block_begin(block))
                arg.replace_all_uses_except(conv, conv.owner.operation)
        buf = io.BytesIO()
        module.operation.write_bytecode(file=buf)
        bytecode = buf.getvalue()
    try:
        return jm.refine_polymorphic_shapes(bytecode, enable_shape_assertions=True, validate_static_shapes=True,
                                           enable_shardy=True)
    except Exception as e:
        raise ExecutionError(f"shape refinement failed for argument shapes "
                             f"{[tuple(s) for s, _ in arg_types]}: {e}") from e


class XlaExecutor:
    """Refine-per-shape + XLA CPU compile, cached per concrete argument types."""

    def __init__(self):
        self._cache: Dict = {}
        self._sigs: Dict = {}
        self.stats = XlaStats()
        self._lock = threading.Lock()

    def compile_count(self) -> int:
        return self.stats.compiles

    def clear(self) -> None:
        self._cache.clear()

    def _compile(self, text: str, arg_types):
        import jax.extend.backend as jb

        t0 = time.perf_counter()
        refined = refine(text, arg_types)
        t1 = time.perf_counter()
        backend = jb.get_backend("cpu")
        exe = backend.compile_and_load(refined, backend.devices()[:1])
        t2 = time.perf_counter()
        self.stats.compiles += 1
        self.stats.refine_seconds.append(t1 - t0)
        self.stats.compile_seconds.append(t2 - t1)
        return exe

    def prepare(self, text: str, args) -> object:
        """Compile (or fetch) the executable for these argument shapes."""
        args = [np.asarray(a) for a in args]
        h = hashlib.sha1(text.encode()).hexdigest()
        if h not in self._sigs:
            self._sigs[h] = main_signature(text)
        ins, _ = self._sigs[h]
        check_args(ins, args)
        key = (h, tuple((a.shape, a.dtype.str) for a in args))
        with self._lock:
            exe = self._cache.get(key)
            if exe is None:
                exe = self._compile(text, [(a.shape, a.dtype) for a in args])
                self._cache[key] = exe
            else:
                self.stats.cache_hits += 1
        return exe

    def run(self, text: str, args) -> List[np.ndarray]:
        import jax

        args = [np.asarray(a) for a in args]
        exe = self.prepare(text, args)
        dev = jax.devices("cpu")[0]
        # scoped x64: device_put would otherwise narrow int64/float64 inputs
        with jax.enable_x64(True):
            bufs = [jax.device_put(a, dev) for a in args]
            outs = exe.execute(bufs)
            return [np.asarray(o) for o in outs]


# -------------------------------------------------------------- interpreter
class InterpreterWorker:
    """A persistent subprocess running ``_interp_worker.py``; restarted after a crash."""

    def __init__(self, timeout: Optional[float] = None):
        self.proc = None
        self.timeout = timeout
        self._stderr = None
        self.starts = 0

    def _start(self):
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self.proc = subprocess.Popen([sys.executable, "-u", _interp_worker.__file__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        self.starts += 1
        msg = _interp_worker._read(self.proc.stdout)
        if msg is None:
            raise InterpreterCrashed("interpreter worker failed to start:\n" + self._stderr_tail())

    def _stderr_tail(self, n=2000) -> str:
        try:
            self._stderr.seek(0)
            data = self._stderr.read().decode(errors="replace")
            lines = [l for l in data.splitlines() if not l.startswith(("I", "W")) or "ERROR" in l]
            return "\n".join(lines)[-n:]
        except Exception:
            return ""

    def run(self, text: str, args) -> List[np.ndarray]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            _interp_worker._write(self.proc.stdin, (text, [np.asarray(a) for a in args]))
            msg = _interp_worker._read(self.proc.stdout)
        except (BrokenPipeError, OSError):
            msg = None
        if msg is None:
            self.proc.wait()
            rc = self.proc.returncode
            tail = self._stderr_tail()
            self.proc = None
            raise InterpreterCrashed(f"StableHLO interpreter aborted (worker exit code {rc}); "
                                     f"usually an op the interpreter does not implement:\n{tail}")
        kind, payload = msg
        if kind == "error":
            raise ExecutionError(f"StableHLO interpreter error: {payload}")
        return payload

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


class InterpreterExecutor:
    def __init__(self, isolated: bool = True):
        self.isolated = isolated
        self._worker: Optional[InterpreterWorker] = None
        self.runs = 0

    def compile_count(self) -> int:
        return 0

    def run(self, text: str, args) -> List[np.ndarray]:
        args = [np.asarray(a) for a in args]
        ins, _ = main_signature(text)
        check_args(ins, args)
        self.runs += 1
        if not self.isolated:
            return _interp_worker.eval_text(text, args)
        if self._worker is None:
            self._worker = InterpreterWorker()
        return self._worker.run(text, args)

    def close(self):
        if self._worker is not None:
            self._worker.close()
            self._worker = None


_XLA = XlaExecutor()
_INTERP = {True: None, False: None}


def xla_executor() -> XlaExecutor:
    return _XLA


def interpreter_executor(isolated: bool = True) -> InterpreterExecutor:
    if _INTERP[isolated] is None:
        _INTERP[isolated] = InterpreterExecutor(isolated=isolated)
    return _INTERP[isolated]


def execute(text: str, args: Sequence, executor: str = "xla", *, isolated: bool = True) -> List[np.ndarray]:
    """Run ``@main`` of StableHLO ``text`` on NumPy ``args``; returns NumPy arrays.

    executor: "xla" (refine + compile per concrete shape, cached) or
    "interpreter" (reference interpreter; ``isolated`` runs it in a worker
    subprocess so an abort becomes :class:`InterpreterCrashed`).
    """
    if executor == "xla":
        return _XLA.run(text, args)
    if executor in ("interpreter", "interp"):
        return interpreter_executor(isolated).run(text, args)
    raise ValueError(f"unknown executor {executor!r} (want 'xla' or 'interpreter')")


def compile_count() -> int:
    """XLA compiles done by the default xla executor in this process."""
    return _XLA.stats.compiles


def xla_stats() -> XlaStats:
    return _XLA.stats
