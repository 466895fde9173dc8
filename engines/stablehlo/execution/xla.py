"""The per-shape ``xla`` program: ``@main`` refined to each call's concrete shapes and
compiled by the PJRT CPU client (:class:`XlaProgram`), and the jax runtime
helpers the backends share (``cpu``, ``load_runtime``, ``device_put``,
``to_host``).

Inputs are jax arrays on the CPU device. A call looks up the executable by
the arguments' shapes and runs it (``execute_sharded``), returning device
arrays. A new shape is checked against the signature (rank, static dims,
dtype, ``#stablehlo.bounds``), ``@main`` gets the call's concrete argument
types, ``jax.extend.mlir.refine_polymorphic_shapes`` propagates them (through
``get_dimension_size``/``dynamic_*``; it also evaluates jax's
``shape_assertion`` custom calls) and the PJRT CPU client compiles the result
(``compile_and_load``): one compile per new shape, reported to
``on_compile(seconds, reason)``.
"""

from __future__ import annotations

import functools
import io
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..lowering import types as T
from .module import ASSERTION_MARK, AssertionFailed, ExecutionError, Module, Report, format_shapes, main_types


@functools.cache
def cpu():
    """(PJRT CPU client, its first device), jaxlib's LAPACK kernels ready."""
    import jax.extend.backend as jb

    client = jb.get_backend("cpu")
    _lapack_ready()
    return client, client.devices()[0]


def _lapack_ready() -> None:
    """Point jaxlib's LAPACK custom-call kernels (the linalg lowering's
    ``@lapack_*_ffi``) at scipy's LAPACK: until then their function pointers are
    unset and a call segfaults the process (jax does this when it lowers one)."""
    try:
        from jaxlib.cpu import _lapack
    except ImportError:  # a jaxlib without them: such a call fails as an unknown target
        return
    _lapack.initialize()


def load_runtime() -> None:
    """Import jax's MLIR tools and start the CPU client (for a backend's ``startup``)."""
    import jax.extend.mlir  # noqa: F401

    from ..lowering.verify import make_context

    cpu()
    make_context()


def device_put(arrays) -> list:
    """NumPy arrays -> jax arrays on the CPU device, dtypes kept (64-bit too)."""
    import jax

    _, dev = cpu()
    with jax.enable_x64(True):  # else device_put narrows int64/float64
        return list(jax.device_put([np.asarray(a) for a in arrays], dev))  # one batched transfer


def to_host(out):
    """A program's output (an array, a tuple of them, or a :class:`PaddedResults`) as NumPy."""
    if isinstance(out, PaddedResults):
        outs = out.numpy()
        return outs[0] if len(outs) == 1 else tuple(outs)
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


class PaddedArgs:
    """A padded program's arguments, staged by its ``convert`` (outside the call):
    ``device``, the arguments padded on the host to their bucket or bound and
    copied to the device; ``sizes``, each live size of a dynamic dim as a device
    ``i32`` scalar, from which the executable picks its live-size arguments (one
    per size symbol); ``shapes``, the live argument shapes; ``host``, the unpadded host
    arrays (a per-shape fallback's first call copies them); ``padded``,
    whether ``device`` holds padded arrays; ``pad_s``/``h2d_s``, the seconds
    of the host padding and of the copy."""

    __slots__ = ("device", "full", "h2d_s", "host", "pad_s", "padded", "run", "shapes", "sizes")

    def __init__(self, device, shapes, host, padded: bool, full, pad_s: float, h2d_s: float):
        self.device, self.shapes, self.host, self.padded = device, shapes, host, padded
        self.full, self.pad_s, self.h2d_s = full, pad_s, h2d_s
        self.sizes: dict = {}
        self.run = None  # what runs these arguments, once a call has looked it up and checked the layout


