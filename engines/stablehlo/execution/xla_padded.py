"""Compile-once executors over XLA's dynamic padder (see :mod:`.padder_rewrite`).

``BoundedXlaProgram``
    a module with ``#stablehlo.bounds``: one XLA compile serves every size up to
    the bounds. Arguments are padded on the host to the bound (with anything:
    the padder masks), their live sizes passed as ``i32`` scalars; results come
    back static at the bound with their live sizes and are sliced on the host.
    Where the rewrite cannot serve the module it fails naming the op, unless
    ``on_unsupported="per_shape"``: then it compiles per shape
    (:class:`~.xla.XlaProgram`) and ``how`` says so.
``BucketedXlaProgram``
    a `?` module: the same per power-of-two bucket of every unbounded size
    (``engines.sizes.buckets``): one compile per bucket touched. (A module with
    bounds on some dims and none on others runs here too, bounded dims at
    their bound.)

``convert`` casts NumPy inputs to @main's dtypes, pads them on the host to
their bucket or bound and copies them to the device, with their live sizes
(a :class:`~.xla.PaddedArgs`, timed in its ``pad_s``/``h2d_s``); a call on
it runs the executable (no per-shape compile, no host work) and returns the
results on the device (:class:`~.xla.PaddedResults`: static at the bound,
with their live sizes), which ``numpy()`` copies back and slices. A call on
NumPy arrays stages them itself (for callers that time nothing: tests, the
lazy path) and returns the same.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import numpy as np

from .module import ExecutionError, Module, Report, format_shapes
from .padder_rewrite import BoundedEntry, PadderUnsupported, bound_entry
from .xla import PaddedArgs, PaddedResults, XlaProgram, XlaStats, cpu, device_put, refine, result_handlers

ON_UNSUPPORTED = ("error", "per_shape")
_HLO_OPS = (
    r"\b(reshape|convolution|sort|scatter|gather|reduce-window|select-and-scatter|pad|slice|dynamic-slice|"
    r"dynamic-update-slice|concatenate|custom-call|while|conditional|dot|reduce|broadcast)\b"
)


class _Padded:
    """One compiled bounded entry: runs on arguments staged at its bound (see :meth:`pad`)."""

    def __init__(self, entry: BoundedEntry, label: str, pad_value=None):
        client, _ = cpu()
        self.entry = entry
        try:
            self.exe = client.compile_and_load(entry.bytecode, client.devices()[:1])
        except Exception as e:  # jax's XlaRuntimeError: the padder's refusals are UNIMPLEMENTED
            msg = str(e)
            loop = "Unbounded dynamism is disabled" in msg and "arg_tuple" in msg  # a `?` dim carried by a loop
            # the padder's own internal check on an op it has no dynamism support for
            internal = "dynamic_padder" in msg and "unsupported instruction" in msg
            if "UNIMPLEMENTED" not in msg and "not supported" not in msg and not loop and not internal:
                raise
            call = re.search(r'CustomCall "([^"]+)"', msg)
            m = re.search(r"%([A-Za-z_-]+)[.\d]* = ", msg) or re.search(_HLO_OPS, msg)
            op = "while" if loop else f"custom-call {call.group(1)}" if call else m.group(1) if m else "?"
            raise PadderUnsupported(
                f"{label}: XLA's dynamic padder cannot serve op {op} in the bounded entry: {msg.splitlines()[0][:400]}", op
            ) from e
        self.label = label
        self.handlers = result_handlers(entry.bytecode, label)
        self.pad_value = pad_value
        self.full = [tuple(full) for full, _ in entry.args]
        self._sizes: dict[int, object] = {}

    def pad(self, args) -> list:
        """Device arrays: the host arguments padded on the host to the bound, then
        the entry's live sizes (one per size symbol its arguments share)."""
        dev = _stage(args, self.entry.args, self.pad_value, self._sizes)[0]
        return dev + [self._sizes[n] for n in self.entry.live_sizes([a.shape for a in args])]

    def admit(self, staged: PaddedArgs) -> None:
        """Check (once per staging) that ``staged`` was padded to this executable's argument shapes."""
        if not staged.padded or staged.full != self.full:
            raise ExecutionError(f"{self.label}: arguments staged at {staged.full}, the executable takes {self.full}")

    def execute(self, staged: PaddedArgs) -> PaddedResults:
        """Run on staged arguments (checked by :meth:`admit`); the results stay on the device.
        The live-size scalars were put on the device by the staging; this only picks
        the entry's (one per size symbol its arguments share)."""
        sizes = [staged.sizes[n] for n in self.entry.live_sizes(staged.shapes)]
        return PaddedResults(
            self.exe.execute_sharded(staged.device + sizes).consume_with_handlers(self.handlers), self.entry.results
        )

    def __call__(self, args) -> PaddedResults:
        return PaddedResults(self.exe.execute_sharded(self.pad(args)).consume_with_handlers(self.handlers), self.entry.results)


