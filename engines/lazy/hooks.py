"""The functions :class:`tracing` swaps into torch while a step records.

``torch.zeros``/``ones``/``empty``/``full``/``arange``/``eye`` called with
symbolic sizes go to the lazy path (torch's argument parser would otherwise
force the sizes to ints), ``torch.stack``/``cat``/``split`` on lazy tensors go
to their lazy implementations directly, and torch's Python wrappers on lazy
tensors (``F.layer_norm``, ``F.pad``) reach ``__torch_function__`` without
torch's Python ``handle_torch_function`` search.
"""

from __future__ import annotations

import operator

import torch
import torch._refs

from .memo import Memo
from .symbolic import PLAIN_METHOD, SIZED_FUNCTIONS, SymSize
from .tensor import DISPATCHED, OPS, LazyTensor

_TENSOR = torch.Tensor


# ---------------------------------------------------------------------------
# creation functions called with symbolic sizes (``torch.zeros(x.shape[0], 4)``)
# ---------------------------------------------------------------------------
_CREATION = ("zeros", "ones", "empty", "full", "arange", "eye")
SIZED_FUNCTIONS.update({getattr(torch, n): OPS["lazy_" + n] for n in _CREATION})


def _has_sym(obj) -> bool:
    if isinstance(obj, SymSize):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_sym(o) for o in obj)
    return False


def _patched(name, orig):
    impl = OPS["lazy_" + name]

    def fn(*args, **kwargs):
        if _has_sym(args) or _has_sym(list(kwargs.values())):
            PATCH_CALLS[0] += 1
            return impl(*args, **kwargs)
        return orig(*args, **kwargs)

    fn.__name__, fn.__wrapped__, fn.lazy_tracing = name, orig, True
    return fn


def _broadcast_ints(orig):
    """``torch._refs._broadcast_shapes`` while tracing: with symbolic sizes among the shapes, the
    lazy rule's result read as ints (its caller, ``torch.broadcast_shapes``, makes a ``torch.Size``
    of it, which would read them so anyway)."""
    impl = OPS["lazy_broadcast_shapes"]

    def fn(*shapes):
        if _has_sym(shapes):
            PATCH_CALLS[0] += 1
            return [int(d) for d in impl(*shapes)]
        return orig(*shapes)

    fn.__name__, fn.__wrapped__, fn.lazy_tracing = orig.__name__, orig, True
    return fn


def _handler(orig):
    """torch's ``handle_torch_function`` (what its Python wrappers -- ``torch.split``,
    ``F.layer_norm``, ``F.pad`` -- call on an overloaded operand), calling
    :meth:`LazyTensor.__torch_function__` at once when the operands are lazy
    tensors, plain tensors or None and no torch function mode is on: what
    ``orig`` would call, without its Python search (~2-3 us a call)."""

    def fn(public_api, relevant_args, *args, **kwargs):
        if not _mode_enabled():
            lazy = False
            for a in relevant_args:
                t = type(a)
                if t is LazyTensor:
                    lazy = True
                elif t not in _PLAIN_OPERANDS:
                    break
            else:
                if lazy:
                    return _torch_function(public_api, _LAZY_TYPES, args, kwargs)
        return orig(public_api, relevant_args, *args, **kwargs)

    fn.__name__, fn.__wrapped__, fn.lazy_tracing = orig.__name__, orig, True
    return fn


# ---------------------------------------------------------------------------
# torch functions a step calls on lazy tensors, reached without torch's dispatch
# ---------------------------------------------------------------------------
_DIRECT = ("stack", "cat", "split", "zeros_like", "ones_like", "empty_like", "full_like")  # (a list of tensors, a Python
# wrapper, or a creation function common in message passing: torch scans each for overloads)
_DIRECT_KWARGS = {"split": {"split_size_or_sections": "split_size"}}


def _direct(name, orig):
    """``torch.<name>`` while tracing: its lazy implementation at once when the
    first operand is a lazy tensor, or a non-empty list or tuple of them only, and
    no torch function mode is on -- what torch's dispatch to
    :meth:`LazyTensor.__torch_function__` would call, without it (~1-2 us a
    call); ``orig`` for anything else."""
    impl = OPS[name]
    renamed = _DIRECT_KWARGS.get(name)

    def fn(*args, **kwargs):
        if args and not _mode_enabled():
            a = args[0]
            t = type(a)
            lazy = t is LazyTensor
            if not lazy and (t is list or t is tuple) and a:
                for x in a:
                    if type(x) is not LazyTensor:
                        break
                else:
                    lazy = True
            if lazy:
                PATCH_CALLS[0] += 1
                if renamed is not None and kwargs:  # torch's keyword names where the implementation's differ
                    kwargs = {renamed.get(k, k): v for k, v in kwargs.items()}
                return impl(*args, **kwargs)
        return orig(*args, **kwargs)

    fn.__name__, fn.__wrapped__, fn.lazy_tracing = name, orig, True
    return fn


