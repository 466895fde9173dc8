"""Public entry points: einx 0.4.3's call signature, one graph per signature.

Hot path: build a tuple key (op, description, backend, per-argument (class,
ndim, dtype), parameter kinds, static kwargs), one dict lookup, call the
generated function.  Sizes never enter the key.
"""
import time as _time

import numpy as _np

from .backends import library_of
from .build import COUNT, build
from .errors import CallOperationError, EinxError
from .semantics import FAMILY

_CACHE = {}  # fast key -> entry: (fn, src), or [fn, None, make_src] (source text generated on first use)
_CANON = {}  # canonical signature -> entry; shared by e.g. jax arrays and jax tracers
_NO_DTYPE = object()


def compile_count():
    """Number of graphs built in this process (one per distinct signature)."""
    return COUNT[0]


def clear_cache():
    """Forget all generated graphs (the compile counter is not reset)."""
    _CACHE.clear()
    _CANON.clear()


#: one line per graph built through the caches (a new signature), and their
#: total build seconds: what a caller reads to say why and how long it compiled
BUILD_LOG: list = []
BUILD_S = [0.0]


def _src(entry):
    """The source text of an entry (generated now if the entry was built without it)."""
    src = entry[1]
    if src is None:
        src = entry[1] = entry[2]()
    return src


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
    raise ValueError(f"Values passed for axis names as constraints must have an integral type, but found value {v} with type {type(v)}")


def _lib(libs, backend):
    if backend is not None:
        if not isinstance(backend, str):
            backend = getattr(backend, "name", str(backend))
        name = backend.split(".")[0]
        if name not in ("torch", "numpy", "jax"):
            raise ValueError(f"Backend with name {backend} not found. einx_symbolic supports: torch, numpy, jax")
        return name
    s = set(libs) - {"scalar"}
    if "torch" in s and "jax" in s:
        from einx.errors import BackendResolutionError
        raise BackendResolutionError("Failed to determine which backend to use for this operation: the arguments mix torch and jax tensors.")
    if "torch" in s:
        return "torch"
    if "jax" in s:
        return "jax"
    return "numpy"


def _signature(op, description, tensors, backend, params, static):
    """(canonical signature, build arguments) of one call."""
    libs = [library_of(t) for t in tensors]
    lib = _lib(libs, backend)
    ranks = tuple(0 if l == "scalar" else len(t.shape) for t, l in zip(tensors, libs))
    scalars = frozenset(i for i, l in enumerate(libs) if l == "scalar")
    pkinds = {k: _psig(v) for k, v in params.items()}
    canon = (op, description, lib, ranks, scalars, tuple(libs),
             tuple(str(getattr(t, "dtype", type(t).__name__)) for t in tensors), tuple(sorted(pkinds.items())), static)
    return canon, (op, description, lib, ranks, scalars, libs, pkinds, dict(static))


def _describe(canon):
    op, description, lib, ranks, _, _, dtypes, pkinds, static = canon
    out = f"{op}({description!r}) on {lib}, ranks {ranks}, dtypes ({', '.join(dtypes)})"
    if pkinds:
        out += f", parameters {dict(pkinds)}"
    if static:
        out += f", {dict(static)}"
    return out


def _slow(key, op, description, tensors, backend, params, static):
    canon, args = _signature(op, description, tensors, backend, params, key[-1])
    entry = _CANON.get(canon)
    if entry is None:
        t0 = _time.perf_counter()
        entry = build(*args)
        BUILD_S[0] += _time.perf_counter() - t0
        BUILD_LOG.append("new signature " + _describe(canon))
        _CANON[canon] = entry
    _CACHE[key] = entry
    return entry


def build_for(op, description, tensors, kwargs=None):
    """A graph for this one call, built afresh outside the caches (one build,
    not in :data:`BUILD_LOG`): returns ``run(*tensors)``, which runs it on
    arrays of the same signature.

    Used to emulate per-shape specialisation for comparison without touching
    the shared caches: the caller keeps one ``run`` per shape."""
    params = dict(kwargs or {})
    static = ()
    if FAMILY[op] == "reduce" and params.get("keepdims"):
        static = (("keepdims", bool(params.pop("keepdims"))),)
    elif op == "roll":
        shift = params.pop("shift")
        static = (("shift", tuple(shift) if isinstance(shift, (list, tuple)) else shift),)
    _, args = _signature(op, description, tuple(tensors), None, params, static)
    entry = build(*args)

    def run(*ts):
        try:
            return entry[0](*ts, P=params) if params else entry[0](*ts)
        except EinxError:
            raise
        except Exception as e:
            raise CallOperationError.create(e, _src(entry)) from e

    return run