class _PerShape:
    """The per-shape fallback: an :class:`XlaProgram` on unpadded device arguments."""

    def __init__(self, prog: XlaProgram):
        self.prog = prog

    def admit(self, staged: PaddedArgs) -> None:
        """Any staging runs here (a padded one copies its live arrays in the call)."""

    def execute(self, staged: PaddedArgs) -> PaddedResults:
        # staged padded before the fallback was known (its first call): copy the live arrays now
        args = device_put(staged.host) if staged.padded or staged.device is None else staged.device
        return PaddedResults(list(self.prog(*args)))


def _stage(args, layout, pad_value, cache: dict[int, object]) -> tuple:
    """``(device arguments, pad seconds, copy seconds)``: ``args`` padded on
    the host to ``layout``'s (full shape, dynamic dims) per argument (``np.empty``
    where ``pad_value`` is None: the padder masks), copied to the device in one
    batch; every live size of a dynamic dim is put on the device too, as an ``i32``
    scalar in ``cache`` (sizes recur), for the entry to pick its live-size arguments."""
    t0 = time.perf_counter()
    padded, live = [], []
    for a, (full, dyn) in zip(args, layout, strict=False):
        shape = a.shape
        if dyn and tuple(shape) != tuple(full):
            buf = np.empty(full, a.dtype) if pad_value is None else np.full(full, _poison(pad_value, a.dtype), a.dtype)
            buf[tuple(slice(0, n) for n in shape)] = a
            a = buf
        padded.append(a)
        live += [shape[d] for d in dyn]
    t1 = time.perf_counter()
    new = [n for n in dict.fromkeys(live) if n not in cache]
    out = device_put(padded + [np.int32(n) for n in new])
    for n, s in zip(new, out[len(padded) :], strict=False):
        cache[n] = s
    t2 = time.perf_counter()
    return out[: len(padded)], t1 - t0, t2 - t1


def _poison(value, dtype):
    """``value`` for float arrays; the largest value of other dtypes (a test's
    way to fill the padding with what would show if it leaked)."""
    if dtype.kind in "fc":
        return value
    return True if dtype.kind == "b" else np.iinfo(dtype).max


