"""LazyTensor: a proxy whose torch ops record IR nodes instead of running.

A ``torch.Tensor`` subclass over an empty tensor with the tensor surface of
its own (methods, operators, ``shape`` as :class:`~.symbolic.SymSize`) and a
``__torch_function__`` hook, so ``torch.xxx(lazy, ...)`` and
``torch.nn.functional.xxx(lazy, ...)`` reach the op registry in :mod:`.ops`.
Materialisation (``numpy()``, ``tolist()``, ``item()``, printing, ``bool()``,
``float()``, ``cpu()``, ``sync()``) compiles the pending graph and runs it.

The Python operators are defined here, from :data:`OPERATORS`; the tensor
methods are the registry's (:func:`install_methods`, called once by
:mod:`.ops`).
"""

from __future__ import annotations

import math
import sys

import torch

from engines import sizes

from .ir import Node
from .symbolic import PROBES, UNPATCHED, FinishedStep, NeedsSizedMethods, SymSize, retract_probes

OPS: dict = {}  # torch function / method name -> implementation (filled by .ops)
F_OPS: dict = {}  # torch.nn.functional name -> implementation (filled by .ops)

# Python operator -> (op name in OPS, operands swapped); the reflected forms
# serve ``2 - x`` and torch's ``Tensor.__rsub__`` met by ``__torch_function__``.
_BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "truediv": "div",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "pow",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
}
OPERATORS = {
    **{f"__{d}__": (n, False) for d, n in _BINARY.items()},
    **{f"__r{d}__": (n, True) for d, n in _BINARY.items()},
    **{f"__{d}__": (d, False) for d in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"__i{d}__": (n + "_", False) for d, n in _BINARY.items() if d in ("add", "sub", "mul", "truediv")},
    "__neg__": ("neg", False),
    "__abs__": ("abs", False),
    "__invert__": ("bitwise_not", False),
    "__getitem__": ("__getitem__", False),
    "__setitem__": ("__setitem__", False),
}


class UntraceableOp(NotImplementedError):
    """The lazy path cannot trace this op (the message says which and why); ``kind`` names
    the class of refusal ("data-dependent output", "random", "in-place", ...)."""

    kind = "unsupported op"

    def __init__(self, *args, kind: str | None = None):
        super().__init__(*args)
        if kind is not None:
            self.kind = kind


_EMPTY = torch.empty(0)
_make_subclass = torch.Tensor._make_subclass