# ---------------------------------------------------------------------------
# torch.nn.functional functions called on a plain tensor with symbolic output sizes
# (timm's ``F.interpolate(pos_embed, size=(h, w))``: a parameter resized to the input's grid)
# ---------------------------------------------------------------------------
_SIZED_F = (
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    *(f"adaptive_{k}_pool{d}d" for k in ("avg", "max") for d in (1, 2, 3)),
    "pad",
)


def _sized_functional(name, orig):
    """``F.<name>`` while tracing: on a plain tensor with a symbolic size among the arguments
    and no lazy tensor, ``orig`` on that tensor as a constant leaf, so torch's Python wrapper
    reaches ``__torch_function__`` -- without it, the sizes reach torch's C++ argument parser,
    which refuses them (``interpolate``) or reads them as ints (one compile per size)."""

    def fn(*args, **kwargs):
        if args and type(args[0]) is not LazyTensor and isinstance(args[0], _TENSOR) and not _mode_enabled():
            ctx = _sym_ctx(args[1:]) or (_sym_ctx(tuple(kwargs.values())) if kwargs else None)
            if ctx is not None:
                PATCH_CALLS[0] += 1
                return orig(LazyTensor(ctx.constant(args[0]), ctx), *args[1:], **kwargs)
        return orig(*args, **kwargs)

    # (torch's wrappers hand ``__torch_function__`` the module's function, this one while tracing:
    # found by module and name in the registry's ``torch.nn.functional`` table, as ``orig`` is)
    fn.__name__, fn.__module__, fn.__wrapped__, fn.lazy_tracing = name, orig.__module__, orig, True
    return fn


#: calls of the functions above that took the lazy branch, ever: with ``tensor.DISPATCHED``, what
#: ``trace_step`` reads around a step to learn whether its program needs ``tracing`` at all
PATCH_CALLS = [0]
_mode_enabled = torch._C._is_torch_function_mode_enabled
_torch_function = LazyTensor.__torch_function__
_LAZY_TYPES = (LazyTensor,)
_PLAIN_OPERANDS = frozenset({_TENSOR, torch.nn.Parameter, type(None)})  # no __torch_function__ of their own
_PATCHES: dict = {}  # (namespace id, name) -> the patched function last made for it


def _targets() -> list:
    """``(namespace dict, name, make)``: the functions :class:`tracing` replaces, ``make(found)``
    building the replacement of the function found there."""
    out = [(torch.__dict__, n, lambda f, n=n: _patched(n, f)) for n in _CREATION]
    out += [(torch.__dict__, n, lambda f, n=n: _direct(n, f)) for n in _DIRECT]
    # broadcast_shapes of symbolic sizes: torch's asks guard_or_false of each comparison, which takes torch's
    # SymBool only (an AssertionError on ours). torch.broadcast_shapes itself: symbolic sizes, as x.shape
    out += [(torch.__dict__, "broadcast_shapes", lambda f: _patched("broadcast_shapes", f))]
    out += [(torch.nn.functional.__dict__, "handle_torch_function", _handler)]
    out += [(torch.nn.functional.__dict__, n, lambda f, n=n: _sized_functional(n, f)) for n in _SIZED_F]
    out += [(torch.functional.__dict__, "handle_torch_function", _handler)]
    # a torch.broadcast_shapes held from before the step (OpInfo's) looks torch._refs._broadcast_shapes up at
    # call time, then makes a torch.Size of its result, which reads each size as an int (a guard each)
    out += [(torch._refs.__dict__, "_broadcast_shapes", _broadcast_ints)]
    return out


def _finders(targets) -> tuple:
    """``(namespace dict, getter)`` per namespace of ``targets``, the getter reading its names in
    one C call; the functions found are the getters' results in turn (``_found``), which
    ``_patch_set`` pairs with ``targets`` in order: each namespace's targets must be consecutive."""
    runs = [id(ns) for i, (ns, _, _) in enumerate(targets) if i == 0 or targets[i - 1][0] is not ns]
    if len(runs) != len(set(runs)):
        raise AssertionError("tracing targets: a namespace's names are not consecutive")
    by_ns: dict = {}
    for ns, name, _ in targets:
        by_ns.setdefault(id(ns), (ns, []))[1].append(name)
    return tuple([(ns, operator.itemgetter(*names)) for ns, names in by_ns.values()])