def _entry(op, description, tensors, backend, params, static):
    """(fn, src) for one call, through ``_call``'s key (used on fast-path misses)."""
    return _lookup(_key(op, description, tensors, backend, params, static), op, description, tensors, backend, params, static)


def _key(op, description, tensors, backend, params, static):
    key = [op, description, backend]
    for t in tensors:
        key.append((t.__class__, getattr(t, "ndim", -1), getattr(t, "dtype", _NO_DTYPE)))
    if params:
        key.append(tuple((k, v.__class__, len(v) if isinstance(v, (tuple, list)) else -1) for k, v in params.items()))
    key.append(static)
    return tuple(key)


def _lookup(key, op, description, tensors, backend, params, static):
    entry = _CACHE.get(key)
    if entry is None:
        entry = _slow(key, op, description, tensors, backend, params, dict(static))
    return entry


def _call(op, description, tensors, backend, graph, params, static=()):
    entry = _lookup(_key(op, description, tensors, backend, params, static), op, description, tensors, backend, params, static)
    if graph:
        return _src(entry)
    try:
        if params:
            return entry[0](*tensors, P=params)
        return entry[0](*tensors)
    except EinxError:
        raise
    except Exception as e:
        raise CallOperationError.create(e, _src(entry)) from e


_MISS = object()


def _one_array(op, description, tensor):
    """Fast path of a one-array call with no keywords: a flat key, one lookup.
    ``_MISS`` when ``tensor`` is not an array (no ``ndim``/``dtype``)."""
    try:
        key = (op, description, tensor.__class__, tensor.ndim, tensor.dtype)
    except AttributeError:
        return _MISS
    entry = _CACHE.get(key)
    if entry is None:
        entry = _CACHE[key] = _entry(op, description, (tensor,), None, {}, ())
    try:
        return entry[0](tensor)
    except EinxError:
        raise
    except Exception as e:
        raise CallOperationError.create(e, _src(entry)) from e


def _make(op):
    fam = FAMILY[op]

    # Fast path (no backend/graph/constraint kwargs, array arguments): a flat key
    # (op, description, then class, ndim, dtype per argument) in the same active
    # cache; it carries the same information as ``_call``'s key for such calls.
    # Arguments without ndim/dtype (Python scalars, ...) take ``_call``.
    if fam == "reduce":
        def f(description, tensor, *, keepdims=None, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters and not keepdims:
                out = _one_array(op, description, tensor)
                if out is not _MISS:
                    return out
            return _call(op, description, (tensor,), backend, graph, parameters, (("keepdims", bool(keepdims)),) if keepdims else ())
    elif fam in ("preserve", "argfind") and op != "roll":
        def f(description, tensor, *, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters:
                out = _one_array(op, description, tensor)
                if out is not _MISS:
                    return out
            return _call(op, description, (tensor,), backend, graph, parameters)
    elif op == "roll":
        def f(description, tensor, *, shift, backend=None, graph=False, **parameters):
            return _call(op, description, (tensor,), backend, graph, parameters,
                         (("shift", tuple(shift) if isinstance(shift, (list, tuple)) else shift),))
    elif op == "where":
        def f(description, mask, x, y, *, backend=None, graph=False, **parameters):
            return _call(op, description, (mask, x, y), backend, graph, parameters)
    else:
        def f(description, *tensors, backend=None, graph=False, **parameters):
            if backend is None and not graph and not parameters and len(tensors) == 2:
                a, b = tensors
                try:
                    key = (op, description, a.__class__, a.ndim, a.dtype, b.__class__, b.ndim, b.dtype)
                except AttributeError:
                    pass
                else:
                    entry = _CACHE.get(key)
                    if entry is None:
                        entry = _CACHE[key] = _entry(op, description, tensors, None, {}, ())
                    try:
                        return entry[0](a, b)
                    except EinxError:
                        raise
                    except Exception as e:
                        raise CallOperationError.create(e, _src(entry)) from e
            return _call(op, description, tensors, backend, graph, parameters)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"einx.{op} with graphs built once per signature (see einx 0.4.3 docs for the notation)."
    return f


OPS = {op: _make(op) for op in FAMILY}