class LazyTensor(torch.Tensor):
    """A ``torch.Tensor`` subclass, so libraries' ``isinstance(x, Tensor)`` checks hold
    (torch_geometric's ``MessagePassing``), over an empty tensor: torch's C argument parser
    may read a tensor argument's metadata (is it a 0-d tensor standing for a Scalar?) before
    it finds ``__torch_function__``, so the object must be a real tensor underneath. Its
    methods, metadata and operators are this class's; anything else of ``torch.Tensor``
    reaches ``__torch_function__`` (and is refused when the registry lacks it)."""

    __slots__ = ("ctx", "node")

    def __new__(cls, node: Node, ctx):
        self = _make_subclass(cls, _EMPTY)
        self.node, self.ctx = node, ctx
        return self

    def __init__(self, node: Node, ctx):
        pass

    # -- metadata (never materialises) ----------------------------------
    def _sizes(self) -> tuple:
        """The node's symbolic shape; refused for a tensor logged by an earlier
        jit step (its variables' names are the current step's: see ``SymSize.live``)."""
        n = self.node
        p = n.pos
        if p is not None:
            log = self.ctx.log
            if log is not None and not (p < len(log.nodes) and log.nodes[p] is n):
                if any(not e.is_const for e in n.shape):
                    raise FinishedStep(f"lazy: the sizes of {n.op}#{n.uid} belong to a finished step")
        return n.shape

    @property
    def shape(self) -> tuple:
        ctx, out = self.ctx, []
        for e in self._sizes():  # SymSize.wrap, inline: a constant dim is an int
            t = e.terms
            out.append(0 if not t else t[0][1] if len(t) == 1 and not t[0][0] else SymSize(e, ctx))
        return tuple(out)

    def size(self, dim=None):
        s = self.shape
        return s if dim is None else s[dim]

    @property
    def dtype(self) -> torch.dtype:
        return self.node.dtype

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self):
        return SymSize.wrap(math.prod(self._sizes(), start=sizes.const(1)), self.ctx)

    def __len__(self) -> int:
        if not self.node.shape:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    requires_grad = False
    is_lazy = True
    grad = None
    # what libraries read off a tensor before using it (torch_geometric's sparse checks)
    layout = torch.strided
    is_sparse = is_sparse_csr = is_quantized = is_nested = is_meta = is_cuda = False

    # -- autograd: not traced ---------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> LazyTensor:
        if requires_grad:
            raise UntraceableOp("lazy: autograd (requires_grad_) is not supported: the lazy path records forward ops only")
        return self

    def backward(self, *args, **kwargs):
        raise UntraceableOp("lazy: autograd (backward) is not supported: the lazy path records forward ops only")

    # -- materialisation -----------------------------------------------
    def sync(self) -> LazyTensor:
        """Compile and run the pending graph of this tensor (if any)."""
        self.ctx.sync([self])
        return self

    def value(self) -> torch.Tensor:
        """The concrete tensor (materialises)."""
        if not self.node.is_leaf:
            self.ctx.sync([self])
        return self.node.data

    def cpu(self) -> torch.Tensor:
        return self.value()

    def numpy(self):
        return self.value().numpy()

    def tolist(self):
        return self.value().tolist()

    def item(self):
        return self.value().item()

    def __array__(self, dtype=None, copy=None):
        a = self.value().numpy()
        return a if dtype is None else a.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.value())

    def __float__(self) -> float:
        return float(self.value())

    def __int__(self) -> int:
        return int(self.value())

    def __index__(self) -> int:
        return self.value().__index__()

    def __repr__(self) -> str:
        return f"LazyTensor({self.value()!r})".replace("\n", "\n" + " " * 11)

    def __str__(self) -> str:
        return str(self.value())

    def __format__(self, spec) -> str:
        return format(self.value(), spec)

    def __iter__(self):
        return iter(OPS["unbind"](self, 0))

    def __pos__(self):
        return self

    @property
    def T(self):
        return OPS["permute"](self, list(range(self.ndim))[::-1])

    @property
    def mT(self):
        return OPS["transpose"](self, -2, -1)

    __hash__ = object.__hash__

    # -- torch function hook ----------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        DISPATCHED[0] += 1
        if PROBES:  # torch's argument parser probed a size of this call: not a read (see symbolic.PROBES)
            retract_probes(sys._getframe(1))
        if UNPATCHED[0]:  # a step traced without tracing()'s functions met one: traced again with them
            raise NeedsSizedMethods(func)
        hit = _DISPATCH.get(func)
        if hit is None:
            try:
                hit = _resolve(func)
            except UntraceableOp:  # no registry entry: the generic rule of torch's meta kernel (.ops.meta), if any
                if not FALLBACK or getattr(func, "__name__", None) == "__set__":
                    raise  # (not cached)
                hit = (FALLBACK[0](func, getattr(func, "__name__", str(func))), False, _lifts(func))
            _DISPATCH[func] = hit
        impl, swap, lifts = hit
        if swap:
            args = (args[1], args[0]) + tuple(args[2:])
        elif lifts and args and type(args[0]) is not LazyTensor and isinstance(args[0], torch.Tensor):
            args = _lifted(args, kwargs)
        try:
            return impl(*args, **kwargs) if kwargs else impl(*args)
        except UntraceableOp as e:  # a registry rule that refuses these arguments: the generic rule, if any
            if e.kind != "unsupported op" or not FALLBACK or swap:
                raise
            generic = FALLBACK[0](func, getattr(func, "__name__", str(func)))
            if generic is impl:
                raise
            return generic(*args, **(kwargs or {}))


