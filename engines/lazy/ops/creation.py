"""Creation ops whose sizes may be symbolic: ``torch.zeros(x.shape[0], 4)``
(reached through ``hooks.tracing()`` as ``lazy_zeros``), ``*_like``,
``new_*``, ``arange``, ``eye``, and ``linspace``/``logspace`` of ``steps`` a size."""

from __future__ import annotations

import math

import torch

from ..symbolic import as_expr, is_size, var_of
from ..tensor import OPS, UntraceableOp
from .registry import ctx_for, lazy_op, record
from .rules import ZERO, clamp, size_arg, size_list

_DROP = ("device", "layout", "pin_memory", "requires_grad", "memory_format", "generator")


def _create(name, default_fill=None):
    def impl(*size, fill_value=None, dtype=None, _ctx_=None, **kwargs):
        for k in _DROP:
            kwargs.pop(k, None)
        if "size" in kwargs:  # (``torch.zeros(size=(n, 4))``)
            size = (kwargs.pop("size"),) + size
        if kwargs:
            raise UntraceableOp(f"lazy: {name} with {sorted(kwargs)}")
        if name == "full":
            (size, fill_value) = (size[0], size[1]) if len(size) == 2 else (size[0], fill_value)
            size = (size,)
        sizes_ = [as_expr(s) for s in size_list(size)]
        ctx = _ctx_ or ctx_for(size)
        if dtype is None:
            fv = fill_value if name == "full" else default_fill
            dtype = (
                torch.bool
                if isinstance(fv, bool)
                else torch.int64
                if isinstance(fv, int) and name == "full"
                else torch.get_default_dtype()
            )
        args = (tuple(sizes_), fill_value) if name == "full" else (tuple(sizes_),)
        return record(ctx, name, args, {"dtype": dtype}, sizes_, dtype)

    impl.__name__ = name
    return impl


CREATE = {"zeros": 0.0, "ones": 1.0, "empty": 0.0, "full": None}
for _n, _fill in CREATE.items():
    lazy_op("lazy_" + _n, method=False, lowers={_n: getattr(torch, _n)})(_create(_n, _fill))


def _like(name):
    base = name[:-5]

    def impl(x, *args, dtype=None, **kwargs):
        for k in _DROP if kwargs else ():
            kwargs.pop(k, None)
        dtype = dtype or x.dtype
        fill = (args[0] if args else kwargs.pop("fill_value")) if base == "full" else None
        if base == "full":
            return record(x.ctx, "full", (x.node.shape, fill), {"dtype": dtype}, x.node.shape, dtype)
        return record(x.ctx, base, (x.node.shape,), {"dtype": dtype}, x.node.shape, dtype)

    impl.__name__ = name
    return impl


for _n in ("zeros_like", "ones_like", "empty_like", "full_like"):
    lazy_op(_n, method=False)(_like(_n))


def _new(name):
    base = name[4:]

    def impl(x, *args, dtype=None, **kwargs):
        for k in _DROP if kwargs else ():
            kwargs.pop(k, None)
        if "size" in kwargs:  # (LED, Longformer: ``mask.new_ones(size=mask.size())``)
            args = (kwargs.pop("size"),) + args
        if base == "full":
            return OPS["lazy_full"](
                args[0], args[1] if len(args) > 1 else kwargs["fill_value"], dtype=dtype or x.dtype, _ctx_=x.ctx
            )
        sizes_ = [as_expr(s) for s in size_arg(args, kwargs, "size")]
        dt = dtype or x.dtype
        return record(x.ctx, base, (tuple(sizes_),), {"dtype": dt}, sizes_, dt)

    impl.__name__ = name
    return impl


for _n in ("new_zeros", "new_ones", "new_empty", "new_full"):
    lazy_op(_n)(_new(_n))