def _found() -> tuple:
    out = []
    for ns, get in _FINDERS:
        f = get(ns)
        out.extend(f) if type(f) is tuple else out.append(f)
    return tuple(out)


def _patch_set(found, targets) -> list:
    """``[(namespace dict, {name: replacement}, {name: what restores it})]`` for the functions ``found``."""
    by_ns: dict = {}
    for f, (ns, name, make) in zip(found, targets, strict=False):
        new, old = by_ns.setdefault(id(ns), (ns, {}, {}))[1:]
        old[name] = f
        if getattr(f, "lazy_tracing", False):  # already inside tracing()
            new[name] = f
            continue
        p = _PATCHES.get((id(ns), name))
        if p is None or p.__wrapped__ is not f:
            p = _PATCHES[id(ns), name] = make(f)
        new[name] = p
    return list(by_ns.values())


# ---------------------------------------------------------------------------
# methods of a plain tensor called with symbolic sizes (``buffer[:, a:b]``,
# ``buffer.expand(B, S)``: a model's buffers and parameters)
# ---------------------------------------------------------------------------
# Only these two (what models do to a buffer: ``position_ids[:, a:b]``, ``cls_token.expand(B, -1, -1)``):
# a step that patches sets and deletes them on torch.Tensor, and each change invalidates the method caches
# of its subclasses, LazyTensor among them (all eleven sized methods measured ~40 us a step on a loaded
# machine); only the steps of a function that needs them patch (:func:`trace_step`).
_SIZED_METHODS = ("__getitem__", "expand")
#: calls of the sized methods that took the lazy branch (a plain tensor, a symbolic size), ever:
#: ``LazyFunction`` reads it around a step to learn whether its program needs them
SIZED_CALLS = [0]


def _has_sym_index(obj) -> bool:
    """A symbolic size anywhere in an index (slices and tuples included)."""
    t = type(obj)
    if t is SymSize:
        return True
    if t is slice:
        return type(obj.start) is SymSize or type(obj.stop) is SymSize or type(obj.step) is SymSize
    if t is tuple or t is list:
        return any(_has_sym_index(o) for o in obj)
    return False


def _sized_method(name, orig):
    """``torch.Tensor.<name>`` while tracing: on a plain tensor with a symbolic size among its
    arguments, the lazy op on the tensor as a constant leaf -- torch would call ``__index__`` on
    the size and so specialise the step to it (one compile per size); ``orig`` otherwise."""
    impl = OPS[name]

    def fn(self, *args, **kwargs):
        if _has_sym_index(args) or (kwargs and _has_sym_index(tuple(kwargs.values()))):
            SIZED_CALLS[0] += 1
            ctx = _sym_ctx(args) or _sym_ctx(tuple(kwargs.values()))
            if type(self) is not LazyTensor and not _mode_enabled():
                return impl(LazyTensor(ctx.constant(self), ctx), *args, **kwargs)
        return orig(self, *args, **kwargs)

    fn.__name__, fn.__wrapped__, fn.lazy_tracing = name, orig, True
    return fn


def _sym_ctx(obj):
    t = type(obj)
    if t is SymSize:
        return obj.ctx
    if t is slice:
        return _sym_ctx(obj.start) or _sym_ctx(obj.stop) or _sym_ctx(obj.step)
    if t is tuple or t is list:
        for o in obj:
            c = _sym_ctx(o)
            if c is not None:
                return c
    return None


def _plain_method(func, args, kwargs):
    """``func(tensor, ...)`` on a plain tensor with a symbolic size among the rest (torch_geometric's
    HGTConv: ``torch.arange(H).repeat(1, N)``), met by ``SymSize.__torch_function__``: the registry's
    op on the tensor as a constant leaf; without it, the sizes are read as ints (a graph per size).
    NotImplemented for an in-place op (it writes into the tensor) or one the registry lacks."""
    a, name = args[0], getattr(func, "__name__", "")
    impl = OPS.get(name)
    if impl is None or type(a) is LazyTensor or not isinstance(a, _TENSOR) or name.endswith("_"):
        return NotImplemented
    ctx = _sym_ctx(args[1:]) or (_sym_ctx(tuple(kwargs.values())) if kwargs else None)
    if ctx is None or _mode_enabled():
        return NotImplemented
    return impl(LazyTensor(ctx.constant(a), ctx), *args[1:], **kwargs)


PLAIN_METHOD.append(_plain_method)
_TENSOR_PATCHES = {n: _sized_method(n, getattr(_TENSOR, n)) for n in _SIZED_METHODS}
_TENSOR_OWN = {n: _TENSOR.__dict__[n] for n in _SIZED_METHODS if n in _TENSOR.__dict__}  # (``unflatten``)