class PaddedResults:
    """A padded program's results, on the device: static at the bucket or
    bound, followed by their live sizes (device ``i32`` scalars), with
    ``layout`` (per result, (shape at the bound, dynamic dims)); or
    ``layout=None``: results already at their live shapes.
    ``block_until_ready`` waits for them; :meth:`numpy` (and indexing or
    iterating, for callers that want host arrays) copies them to the host and
    slices them back to the live sizes, once."""

    def __init__(self, outs: list, layout=None):
        self.outs, self.layout = outs, layout
        self._host: list[np.ndarray] | None = None

    def block_until_ready(self) -> PaddedResults:
        for o in self.outs:
            o.block_until_ready()
        return self

    def numpy(self) -> list[np.ndarray]:
        """The results as NumPy arrays at their live shapes (device → host, then the slice)."""
        if self._host is None:
            if self.layout is None:
                self._host = [np.asarray(o) for o in self.outs]
            else:
                k = len(self.layout)
                live = [int(s) for s in self.outs[k:]]
                res = []
                for o, (_, dyn) in zip(self.outs[:k], self.layout, strict=False):
                    o = np.asarray(o)
                    if dyn:
                        idx = [slice(None)] * o.ndim
                        for d in dyn:
                            idx[d] = slice(0, live.pop(0))
                        o = o[tuple(idx)]
                    res.append(o)
                self._host = res
        return self._host

    def __len__(self) -> int:
        return len(self.layout) if self.layout is not None else len(self.outs)

    def __getitem__(self, i):
        return self.numpy()[i]

    def __iter__(self):
        return iter(self.numpy())


@dataclass
class XlaStats:
    compiles: int = 0
    cache_hits: int = 0
    compile_seconds: list[float] = field(default_factory=list)
    refine_seconds: list[float] = field(default_factory=list)


def refine(text: str, arg_types: Sequence, label: str = "module", static: bool = True) -> bytes:
    """Module bytecode with @main specialised to ``arg_types`` [(shape, np dtype)] and refined;
    ``static=False`` where a dim may stay dynamic (a mask's data-dependent count: only the
    shape assertions are wanted, :meth:`.xla_padded.BoundedXlaProgram.check_assertions`)."""
    import jax.extend.mlir as jm
    from jaxlib.mlir import ir

    from ..lowering.verify import make_context

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
        for (shape, _dtype), old in zip(arg_types, ft.inputs, strict=False):
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
        return jm.refine_polymorphic_shapes(
            bytecode, enable_shape_assertions=True, validate_static_shapes=static, enable_shardy=True
        )
    except Exception as e:
        # a false assertion is the error itself (not an assertion refinement cannot evaluate)
        err = AssertionFailed if re.search(rf"error: [^\n]*{ASSERTION_MARK}", str(e)) else ExecutionError
        raise err(f"{label}: shape refinement failed for argument shapes {format_shapes(s for s, _ in arg_types)}: {e}") from e


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
        handlers.append(_array_result_handler(xc, aval, sharding))
    return handlers


def _array_result_handler(xc, aval, sharding):
    """``xc.array_result_handler``, skipping its checks where this jaxlib can (0.10's takes
    ``_skip_checks``; 0.12's has no such keyword, and checks)."""
    try:
        return xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)
    except TypeError:
        return xc.array_result_handler(aval, sharding, committed=True)


#: how :class:`DataDependentSize` starts (recorded in stage ``xla``, ``harness.zoo_table``'s "run")
REFUSED = "refused by XLA's per-shape executor before any compile"


class DataDependentSize(ExecutionError):
    """A module with a data-dependent size (``set_dimension_size`` of a count, as a
    boolean-mask index lowers) run per concrete argument shape: refinement makes every
    size static from the argument shapes, and this one it cannot know."""


def refuse_data_dependent_sizes(module: Module) -> None:
    """Raise :class:`DataDependentSize` naming the construct, before any compile, where
    ``module`` sets a size from data (the bounded executor serves it: the count's bound
    is its mask's length)."""
    if "stablehlo.set_dimension_size" in module.text:
        raise DataDependentSize(
            f"{module.label}: {REFUSED}: a size set from data (stablehlo.set_dimension_size of a count, "
            "as a boolean-mask index or nonzero lowers) has no static value at given argument shapes; "
            "the bounded mode serves it (the count is bounded by its mask)"
        )


class XlaProgram:
    """``@main`` of one module on XLA CPU: one executable per concrete argument shapes.
    A module with a data-dependent size is refused (:func:`refuse_data_dependent_sizes`).

    Call it on the jax arrays :meth:`convert` makes; it returns a list of jax
    arrays (not waited for)."""

    def __init__(self, module: Module, on_compile: Report | None = None, stats: XlaStats | None = None):
        refuse_data_dependent_sizes(module)
        self.module = module
        self.on_compile = on_compile
        self.stats = stats if stats is not None else XlaStats()
        self._exes: dict[tuple, tuple] = {}

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

        shapes = self.module.admit(args, jax.Array, "the device arrays")
        client, _ = cpu()
        t0 = time.perf_counter()
        refined = refine(self.module.text, [(s, a.dtype) for s, a in zip(shapes, args, strict=False)], self.module.label)
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
