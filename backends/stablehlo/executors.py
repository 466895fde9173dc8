"""Executors for StableHLO text with `?` (and bounded) dims.

A :class:`Module` is the text with ``@main``'s signature, parsed and hashed
once. A program runs one module; it takes the inputs its ``convert`` makes
(``@main``'s dtypes), so a call does no host work beyond a cache lookup.

``xla`` (:class:`XlaProgram`)
    Inputs are jax arrays on the CPU device. A call looks up the executable by
    the arguments' shapes and runs it (``execute_sharded``), returning device
    arrays. A new shape is checked against the signature (rank, static dims,
    dtype, ``#stablehlo.bounds``), ``@main`` gets the call's concrete argument
    types, ``jax.extend.mlir.refine_polymorphic_shapes`` propagates them
    (through ``get_dimension_size``/``dynamic_*``; it also evaluates jax's
    ``shape_assertion`` custom calls) and the PJRT CPU client compiles the
    result (``compile_and_load``): one compile per new shape, reported to
    ``on_compile(seconds, reason)``.
``interpreter`` (:class:`InterpreterProgram`)
    ``jaxlib.mlir.dialects.stablehlo.eval_module`` on NumPy inputs, in a
    worker subprocess by default (:class:`InterpreterWorker`: it aborts the
    process on ops it lacks, and a crash becomes :class:`InterpreterCrashed`).
    The module text goes to the worker once; the worker parses it once per
    concrete argument shape (``eval_module`` specialises the module it runs),
    reported to ``on_parse(seconds, reason)``; no XLA compile.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import types as T
from . import _interp_worker

#: ``on_compile`` / ``on_parse`` callbacks: (seconds, reason)
Report = Callable[[float, str], None]


class ExecutionError(Exception):
    pass


class InterpreterCrashed(ExecutionError):
    """The reference interpreter aborted the (worker) process."""


# --------------------------------------------------------------- signatures
def main_signature(text: str):
    """[(shape, dtype, bounds)] of @main's args and results (shape: None = `?`)."""
    return main_types(text)


def main_types(source):
    """:func:`main_signature` of MLIR text or bytecode (the refined modules)."""
    from jaxlib.mlir import ir

    from .verify import make_context

    with make_context():
        module = ir.Module.parse(source)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                return ([T.parse_tensor_type(str(t)) for t in ft.inputs],
                        [T.parse_tensor_type(str(t)) for t in ft.results])
    raise ExecutionError("module has no @main")


def digest(text: str) -> str:
    """Short content hash naming a module (in reasons and to the interpreter worker)."""
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def format_shapes(shapes) -> str:
    return ", ".join(str(tuple(s)) for s in shapes)


class Module:
    """StableHLO text with its ``@main`` signature, parsed and hashed once.

    ``label`` names the module in errors and reasons (e.g. the case and mode);
    ``names`` names @main's arguments (e.g. the case's inputs)."""

    def __init__(self, text: str, label: str = "", names: Optional[Sequence[str]] = None):
        self.text = text
        self.digest = digest(text)
        self.label = f"{label} [{self.digest}]" if label else f"module {self.digest}"
        self.inputs, self.results = main_signature(text)
        self.names = list(names) if names is not None else None

    def arg(self, i: int) -> str:
        return f"argument {i}" + (f" ({self.names[i]})" if self.names and i < len(self.names) else "")

    def _arity(self, n: int) -> None:
        if n != len(self.inputs):
            raise ExecutionError(f"{self.label}: @main takes {len(self.inputs)} arguments, got {n}")

    def cast(self, arrays, canonicalize: bool = False) -> List[np.ndarray]:
        """NumPy ``arrays`` in @main's dtypes. ``canonicalize`` converts within a
        kind (int64 -> int32, float64 -> float32), as jax does for the modules it
        exports with x64 off; otherwise a dtype mismatch is an error."""
        self._arity(len(arrays))
        out = []
        for i, (a, (_, dt, _)) in enumerate(zip(arrays, self.inputs)):
            a = np.asarray(a)
            want = T.MLIR_TO_NUMPY.get(dt)
            if want is not None and a.dtype != want:
                if not (canonicalize and a.dtype.kind == want.kind):
                    raise ExecutionError(f"{self.label}: {self.arg(i)}: dtype {a.dtype} but @main expects {dt} ({want})")
                a = a.astype(want)
            out.append(a)
        return out

    def check(self, shapes, dtypes) -> None:
        """Check concrete argument shapes and dtypes against the signature."""
        self._arity(len(shapes))
        for i, ((shape, dt, bounds), got, dtype) in enumerate(zip(self.inputs, shapes, dtypes)):
            want = T.MLIR_TO_NUMPY.get(dt)
            where = f"{self.label}: {self.arg(i)}"
            if want is not None and np.dtype(dtype) != want:
                raise ExecutionError(f"{where}: dtype {np.dtype(dtype)} but @main expects {dt} ({want})")
            if len(got) != len(shape):
                raise ExecutionError(f"{where}: rank {len(got)} but @main expects rank {len(shape)}")
            for d, (s, n) in enumerate(zip(shape, got)):
                if s is not None and s != n:
                    raise ExecutionError(f"{where}: dim {d} is {n} but @main fixes it to {s}")
                if bounds is not None and bounds[d] is not None and n > bounds[d]:
                    raise ExecutionError(f"{where}: dim {d} is {n}, above its bound {bounds[d]}")