class _HostProgram:
    def __init__(
        self,
        module: Module,
        on_compile: Report | None,
        stats: XlaStats | None,
        on_unsupported: str = "error",
        pad_value=None,
        on_check: Callable[[float], None] | None = None,
    ):
        if on_unsupported not in ON_UNSUPPORTED:
            raise ValueError(f"on_unsupported={on_unsupported!r}; valid: {', '.join(ON_UNSUPPORTED)}")
        self.module = module
        self.on_compile = on_compile
        self.stats = stats if stats is not None else XlaStats()
        self.on_unsupported = on_unsupported
        self.pad_value = pad_value
        #: called with the seconds of each per-shape check that refines the module and compiles nothing
        self.on_check = on_check
        #: what serves the module: "bounded" / "bucketed", or "per_shape: <why>" after a fallback
        self.how: str | None = None
        self._seen: dict[tuple, object] = {}
        self._per_shape: _PerShape | None = None
        self._sizes: dict[int, object] = {}  # live sizes as device scalars
        #: the module's shape assertions (jax's, or torch.export's runtime asserts as
        #: lowered): the bounded rewrite drops them, so each new shape checks them here
        self._asserts = "@shape_assertion" in module.text

    def check_assertions(self, shapes) -> None:
        """Evaluate the module's shape assertions at these argument shapes
        (refinement only, no compile; raises naming the assertion)."""
        if self._asserts:
            t0 = time.perf_counter()
            # not static: a data-dependent count (GPSConv's mask) stays dynamic after refinement
            refine(self.module.text, [(tuple(s), None) for s in shapes], self.module.label, static=False)
            if self.on_check is not None:
                self.on_check(time.perf_counter() - t0)

    def convert(self, arrays, canonicalize: bool = False) -> list[PaddedArgs]:
        """``[PaddedArgs]``: NumPy inputs in @main's dtypes, padded on the host
        and copied to the device with their live sizes (see :meth:`stage`)."""
        return [self.stage([np.asarray(a, order="C") for a in self.module.cast(arrays, canonicalize)])]

    def stage(self, arrays) -> PaddedArgs:
        """Host arrays (checked against @main's signature) padded to their
        bucket or bound and copied to the device: what a call takes. Where no
        padded layout applies (a per-shape fallback, an argument dim with no
        bound) the arrays are copied as they are and the call runs them per shape."""
        shapes = self.module.admit(arrays, np.ndarray, "the NumPy arrays")
        layout = None if self._per_shape is not None else self.layout(shapes)
        if layout is None:
            t0 = time.perf_counter()
            dev = device_put(arrays)
            return PaddedArgs(dev, shapes, arrays, False, None, 0.0, time.perf_counter() - t0)
        dev, pad_s, h2d_s = _stage(arrays, layout, self.pad_value, self._sizes)
        staged = PaddedArgs(dev, shapes, arrays, True, [full for full, _ in layout], pad_s, h2d_s)
        staged.sizes = self._sizes
        return staged

    def layout(self, shapes) -> list | None:
        """Per argument, (shape it is padded to, its `?` dims), or None where a `?` dim has no size to pad to."""
        out = []
        for (shape, _, _), full in zip(self.module.inputs, self.padded_shapes(shapes), strict=False):
            if full is None:
                return None
            out.append((tuple(full), tuple(d for d, s in enumerate(shape) if s is None)))
        return out

    def __call__(self, *args) -> PaddedResults:
        """Run on ``convert``'s ``[PaddedArgs]`` (or stage NumPy arrays first,
        in the call); the results stay on the device."""
        staged = args[0] if len(args) == 1 and type(args[0]) is PaddedArgs else self.stage(list(args))
        run = staged.run
        if run is None:  # the first call on this staging: look up (or compile) and check, once
            run = self._seen.get(staged.shapes)
            if run is None:
                run = self._seen[staged.shapes] = self._runner(staged.shapes)
            run.admit(staged)
            staged.run = run
        return run.execute(staged)

    def _unsupported(self, e: PadderUnsupported) -> _PerShape:
        """Raise ``e``, or (``on_unsupported="per_shape"``) serve every shape
        from now on with a compile per shape, saying so in ``how`` and in each
        compile's reason."""
        if self.on_unsupported != "per_shape":
            raise e
        self.how = f"per_shape: {e}"
        if self._per_shape is None:

            def report(s, reason):
                if self.on_compile is not None:
                    self.on_compile(s, f"per-shape fallback ({e}): {reason}")

            self._per_shape = _PerShape(XlaProgram(self.module, on_compile=report, stats=self.stats))
            self._seen.clear()  # (a staging that ran on a bounded executable keeps it: it was padded for it)
        return self._per_shape

    def _compile(self, make_entry: Callable[[], BoundedEntry], reason: str) -> _Padded:
        t0 = time.perf_counter()
        entry = make_entry()
        t1 = time.perf_counter()
        padded = _Padded(entry, self.module.label, self.pad_value)
        t2 = time.perf_counter()
        self.stats.compiles += 1
        self.stats.refine_seconds.append(t1 - t0)
        self.stats.compile_seconds.append(t2 - t1)
        if self.on_compile is not None:
            self.on_compile(t2 - t0, reason)
        return padded


