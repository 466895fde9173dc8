"""LazyTensor: a proxy whose torch ops record IR nodes instead of running.

Not a ``torch.Tensor`` subclass: a plain class with the tensor surface
(methods, operators, ``shape`` as :class:`~.symbolic.SymSize`) and a
``__torch_function__`` hook, so ``torch.xxx(lazy, ...)`` and
``torch.nn.functional.xxx(lazy, ...)`` reach the op table in :mod:`.ops`.
Materialisation (``numpy()``, ``tolist()``, ``item()``, printing, ``bool()``,
``float()``, ``cpu()``, ``sync()``) compiles the pending graph and runs it.
"""

from __future__ import annotations

import torch

from .ir import Node
from .symbolic import Expr, SymSize

OPS: dict = {}  # torch function / method name -> implementation (filled by .ops)
F_OPS: dict = {}  # torch.nn.functional name -> implementation (filled by .ops)


class Unsupported(NotImplementedError):
    """The lazy path cannot trace this op (the message says which and why)."""


class LazyTensor:
    __slots__ = ("node", "ctx", "__weakref__")

    def __init__(self, node: Node, ctx):
        self.node, self.ctx = node, ctx

    # -- metadata (never materialises) ----------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(SymSize.wrap(e, self.ctx) for e in self.node.shape)

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
        n = Expr.const(1)
        for e in self.node.shape:
            n = n.mul(e)
        return SymSize.wrap(n, self.ctx)

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

    # -- materialisation -----------------------------------------------
    def sync(self) -> "LazyTensor":
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

    __hash__ = object.__hash__

    # -- torch function hook ----------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if getattr(func, "__module__", None) == "torch.nn.functional" and name in F_OPS:
            return F_OPS[name](*args, **kwargs)
        impl = OPS.get(name)
        if impl is None and name.startswith("__r") and name[3:-2] in _REFLECTED:
            a, b = args[0], args[1]
            return OPS[_REFLECTED[name[3:-2]]](b, a)
        if impl is None:
            raise Unsupported(f"lazy: torch function {name!r} is not supported by the lazy path")
        return impl(*args, **kwargs)


_REFLECTED = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
              "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and",
              "or": "bitwise_or", "xor": "bitwise_xor"}


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