# ------------------------------------------------------------ jax runtime
@functools.lru_cache(maxsize=None)
def cpu():
    """(PJRT CPU client, its first device)."""
    import jax.extend.backend as jb

    client = jb.get_backend("cpu")
    return client, client.devices()[0]


def load_runtime() -> None:
    """Import jax's MLIR tools and start the CPU client (for a backend's ``startup``)."""
    import jax.extend.mlir  # noqa: F401

    from .verify import make_context

    cpu()
    make_context()


def device_put(arrays) -> list:
    """NumPy arrays -> jax arrays on the CPU device, dtypes kept (64-bit too)."""
    import jax

    _, dev = cpu()
    with jax.enable_x64(True):  # else device_put narrows int64/float64
        return [jax.device_put(np.asarray(a), dev) for a in arrays]


def to_host(out):
    """A program's output (an array or a tuple of them) as NumPy."""
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


# --------------------------------------------------------------------- XLA
@dataclass
class XlaStats:
    compiles: int = 0
    cache_hits: int = 0
    compile_seconds: List[float] = field(default_factory=list)
    refine_seconds: List[float] = field(default_factory=list)


def refine(text: str, arg_types: Sequence, label: str = "module") -> bytes:
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
        raise ExecutionError(f"{label}: shape refinement failed for argument shapes "
                             f"{format_shapes(s for s, _ in arg_types)}: {e}") from e


def result_handlers(refined: bytes, label: str) -> list:
    """jax's C++ result handlers for the refined module's (static) results:
    ``execute_sharded(...).consume_with_handlers`` turns the raw buffers into
    jax arrays without the Python work of ``disassemble_into_single_device_arrays``."""
    import jax
    from jax._src import core
    from jaxlib import xla_client as xc

    _, dev = cpu()
    sharding = jax.sharding.SingleDeviceSharding(dev)
    handlers = []
    for i, (shape, dt, _) in enumerate(main_types(refined)[1]):
        if None in shape or dt not in T.MLIR_TO_NUMPY:
            raise ExecutionError(f"{label}: result {i} is {dt}{list(shape)} after refinement: not static / unknown dtype")
        aval = core.ShapedArray(shape, T.MLIR_TO_NUMPY[dt])
        handlers.append(xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True))
    return handlers


class XlaProgram:
    """``@main`` of one module on XLA CPU: one executable per concrete argument shapes.

    Call it on the jax arrays :meth:`convert` makes; it returns a list of jax
    arrays (not waited for)."""

    def __init__(self, module: Module, on_compile: Optional[Report] = None, stats: Optional[XlaStats] = None):
        self.module = module
        self.on_compile = on_compile
        self.stats = stats if stats is not None else XlaStats()
        self._exes: Dict[tuple, tuple] = {}

    def convert(self, arrays, canonicalize: bool = False) -> list:
        """NumPy inputs -> device arrays in @main's dtypes (see :meth:`Module.cast`)."""
        return device_put(self.module.cast(arrays, canonicalize))

    def __call__(self, *args) -> list:
        hit = self._exes.get(tuple([a.shape for a in args]))
        if hit is None:
            hit = self._compile(args)
        exe, handlers = hit
        return exe.execute_sharded(args).consume_with_handlers(handlers)

    def _compile(self, args) -> tuple:
        import jax

        for i, a in enumerate(args):
            if not isinstance(a, jax.Array):
                raise ExecutionError(f"{self.module.label}: {self.module.arg(i)} is a {type(a).__name__}; "
                                     f"the program takes the device arrays its convert() makes")
        shapes = tuple(tuple(a.shape) for a in args)
        self.module.check(shapes, [a.dtype for a in args])
        client, _ = cpu()
        t0 = time.perf_counter()
        refined = refine(self.module.text, [(s, a.dtype) for s, a in zip(shapes, args)], self.module.label)
        t1 = time.perf_counter()
        exe = client.compile_and_load(refined, client.devices()[:1])
        handlers = result_handlers(refined, self.module.label)
        t2 = time.perf_counter()
        self.stats.compiles += 1
        self.stats.refine_seconds.append(t1 - t0)
        self.stats.compile_seconds.append(t2 - t1)
        if self.on_compile is not None:
            self.on_compile(t2 - t0, f"new argument shapes {format_shapes(shapes)} for {self.module.label}")
        self._exes[shapes] = hit = (exe, handlers)
        return hit


