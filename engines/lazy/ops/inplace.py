"""In-place ops (``x.add_(y)``, ``x += y``, ``x.index_add_(...)``), functionalised:
the out-of-place op is recorded and the tensor then names its result."""

from __future__ import annotations

from ..tensor import OPS, LazyTensor, ctx_of
from .elementwise import to
from .registry import ShapeError, lazy_op

INPLACE = (
    "add",
    "sub",
    "mul",
    "div",
    "clamp",
    "clamp_min",
    "clamp_max",
    "index_add",
    "index_copy",
    "index_fill",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "masked_fill",
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "neg",
    "abs",
    "pow",
    "sqrt",
    "floor_divide",
    "remainder",
    "fmod",
    "log",
)


def _inplace(name):
    base = OPS[name]

    def impl(self, *args, **kwargs):
        if type(self) is not LazyTensor:  # a concrete tensor (torch made it from constant sizes: static mode)
            return _into_concrete(name, base, self, args, kwargs)
        out = base(self, *args, **kwargs)
        if out.dtype != self.dtype:
            out = to(out, self.dtype)
        if out.node.shape != self.node.shape:
            raise ShapeError(f"{name}_: result shape differs from the tensor's")
        self.node = out.node  # functionalised: the tensor now names the new value
        return self

    impl.__name__ = name + "_"
    return impl


def _into_concrete(name, base, self, args, kwargs):
    """``self.<name>_(*args)`` on a concrete tensor with lazy operands: it cannot name a lazy value,
    so the result is computed (a sync: the graph splits here, one more compile) and written into
    ``self``, as torch would; the step goes on from it as a constant."""
    ctx = ctx_of(*args, *kwargs.values())
    out = base(LazyTensor(ctx.constant(self), ctx), *args, **kwargs)
    self.copy_(out.value())
    ctx.wrote = True  # (a step that wrote a concrete tensor cannot be traced again: see LazyFunction)
    return LazyTensor(ctx.constant(self), ctx)


for _n in INPLACE:
    lazy_op(_n + "_")(_inplace(_n))


@lazy_op("fill_", function=False)
def fill_(self, value):
    """``x.fill_(v)``: functionalised as ``full_like`` (the tensor then names it)."""
    if type(self) is not LazyTensor:
        return self.fill_(value.value() if isinstance(value, LazyTensor) else value)
    self.node = OPS["full_like"](self, value).node
    return self


@lazy_op("zero_", function=False)
def zero_(self):
    return fill_(self, 0)