def _restore_tensor_methods() -> None:
    for n in _SIZED_METHODS:  # (most are TensorBase's, inherited: deleting restores them)
        if n in _TENSOR_OWN:
            setattr(_TENSOR, n, _TENSOR_OWN[n])
        else:
            delattr(_TENSOR, n)


class paused:
    """Inside :class:`tracing`, torch.Tensor's own methods back for a while: a sync in the middle of
    a step compiles, and ``torch.fx`` names a method target only when it *is* ``torch.Tensor``'s."""

    __slots__ = ("on",)

    def __enter__(self):
        t = _TENSOR.__dict__.get("__getitem__")
        self.on = t is not None and getattr(t, "lazy_tracing", False)
        if self.on:
            _restore_tensor_methods()
        return self

    def __exit__(self, *exc):
        if self.on:
            for n, f in _TENSOR_PATCHES.items():
                setattr(_TENSOR, n, f)
        return False


class tracing:
    """Route ``torch.zeros``/``ones``/``empty``/``full``/``arange``/``eye`` called
    with symbolic sizes to the lazy path (torch's argument parser would
    otherwise force them to ints), and torch's Python wrappers on lazy tensors
    (``torch.split``, ``F.layer_norm``, ...) to ``__torch_function__`` without
    torch's Python search (:func:`_handler`). A context manager (re-entrant);
    a class, not a generator, since every step enters it: entering swaps the
    functions in each namespace in one ``dict.update``, the patched set cached
    by the functions it replaces."""

    __slots__ = ("methods", "saved", "tensor")

    def __init__(self, methods: bool = True):
        self.methods = methods  # False: torch.Tensor's sized methods left as they are (see LazyFunction)

    def __enter__(self):
        found = []  # the functions found, grouped by namespace (a loop: a comprehension is a call of its own)
        for ns, get in _FINDERS:
            found.append(get(ns))
        key = tuple(found)
        patch = _PATCH_SETS.get(key)
        if patch is None:
            patch = _PATCH_SETS.put(key, _patch_set(_found(), _TARGETS))
        for ns, new, _ in patch:
            ns.update(new)
        self.saved = patch
        self.tensor = False
        if self.methods:
            t = _TENSOR.__dict__.get("__getitem__")
            self.tensor = t is None or not getattr(t, "lazy_tracing", False)  # (re-entered: the outer one patched)
        if self.tensor:
            for n, f in _TENSOR_PATCHES.items():
                setattr(_TENSOR, n, f)
        return self

    def __exit__(self, *exc):
        for ns, _, old in self.saved:
            ns.update(old)
        if self.tensor:
            _restore_tensor_methods()
        return False


_TARGETS = _targets()
_FINDERS = _finders(_TARGETS)  # (in _TARGETS' order: each namespace's names are consecutive there)
_PATCH_SETS = Memo(8)  # the functions found -> their patch set (see _patch_set)


def trace_step(owner, leaves):
    """``owner.fn(*leaves)`` under :class:`tracing`, with ``torch.Tensor``'s sized methods patched
    as ``owner.sized_methods`` says. Patching ``__getitem__`` and restoring it costs a step ~20 us
    (CPython updates the slot in every subclass of ``torch.Tensor``), so the first step patches
    and learns whether ``fn`` needs them (``None`` -> ``False``: it never indexed a plain tensor by
    a symbolic size; ``True``: it did, for good). A size's ``__index__`` in a step not yet known to
    need them (an unpatched step, or the first) raises ``NeedsSizedMethods`` (torch's argument
    parser then calls ``__torch_function__``; a program's own read is traced again, patched, the
    size then read as an int: ``LazyFunction._record``). Likewise ``owner.patches``: whether a
    step needs ``tracing``'s functions in torch's namespaces (~2 us a step to swap in and out);
    a step of a program that never called one nor reached ``__torch_function__`` runs without
    them, and one that reaches ``__torch_function__``, converts a size to a number or raises
    after all is traced again with them (``NeedsSizedMethods``; a program's own error is raised
    by that second trace). That unpatched step (``patches`` and ``sized_methods`` both False) is
    ``LazyFunction._trace_step``'s own, inline: a frame less on every cached step."""
    if owner.sized_methods is None:
        calls, patched, dispatched = SIZED_CALLS[0], PATCH_CALLS[0], DISPATCHED[0]
        with tracing():
            out = owner.fn(*leaves)
        owner.sized_methods = SIZED_CALLS[0] != calls
        owner.patches = PATCH_CALLS[0] != patched or DISPATCHED[0] != dispatched
        return out
    with tracing(owner.sized_methods):
        return owner.fn(*leaves)
