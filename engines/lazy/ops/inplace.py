"""In-place ops (``x.add_(y)``, ``x += y``, ``x.index_add_(...)``), functionalised:
the out-of-place op is recorded and the tensor then names its result."""

from __future__ import annotations

from ..tensor import OPS
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
        out = base(self, *args, **kwargs)
        if out.dtype != self.dtype:
            out = to(out, self.dtype)
        if out.node.shape != self.node.shape:
            raise ShapeError(f"{name}_: result shape differs from the tensor's")
        self.node = out.node  # functionalised: the tensor now names the new value
        return self

    impl.__name__ = name + "_"
    return impl


for _n in INPLACE:
    lazy_op(_n + "_")(_inplace(_n))
