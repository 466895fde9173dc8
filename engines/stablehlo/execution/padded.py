"""Compile-once executors over XLA's dynamic padder (see :mod:`.bounded`).

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

Both take and return NumPy arrays (``convert`` casts to @main's dtypes); a
call pads, runs and slices with no per-shape compile.
"""
from __future__ import annotations

import re
import time
from typing import Callable, Dict, List, Optional

import numpy as np

from .bounded import BoundedEntry, PadderUnsupported, bound_entry
from .module import Module, Report, format_shapes
from .xla import XlaProgram, XlaStats, cpu, device_put, refine, result_handlers

ON_UNSUPPORTED = ("error", "per_shape")
_HLO_OPS = (r"\b(reshape|convolution|sort|scatter|gather|reduce-window|select-and-scatter|pad|slice|dynamic-slice|"
            r"dynamic-update-slice|concatenate|custom-call|while|conditional|dot|reduce|broadcast)\b")


class _Padded:
    """One compiled bounded entry: pad on the host, run, slice on the host."""

    def __init__(self, entry: BoundedEntry, label: str, pad_value=None):
        client, _ = cpu()
        self.entry = entry
        try:
            self.exe = client.compile_and_load(entry.bytecode, client.devices()[:1])
        except Exception as e:  # jax's XlaRuntimeError: the padder's refusals are UNIMPLEMENTED
            msg = str(e)
            loop = "Unbounded dynamism is disabled" in msg and "arg_tuple" in msg  # a `?` dim carried by a loop
            if "UNIMPLEMENTED" not in msg and "not supported" not in msg and not loop:
                raise
            m = re.search(r"%([A-Za-z_-]+)[.\d]* = ", msg) or re.search(_HLO_OPS, msg)
            op = "while" if loop else m.group(1) if m else "?"
            raise PadderUnsupported(f"{label}: XLA's dynamic padder cannot serve op {op} in the bounded entry: "
                                    f"{msg.splitlines()[0][:400]}", op) from e
        self.handlers = result_handlers(entry.bytecode, label)
        self.pad_value = pad_value
        self.n_results = len(entry.results)
        self._sizes: Dict[int, object] = {}

    def pad(self, args) -> list:
        """Device arrays: the arguments padded on the host to the bound, then their live sizes."""
        padded = []
        for a, (full, dyn) in zip(args, self.entry.args):
            live = a.shape
            if dyn and live != full:
                if self.pad_value is None:
                    buf = np.empty(full, a.dtype)
                else:
                    buf = np.full(full, _poison(self.pad_value, a.dtype), a.dtype)
                buf[tuple(slice(0, n) for n in live)] = a
                a = buf
            padded.append(a)
        return device_put(padded) + [self._size(n) for n in self.entry.live_sizes([a.shape for a in args])]

    def _size(self, n: int):
        """``n`` as a device ``i32`` scalar (cached: sizes recur)."""
        s = self._sizes.get(n)
        if s is None:
            s = self._sizes[n] = device_put([np.int32(n)])[0]
        return s

    def __call__(self, args) -> List[np.ndarray]:
        outs = self.exe.execute_sharded(self.pad(args)).consume_with_handlers(self.handlers)
        k = self.n_results
        live = [int(s) for s in outs[k:]]
        res = []
        for o, (full, dyn) in zip(outs[:k], self.entry.results):
            o = np.asarray(o)
            if dyn:
                idx = [slice(None)] * o.ndim
                for d in dyn:
                    idx[d] = slice(0, live.pop(0))
                o = o[tuple(idx)]
            res.append(o)
        return res


def _poison(value, dtype):
    """``value`` for float arrays; the largest value of other dtypes (a test's
    way to fill the padding with what would show if it leaked)."""
    if dtype.kind in "fc":
        return value
    return True if dtype.kind == "b" else np.iinfo(dtype).max


class _HostProgram:
    def __init__(self, module: Module, on_compile: Optional[Report], stats: Optional[XlaStats],
                 on_unsupported: str = "error", pad_value=None):
        if on_unsupported not in ON_UNSUPPORTED:
            raise ValueError(f"on_unsupported={on_unsupported!r}; valid: {', '.join(ON_UNSUPPORTED)}")
        self.module = module
        self.on_compile = on_compile
        self.stats = stats if stats is not None else XlaStats()
        self.on_unsupported = on_unsupported
        self.pad_value = pad_value
        #: what serves the module: "bounded" / "bucketed", or "per_shape: <why>" after a fallback
        self.how: Optional[str] = None
        self._seen: Dict[tuple, Callable] = {}
        self._per_shape: Optional[Callable] = None
        #: the module's shape assertions (jax's, or torch.export's runtime asserts as
        #: lowered): the bounded rewrite drops them, so each new shape checks them here
        self._asserts = "@shape_assertion" in module.text

    def check_assertions(self, shapes) -> None:
        """Evaluate the module's shape assertions at these argument shapes
        (refinement only, no compile; raises naming the assertion)."""
        if self._asserts:
            refine(self.module.text, [(tuple(s), None) for s in shapes], self.module.label)

    def convert(self, arrays, canonicalize: bool = False) -> List[np.ndarray]:
        """NumPy inputs in @main's dtypes (host arrays: the call pads them)."""
        return [np.ascontiguousarray(a) for a in self.module.cast(arrays, canonicalize)]

    def __call__(self, *args) -> List[np.ndarray]:
        run = self._seen.get(tuple([a.shape for a in args]))
        if run is None:
            run = self._admit(args)
        return run(args)

    def _unsupported(self, e: PadderUnsupported) -> Callable:
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

            prog = XlaProgram(self.module, on_compile=report, stats=self.stats)
            self._per_shape = lambda args: [np.asarray(o) for o in prog(*device_put(args))]
            self._seen.clear()
        return self._per_shape

    def _admit(self, args) -> Callable:
        shapes = self.module.admit(args, np.ndarray, "the NumPy arrays")
        run = self._seen[shapes] = self._runner(shapes)
        return run

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

    def __init__(self, module: Module, on_compile: Optional[Report] = None, stats: Optional[XlaStats] = None,
                 on_unsupported: str = "error", pad_value=None):
        super().__init__(module, on_compile, stats, on_unsupported, pad_value)
        self._exe: Optional[Callable] = None

    def _runner(self, shapes) -> Callable:
        self.check_assertions(shapes)
        if self._per_shape is not None:
            return self._per_shape
        if self._exe is None:
            label = self.module.label
            try:
                entry = bound_entry(self.module.text, label)
                ops = ", ".join(f"{k.split('.')[-1]} x{v}" for k, v in sorted(entry.rewritten.items())) or "none"
                bounds = format_shapes(full for full, _ in entry.args)
                self._exe = self._compile(lambda: entry, f"bounded entry of {label}: one executable for every "
                                                         f"size up to argument bounds {bounds} (dynamic ops "
                                                         f"rewritten: {ops})")
            except PadderUnsupported as e:
                return self._unsupported(e)
            self.how = "bounded"
        return self._exe