class BoundedXlaProgram(_HostProgram):
    """``@main`` of a bounded module on XLA CPU: one executable for every size
    up to its ``#stablehlo.bounds`` (compiled on the first call).

    ``how`` is ``"bounded"``, or ``"per_shape: <why>"`` after a fallback that
    ``on_unsupported="per_shape"`` allowed; ``pad_value`` fills the padding of
    float arguments (others get their dtype's maximum; default: uninitialised
    memory, which the padder masks)."""

    def __init__(
        self,
        module: Module,
        on_compile: Report | None = None,
        stats: XlaStats | None = None,
        on_unsupported: str = "error",
        pad_value=None,
        on_check: Callable[[float], None] | None = None,
    ):
        super().__init__(module, on_compile, stats, on_unsupported, pad_value, on_check)
        self._exe: _Padded | None = None

    def padded_shapes(self, shapes) -> list:
        """Every argument at its bound (None for one with a `?` dim without a bound)."""
        out = []
        for shape, _, bounds in self.module.inputs:
            full = [s if s is not None else (bounds[d] if bounds is not None else None) for d, s in enumerate(shape)]
            out.append(None if None in full else tuple(full))
        return out

    def _runner(self, shapes):
        self.check_assertions(shapes)
        if self._per_shape is not None:
            return self._per_shape
        if self._exe is None:
            label = self.module.label
            try:
                entry = bound_entry(self.module.text, label)
                ops = ", ".join(f"{k.split('.')[-1]} x{v}" for k, v in sorted(entry.rewritten.items())) or "none"
                bounds = format_shapes(full for full, _ in entry.args)
                self._exe = self._compile(
                    lambda: entry,
                    f"bounded entry of {label}: one executable for every "
                    f"size up to argument bounds {bounds} (dynamic ops "
                    f"rewritten: {ops})",
                )
            except PadderUnsupported as e:
                return self._unsupported(e)
            self.how = "bounded"
        return self._exe


class BucketedXlaProgram(_HostProgram):
    """``@main`` of a `?` module on XLA CPU: one bounded executable per bucket
    of its unbounded sizes (the next power of two, at least ``minimum``; a
    dim with a ``#stablehlo.bounds`` is served at its bound). ``check(shapes)`` runs
    once per new concrete shape (e.g. jax's shape assertions); ``on_check(seconds)``
    is told the time of each such check (and of the module's own shape
    assertions refined at a new shape, in either program): per-shape work
    that compiles nothing."""

    def __init__(
        self,
        module: Module,
        on_compile: Report | None = None,
        stats: XlaStats | None = None,
        minimum: int | None = None,
        check: Callable | None = None,
        on_unsupported: str = "error",
        pad_value=None,
        on_check: Callable[[float], None] | None = None,
    ):
        from engines.sizes.buckets import MIN_BUCKET

        super().__init__(module, on_compile, stats, on_unsupported, pad_value, on_check)
        self.minimum = MIN_BUCKET if minimum is None else minimum
        self.check = check
        self._buckets: dict[tuple, _Padded] = {}

    def padded_shapes(self, shapes) -> tuple:
        """Every argument at its bucket (see :meth:`bucket_shapes`)."""
        return self.bucket_shapes(shapes)

    def bucket_shapes(self, shapes) -> tuple:
        from engines.sizes.buckets import bucket

        out = []
        for (shape, _, bounds), got in zip(self.module.inputs, shapes, strict=False):
            dims = []
            for d, (s, n) in enumerate(zip(shape, got, strict=False)):
                if s is not None:
                    dims.append(s)
                    continue
                bound = bounds[d] if bounds is not None else None
                dims.append(bound if bound is not None else bucket(n, self.minimum))
            out.append(tuple(dims))
        return tuple(out)

    def _runner(self, shapes):
        if self.check is not None:
            t0 = time.perf_counter()
            self.check(shapes)
            if self.on_check is not None:
                self.on_check(time.perf_counter() - t0)
        else:
            self.check_assertions(shapes)
        if self._per_shape is not None:
            return self._per_shape
        key = self.bucket_shapes(shapes)
        hit = self._buckets.get(key)
        if hit is None:
            reason = f"new bucket {format_shapes(key)} for argument shapes {format_shapes(shapes)} of {self.module.label}"
            try:
                hit = self._buckets[key] = self._compile(
                    lambda: bound_entry(self.module.text, self.module.label, arg_bounds=key), reason
                )
            except PadderUnsupported as e:
                return self._unsupported(e)
            self.how = "bucketed"
        try:  # this shape's sizes within the bucket's (a non-monotone size would be clamped)
            hit.entry.probe.check(shapes)
        except PadderUnsupported as e:
            return self._unsupported(e)
        return hit