@lazy_op("lazy_arange", method=False, lowers={"arange": torch.arange})
def lazy_arange(*args, dtype=None, **kwargs):
    for k in _DROP:
        kwargs.pop(k, None)
    if len(args) > 1:
        start, end, step = args[0], args[1], args[2] if len(args) > 2 else 1
    else:  # (``arange(n)``, ``arange(end=n)``, ``arange(start=0, end=n)``: TAPAS)
        start, end, step = 0, args[0] if args else None, 1
    start, end, step = kwargs.pop("start", start), kwargs.pop("end", end), kwargs.pop("step", step)
    ctx = ctx_for(start, end, step)
    if not (all(is_size(v) for v in (start, end, step)) and as_expr(step).is_const and as_expr(step).value > 0):
        n = _arange_len(ctx, start, end, step)  # (float bounds, a negative step: XLNet, EVA)
        dt = dtype or (torch.get_default_dtype() if any(type(v) is float for v in (start, end, step)) else torch.int64)
        return record(ctx, "arange", (start, end, step), {"dtype": dt}, (n,), dt)
    st = as_expr(step)
    span = as_expr(end) - as_expr(start)
    if not (as_expr(start) == ZERO and var_of(span) is not None):  # arange(n) of a size n: n >= 0, no guard
        span = clamp(ctx, span, ZERO, span)
    n = span if st.value == 1 else (span + (st.value - 1)) // st
    dt = dtype or torch.int64
    return record(ctx, "arange", (start, end, step), {"dtype": dt}, (n,), dt)


def _arange_len(ctx, start, end, step):
    """``ceil((end - start) / step)``, at least 0, for sizes and float constants as bounds and an
    integral constant step of either sign (``arange(0.5, n)``: ``n``; ``arange(n, -m, -1.0)``:
    ``n + m``): with ``hi - lo = M + g`` (``M`` the floors' difference, ``-1 < g < 1``) and
    ``k = |step|``, it is ``ceil(M / k)`` for ``g == 0``, else ``(M - (g < 0)) // k + 1``."""
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if type(step) is not int or step == 0 or not all(is_size(v) or type(v) is float for v in (start, end)):
        raise UntraceableOp("lazy: arange with a symbolic or fractional step, or non-number bounds")
    lo, hi, k = (start, end, step) if step > 0 else (end, start, -step)

    def split(v):  # (integer part as a size, fraction in [0, 1))
        return (as_expr(v), 0.0) if is_size(v) else (as_expr(math.floor(v)), v - math.floor(v))

    (h, fh), (low, fl) = split(hi), split(lo)
    m, g = h - low, fh - fl
    n = (m + (k - 1)) // k if g == 0 else (m - (1 if g < 0 else 0)) // k + 1
    return clamp(ctx, n, ZERO, n)


@lazy_op("lazy_eye", method=False, lowers={"eye": torch.eye})
def lazy_eye(n, m=None, dtype=None, **kwargs):
    ctx = ctx_for(n, m)
    m = n if m is None else m
    dt = dtype or torch.get_default_dtype()
    return record(ctx, "eye", (n, m), {"dtype": dt}, (as_expr(n), as_expr(m)), dt)


def _complex(v) -> bool:
    return isinstance(v, complex) or (isinstance(v, torch.Tensor) and v.dtype.is_complex)


def _spaced(name: str):
    def impl(start, end, steps, *args, dtype=None, **kwargs):
        for k in _DROP:
            kwargs.pop(k, None)
        base = (args[0] if args else kwargs.pop("base", 10.0),) if name == "logspace" else ()
        if kwargs or len(args) > len(base) or not is_size(steps):
            raise UntraceableOp(f"lazy: {name} with {sorted(kwargs) or 'these arguments'}")
        if _complex(start) or _complex(end):
            raise UntraceableOp(f"lazy: {name} of complex bounds")
        n = as_expr(steps)
        if n.is_const and n.value < 0:
            raise ValueError(f"{name}: number of steps must be non-negative")
        dt = dtype or torch.get_default_dtype()
        return record(ctx_for(start, end, steps), name, (start, end, steps, *base), {"dtype": dt}, (n,), dt)

    impl.__name__ = name
    impl.__doc__ = f"``torch.{name}``: ``steps`` points (a size: symbolic), its bounds scalars or 0-d tensors."
    return impl


# (reached with lazy 0-d bounds, the tensor overload: torch's meta kernel reads ``steps`` as an int,
# which bakes the first size into the shape)
lazy_linspace = lazy_op("linspace", method=False, lowers=torch.linspace)(_spaced("linspace"))
lazy_logspace = lazy_op("logspace", method=False, lowers=torch.logspace)(_spaced("logspace"))