class BucketedXlaProgram(_HostProgram):
    """``@main`` of a `?` module on XLA CPU: one bounded executable per bucket
    of its unbounded sizes (the next power of two, at least ``minimum``; a
    dim with a ``#stablehlo.bounds`` is served at its bound). ``check(shapes)`` runs
    once per new concrete shape (e.g. jax's shape assertions)."""

    def __init__(self, module: Module, on_compile: Optional[Report] = None, stats: Optional[XlaStats] = None,
                 minimum: Optional[int] = None, check: Optional[Callable] = None, on_unsupported: str = "error",
                 pad_value=None):
        from engines.sizes.buckets import MIN_BUCKET

        super().__init__(module, on_compile, stats, on_unsupported, pad_value)
        self.minimum = MIN_BUCKET if minimum is None else minimum
        self.check = check
        self._buckets: Dict[tuple, _Padded] = {}

    def bucket_shapes(self, shapes) -> tuple:
        from engines.sizes.buckets import bucket

        out = []
        for (shape, _, bounds), got in zip(self.module.inputs, shapes):
            dims = []
            for d, (s, n) in enumerate(zip(shape, got)):
                if s is not None:
                    dims.append(s)
                    continue
                bound = bounds[d] if bounds is not None else None
                dims.append(bound if bound is not None else bucket(n, self.minimum))
            out.append(tuple(dims))
        return tuple(out)

    def _runner(self, shapes) -> Callable:
        if self.check is not None:
            self.check(shapes)
        else:
            self.check_assertions(shapes)
        if self._per_shape is not None:
            return self._per_shape
        key = self.bucket_shapes(shapes)
        hit = self._buckets.get(key)
        if hit is None:
            reason = (f"new bucket {format_shapes(key)} for argument shapes {format_shapes(shapes)} "
                      f"of {self.module.label}")
            try:
                hit = self._buckets[key] = self._compile(
                    lambda: bound_entry(self.module.text, self.module.label, arg_bounds=key), reason)
            except PadderUnsupported as e:
                return self._unsupported(e)
            self.how = "bucketed"
        try:  # this shape's sizes within the bucket's (a non-monotone size would be clamped)
            hit.entry.probe.check(shapes)
        except PadderUnsupported as e:
            return self._unsupported(e)
        return hit


def bound_kinds(module: Module) -> set:
    """``{"bounded", "unbounded"}``: the kinds of @main's `?` argument dims."""
    out = set()
    for shape, _, bounds in module.inputs:
        for d, s in enumerate(shape):
            if s is None:
                out.add("bounded" if bounds is not None and bounds[d] is not None else "unbounded")
    return out


class XlaExecutor:
    """One program per module text, NumPy in and out (:func:`execute`).

    A module with ``#stablehlo.bounds`` runs on the compile-once
    :class:`~.padded.BoundedXlaProgram` (``on_unsupported="per_shape"`` lets
    it fall back to a compile per shape); ``bucketed=True`` runs a `?` module
    on :class:`~.padded.BucketedXlaProgram`, and so does a module with both
    bounded and unbounded argument dims (bounded ones at their bound, once
    per bucket of the others); else :class:`XlaProgram`."""

    def __init__(self):
        self._programs: Dict[tuple, object] = {}
        self.stats = XlaStats()

    def compile_count(self) -> int:
        return self.stats.compiles

    def clear(self) -> None:
        self._programs.clear()

    def program(self, text: str, on_unsupported: str = "error", bucketed: bool = False):
        key = (text, on_unsupported, bucketed)
        p = self._programs.get(key)
        if p is None:
            module = Module(text)
            kinds = bound_kinds(module)
            if bucketed or kinds == {"bounded", "unbounded"}:
                p = BucketedXlaProgram(module, stats=self.stats, on_unsupported=on_unsupported)
            elif kinds == {"bounded"}:
                p = BoundedXlaProgram(module, stats=self.stats, on_unsupported=on_unsupported)
            else:
                p = XlaProgram(module, stats=self.stats)
            self._programs[key] = p
        return p

    def run(self, text: str, args, on_unsupported: str = "error", bucketed: bool = False) -> List[np.ndarray]:
        p = self.program(text, on_unsupported, bucketed)
        before = self.stats.compiles
        outs = p(*p.convert(args))
        if self.stats.compiles == before:
            self.stats.cache_hits += 1
        return [np.asarray(o) for o in outs]