class XlaExecutor:
    """One :class:`XlaProgram` per module text, NumPy in and out (:func:`execute`)."""

    def __init__(self):
        self._programs: Dict[str, XlaProgram] = {}
        self.stats = XlaStats()

    def compile_count(self) -> int:
        return self.stats.compiles

    def clear(self) -> None:
        self._programs.clear()

    def program(self, text: str) -> XlaProgram:
        p = self._programs.get(text)
        if p is None:
            p = self._programs[text] = XlaProgram(Module(text), stats=self.stats)
        return p

    def run(self, text: str, args) -> List[np.ndarray]:
        p = self.program(text)
        before = self.stats.compiles
        outs = p(*p.convert(args))
        if self.stats.compiles == before:
            self.stats.cache_hits += 1
        return [np.asarray(o) for o in outs]


# -------------------------------------------------------------- interpreter
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
        self.proc = subprocess.Popen([sys.executable, "-u", _interp_worker.__file__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=env)
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
            raise InterpreterCrashed(f"{module.label}: StableHLO interpreter aborted (worker exit code {rc}); "
                                     f"usually an op the interpreter does not implement:\n{self._stderr_tail()}")
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
        except Exception as e:
            raise ExecutionError(f"{module.label}: StableHLO interpreter error: {type(e).__name__}: {e}") from e

    def close(self) -> None:
        self._evaluator = None


class InterpreterProgram:
    """``@main`` of one module on the reference interpreter, NumPy in and out.

    ``worker`` is an :class:`InterpreterWorker` (or :class:`LocalInterpreter`);
    :meth:`call_breakdown` splits the last call's time."""

    def __init__(self, module: Module, worker, on_parse: Optional[Report] = None):
        self.module = module
        self.worker = worker
        self.on_parse = on_parse
        self.parses = 0
        self._checked: set = set()
        self._breakdown: Dict[str, float] = {}

    def convert(self, arrays, canonicalize: bool = False) -> List[np.ndarray]:
        return self.module.cast(arrays, canonicalize)

    def __call__(self, *args) -> List[np.ndarray]:
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
        self._breakdown = {"interp_eval_s": info["eval_s"], "interp_parse_s": info["parse_s"],
                           "ipc_s": wall - info["eval_s"] - info["parse_s"]}
        return outs

    def call_breakdown(self) -> Dict[str, float]:
        """The last call's seconds: ``interp_eval_s`` (``eval_module``),
        ``interp_parse_s`` (0 unless its shape was new) and ``ipc_s`` (the rest:
        pickling, pipes, NumPy <-> MLIR attribute conversion)."""
        return dict(self._breakdown)


class InterpreterExecutor:
    """One :class:`InterpreterProgram` per module text on one worker (:func:`execute`)."""

    def __init__(self, isolated: bool = True):
        self.isolated = isolated
        self.worker = InterpreterWorker() if isolated else LocalInterpreter()
        self._programs: Dict[str, InterpreterProgram] = {}

    def compile_count(self) -> int:
        return 0

    def program(self, text: str) -> InterpreterProgram:
        p = self._programs.get(text)
        if p is None:
            p = self._programs[text] = InterpreterProgram(Module(text), self.worker)
        return p

    def run(self, text: str, args) -> List[np.ndarray]:
        p = self.program(text)
        return p(*p.convert(args))

    def close(self) -> None:
        self.worker.close()


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