#: ``[fallback(func, name) -> implementation]`` for a torch function the registry lacks (set by ``.ops.meta``)
FALLBACK: list = []
_DISPATCH: dict = {}  # torch function -> (implementation, operands swapped): __torch_function__'s table
#: calls of ``__torch_function__``, ever (``hooks.trace_step`` reads it around a step)
DISPATCHED = [0]


# in-place operators: they write into their first operand, a plain tensor included (see ``_lifts``)
_WRITES = frozenset({*(f"__i{d}__" for d in _BINARY), "__ilshift__", "__irshift__", "__setitem__"})


def _lifts(func) -> bool:
    """Whether a plain tensor as ``func``'s first operand (``param[index]``, ``weight @ x``) is taken
    as a constant leaf: the rules read their first operand's node; all but in-place ops, which write
    into that tensor (``.ops.inplace``)."""
    name = getattr(func, "__name__", "")
    return not ((name.endswith("_") and not name.endswith("__")) or name in _WRITES)


def _lifted(args: tuple, kwargs) -> tuple:
    """``args`` with the plain tensor ``args[0]`` a constant leaf of the context of the other operands."""
    ctx = ctx_of(args[1:], kwargs)
    if ctx is None:
        return args
    return (LazyTensor(ctx.constant(args[0]), ctx),) + tuple(args[1:])


def _resolve(func) -> tuple:
    """The registry's implementation of the torch function ``func`` and whether it lifts a plain first
    operand (``UntraceableOp`` naming it when there is none; ``__torch_function__`` then takes the
    generic rule, ``FALLBACK``)."""
    impl, swap = _lookup(func)
    return impl, swap, _lifts(func)


def _lookup(func) -> tuple:
    name = getattr(func, "__name__", str(func))
    if name in ("__get__", "__set__"):  # a torch.Tensor attribute this class does not define
        attr = getattr(getattr(func, "__self__", None), "__name__", "?")
        raise UntraceableOp(f"lazy: tensor attribute {attr!r} is not supported by the lazy path", kind="tensor attribute")
    if getattr(func, "__module__", None) == "torch.nn.functional" and name in F_OPS:
        return F_OPS[name], False
    impl = OPS.get(name)
    if impl is not None:
        return impl, False
    if name in OPERATORS:
        op, swap = OPERATORS[name]
        return OPS[op], swap
    raise UntraceableOp(f"lazy: torch function {name!r} is not supported by the lazy path")


def _operator(op: str, swap: bool):
    if swap:

        def method(self, other):
            return OPS[op](other, self)
    else:

        def method(self, *args):
            return OPS[op](self, *args)

    return method


for _name, (_op, _swap) in OPERATORS.items():
    setattr(LazyTensor, _name, _operator(_op, _swap))


def install_methods(methods: dict) -> None:
    """Make each registered method (``name -> implementation``) a method of
    :class:`LazyTensor`, unless the class defines it (metadata, operators), and
    each operator whose operands are not swapped its implementation itself (no
    ``OPS`` look-up per call: ``x / y`` is most steps' op)."""
    for name, fn in methods.items():
        if name not in LazyTensor.__dict__:  # (not hasattr: torch.Tensor has them all)
            setattr(LazyTensor, name, fn)
    for name, (op, swap) in OPERATORS.items():
        if not swap and op in OPS:
            setattr(LazyTensor, name, OPS[op])


def ctx_of(*objs):
    """The context of the first lazy tensor or symbolic size among ``objs`` (searched nested)."""
    for o in objs:
        if isinstance(o, (LazyTensor, SymSize)):
            return o.ctx
        if isinstance(o, (list, tuple)):
            c = ctx_of(*o)
            if c is not None:
                return c
        if isinstance(o, dict):
            c = ctx_of(*o.values())
            if c is not None:
                return c
    return None
