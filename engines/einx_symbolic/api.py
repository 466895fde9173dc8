"""Public entry points: einx 0.4.3's call signature, one graph per signature.

One cache, :data:`GRAPHS`, holds one :class:`~.build.Graph` per
:class:`~.recipe.Signature` (built once, logged in :data:`BUILD_LOG`). A call
finds it by its *key*, what the call site reads in nanoseconds:
``(op, description, class, ndim, dtype of each argument)`` plus, only when
the call has any, one element ``(backend, constraint kinds, static op kwargs,
input shapes)``. A key seen for the first time is resolved to its signature
(array library, ranks, dtype names, ...) and stored next to it, pointing at
the same graph: calls that differ only where the signature does not (jax
arrays and tracers, ``int`` and ``np.int64`` constraints) share one graph.

Sizes never enter a key, except through :func:`specialised`: the static
mode's emulation of einx 0.4.3's per-shape graphs, where the input shapes
join the signature (one build per new input shapes, in the same cache).

Hot path: build the key, one dict lookup, call ``graph.fn``.
"""

import time as _time
from collections.abc import Sequence

import numpy as _np

from .adapters import library_of
from .build import build
from .errors import CallOperationError, EinxError, OpValueError
from .recipe import Signature
from .semantics import FAMILY


class BuildLog(Sequence):
    """Why each graph was built: one line per build, in order (``Signature.reason``, a
    ``str``; a slice is a list of them). It keeps the signatures and writes their lines
    when read, not on the graph's first call."""

    def __init__(self):
        self._sigs = []

    def append(self, sig):
        self._sigs.append(sig)

    def __len__(self):
        return len(self._sigs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [s.reason() for s in self._sigs[i]]
        return self._sigs[i].reason()

    def __eq__(self, other):
        return list(self) == other

    def __repr__(self):
        return repr(list(self))


#: call key -> Graph, and Signature -> Graph: the one cache (one Graph per Signature)
GRAPHS: dict = {}
#: why each graph was built, one line per build in order (:class:`BuildLog`), and
#: the seconds the builds took: what a caller reads to say why and how long it compiled
BUILD_LOG = BuildLog()
BUILD_S = [0.0]
_NO_DTYPE = object()
_MISS = object()


def compile_count():
    """Number of graphs built in this process (one per distinct signature)."""
    return len(BUILD_LOG)


def clear_cache():
    """Forget all graphs (the build log, and so the compile count, is kept)."""
    GRAPHS.clear()


def graph_of(sig):
    """The graph of signature ``sig``: the cached one, or built now (timed and logged)."""
    g = GRAPHS.get(sig)
    if g is None:
        t0 = _time.perf_counter()
        g = build(sig)
        BUILD_S[0] += _time.perf_counter() - t0
        BUILD_LOG.append(sig)
        GRAPHS[sig] = g
    return g


def _psig(v):
    if isinstance(v, (tuple, list)):
        if not all(isinstance(x, (int, _np.integer)) for x in v):
            raise ValueError(f"Values passed for axis names as constraints must have an integral type, but found value {v}")
        return len(v)
    if isinstance(v, _np.ndarray):
        if not _np.issubdtype(v.dtype, _np.integer):
            raise ValueError(f"Values passed for axis names as constraints must have an integral type, but found value {v}")
        return None if v.ndim == 0 else len(v)
    if isinstance(v, (int, _np.integer)) and not isinstance(v, bool):
        return None
    raise ValueError(
        f"Values passed for axis names as constraints must have an integral type, but found value {v} with type {type(v)}"
    )


def _lib(libs, backend):
    if backend is not None:
        if not isinstance(backend, str):
            backend = getattr(backend, "name", str(backend))
        name = backend.split(".")[0]
        if name not in ("torch", "numpy", "jax"):
            raise ValueError(f"Backend with name {backend} not found. einx_symbolic supports: torch, numpy, jax")
        return name
    s = set(libs) - {"scalar", "factory"}
    if not s and "factory" in libs:
        from einx.errors import BackendResolutionError

        raise BackendResolutionError(
            "Failed to determine which backend to use for this operation: the arguments are tensor "
            "factories and Python scalars only; pass backend='torch' (or 'numpy', 'jax')."
        )
    if "torch" in s and "jax" in s:
        from einx.errors import BackendResolutionError

        raise BackendResolutionError(
            "Failed to determine which backend to use for this operation: the arguments mix torch and jax tensors."
        )
    if "torch" in s:
        return "torch"
    if "jax" in s:
        return "jax"
    return "numpy"


def _shapes(tensors):
    return tuple(tuple(getattr(t, "shape", ())) for t in tensors)


def _signature(op, description, tensors, backend, params, static, specialise):
    libs, ranks, dtypes, scalars = [], [], [], []
    for i, t in enumerate(tensors):  # one pass: a graph's first call pays for every line run here
        lib = library_of(t)
        libs.append(lib)
        if lib == "scalar" or lib == "factory":
            if lib == "scalar":
                scalars.append(i)
            ranks.append(0 if lib == "scalar" else None)
            dtypes.append(str(getattr(t, "dtype", type(t).__name__)))
        else:
            ranks.append(t.ndim)
            dtypes.append(t.dtype)  # the dtype object (equal across jax arrays and tracers); its name only in ``reason``
    libs = tuple(libs)
    lib = libs[0] if libs else None
    if backend is not None or lib not in _ARRAY_LIBS or libs.count(lib) != len(libs):  # not one array library
        lib = _lib(libs, backend)
    # Signature(...) without its Python-level __new__ (a named tuple: the fields in order)
    return _tuple_new(
        Signature,
        (
            op,
            description,
            lib,
            tuple(ranks),
            frozenset(scalars) if scalars else _NO_SCALARS,
            libs,
            tuple(dtypes),
            tuple(sorted((k, _psig(v)) for k, v in params.items())) if params else (),
            static,
            _shapes(tensors) if specialise else None,
        ),
    )


_tuple_new = tuple.__new__
_NO_SCALARS = frozenset()


_ARRAY_LIBS = ("torch", "jax", "numpy")


def _key(op, description, tensors, backend=None, params=None, static=(), specialise=False):
    """A call's key (the fast paths in ``_make`` spell the same tuple inline)."""
    key = [op, description]
    for t in tensors:
        key += (t.__class__, getattr(t, "ndim", -1), getattr(t, "dtype", _NO_DTYPE))
    if backend is not None or params or static or specialise:
        # a constraint's class and its length or shape: everything its kind (``_psig``) depends on
        pkey = tuple(
            (k, v.__class__, len(v) if isinstance(v, (tuple, list)) else getattr(v, "shape", -1))
            for k, v in (params or {}).items()
        )
        key.append((backend, pkey, static, _shapes(tensors) if specialise else None))
    return tuple(key)


def _lookup(key, op, description, tensors, backend=None, params=None, static=(), specialise=False):
    """The graph of a call whose key is not in :data:`GRAPHS` yet (stored there under ``key``)."""
    g = GRAPHS[key] = graph_of(_signature(op, description, tensors, backend, params or {}, static, specialise))
    return g


def _run(g, tensors, params):
    try:
        return g.fn(*tensors, P=params) if params else g.fn(*tensors)
    except (EinxError, OpValueError):
        raise
    except Exception as e:
        raise CallOperationError.create(e, g.source) from e


def _call(op, description, tensors, backend, graph, params, static=(), specialise=False):
    key = _key(op, description, tensors, backend, params, static, specialise)
    g = GRAPHS.get(key)
    if g is None:
        g = _lookup(key, op, description, tensors, backend, params, static, specialise)
    return g.source if graph else _run(g, tensors, params)


def _one_array(op, description, tensor):
    """Fast path of a one-array call with no keywords: the key inline, one lookup.
    ``_MISS`` when ``tensor`` is not an array (no ``ndim``/``dtype``)."""
    try:
        key = (op, description, tensor.__class__, tensor.ndim, tensor.dtype)
    except AttributeError:
        return _MISS
    g = GRAPHS.get(key)
    if g is None:
        g = _lookup(key, op, description, (tensor,))
    try:
        return g.fn(tensor)
    except (EinxError, OpValueError):
        raise
    except Exception as e:
        raise CallOperationError.create(e, g.source) from e


def _make(op, specialise=False):
    fam = FAMILY[op]
    fast = not specialise

    # Fast paths (no backend/graph/constraint kwargs, array arguments): the key of
    # ``_key`` spelled inline. Arguments without ndim/dtype (Python scalars, ...) take ``_call``.
    if fam == "reduce":

        def f(description, tensor, *, keepdims=None, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters and not keepdims and fast:
                out = _one_array(op, description, tensor)
                if out is not _MISS:
                    return out
            return _call(
                op,
                description,
                (tensor,),
                backend,
                graph,
                parameters,
                (("keepdims", bool(keepdims)),) if keepdims else (),
                specialise,
            )
    elif fam in ("preserve", "argfind") and op != "roll":

        def f(description, tensor, *, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters and fast:
                out = _one_array(op, description, tensor)
                if out is not _MISS:
                    return out
            return _call(op, description, (tensor,), backend, graph, parameters, (), specialise)
    elif op == "roll":

        def f(description, tensor, *, shift, backend=None, graph=False, **parameters):
            sh = tuple(shift) if isinstance(shift, (list, tuple)) else shift
            static = (("shift", sh),)
            values = sh if isinstance(sh, tuple) else (sh,)
            if any(type(v) is not int for v in values):
                # the shift's text is in the graph: 1.0 and True equal 1 (same key, same signature), yet einx fails on them
                static += (("shift types", tuple(type(v).__name__ for v in values)),)
            return _call(op, description, (tensor,), backend, graph, parameters, static, specialise)
    elif op == "where":

        def f(description, mask, x, y, *, backend=None, graph=False, **parameters):
            return _call(op, description, (mask, x, y), backend, graph, parameters, (), specialise)
    else:

        def f(description, *tensors, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters and len(tensors) == 2 and fast:
                a, b = tensors
                try:
                    key = (op, description, a.__class__, a.ndim, a.dtype, b.__class__, b.ndim, b.dtype)
                except AttributeError:
                    pass
                else:
                    g = GRAPHS.get(key)
                    if g is None:
                        g = _lookup(key, op, description, tensors)
                    try:
                        return g.fn(a, b)
                    except (EinxError, OpValueError):
                        raise
                    except Exception as e:
                        raise CallOperationError.create(e, g.source) from e
            return _call(op, description, tensors, backend, graph, parameters, (), specialise)

    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"einx.{op} with graphs built once per signature (see einx 0.4.3 docs for the notation)."
    return f


#: names einx 0.4.3 accepts for one of :data:`~.semantics.FAMILY`'s ops (``einx.rearrange``
#: is ``einx.id`` under its pre-0.4 name): every mode resolves them here, so a program
#: written with an alias runs wherever the op's own name does
ALIASES = {"rearrange": "id"}
#: einx 0.4.3's removed operations: einx's own functions, which raise its RemovedOperationError
REMOVED = ("arange", "elementwise", "reduce", "vmap", "vmap_with_axis")


def specialised(op):
    """``op`` (an op of :data:`~.semantics.FAMILY`, an alias of one, or a removed op) with
    one graph per input shapes, as einx 0.4.3 caches its graphs: the shapes join the
    signature (the static mode's emulation, for comparison)."""
    if op in REMOVED:
        import einx

        return getattr(einx, op)
    if op not in FAMILY and op not in ALIASES:
        raise AttributeError(
            f"einx_symbolic has no operation {op!r} (einx 0.4.3's operations: {', '.join(sorted([*FAMILY, *ALIASES]))})"
        )
    f = _make(ALIASES.get(op, op), specialise=True)
    f.__name__ = f.__qualname__ = op
    return f


OPS = {op: _make(op) for op in FAMILY}
OPS.update({alias: OPS[op] for alias, op in ALIASES.items()})
