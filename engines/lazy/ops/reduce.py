"""Reductions (``sum``, ``mean``, ``amax``, ``argmax``, ``norm``, ...) and
``max``/``min`` in their three forms (whole tensor, along a dim, binary)."""

from __future__ import annotations

import collections

import torch

from ..tensor import OPS, LazyTensor
from .registry import ctx_for, lazy_op, record
from .rules import ONE, int_sum_dtype, is_tensor, norm_dim

MaxResult = collections.namedtuple("MaxResult", "values indices")


def _reduce_shape(x, dim, keepdim):
    shape = x.node.shape
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = set(range(len(shape)))
    else:
        dims = {norm_dim(d, len(shape)) for d in (dim if isinstance(dim, (list, tuple)) else (dim,))}
    return tuple(ONE if i in dims else e for i, e in enumerate(shape) if keepdim or i not in dims)


_SUM_DTYPES: dict = {}


def _sum_dtype(dt):
    r = _SUM_DTYPES.get(dt)
    if r is None:
        r = _SUM_DTYPES[dt] = int_sum_dtype(dt)
    return r


# name -> dtype rule: "sum" (ints widen to int64), "same", or a fixed dtype
REDUCE = {
    "sum": "sum",
    "prod": "sum",
    "nansum": "sum",
    "mean": "same",
    "nanmean": "same",
    "amax": "same",
    "amin": "same",
    "logsumexp": "same",
    "std": "same",
    "var": "same",
    "norm": "same",
    "argmax": torch.int64,
    "argmin": torch.int64,
    "all": torch.bool,
    "any": torch.bool,
    "count_nonzero": torch.int64,
}
_REDUCE_DIMARG = {"norm": 1}  # norm(x, p, dim, keepdim)


def _reduce(name, rule):
    fixed = rule if isinstance(rule, torch.dtype) else None
    dim_first = name not in _REDUCE_DIMARG and name not in ("std", "var")

    def impl(x, *args, **kwargs):
        if dim_first and not kwargs and len(args) == 1 and type(args[0]) is int and type(x) is LazyTensor:
            shape = x.node.shape  # ``x.sum(d)``: the common form
            d = norm_dim(args[0], len(shape))
            dt = fixed or (_sum_dtype(x.node.dtype) if rule == "sum" else x.node.dtype)
            return record(x.ctx, name, (x, args[0]), {}, shape[:d] + shape[d + 1 :], dt)
        pos = _REDUCE_DIMARG.get(name, 0)
        dim = kwargs.get("dim", args[pos] if len(args) > pos else None)
        keepdim = kwargs.get("keepdim", args[pos + 1] if len(args) > pos + 1 and isinstance(args[pos + 1], bool) else False)
        if name in ("std", "var") and isinstance(dim, bool):  # std(x, unbiased)
            dim = None
        shape = _reduce_shape(x, dim, keepdim)
        if isinstance(rule, torch.dtype):
            dt = rule
        else:
            dt = kwargs.get("dtype") or (int_sum_dtype(x.dtype) if rule == "sum" else x.dtype)
        return record(x.ctx if type(x) is LazyTensor else ctx_for(x), name, (x,) + args, kwargs, shape, dt)

    impl.__name__ = name
    return impl


for _n, _r in REDUCE.items():
    lazy_op(_n, lowers=getattr(torch, _n))(_reduce(_n, _r))


def _minmax(name):
    red, arg, binary = ("amax", "argmax", "maximum") if name == "max" else ("amin", "argmin", "minimum")

    def impl(x, dim=None, keepdim=False, **kwargs):
        if is_tensor(dim):
            return OPS[binary](x, dim)
        if dim is None:
            return OPS[red](x)
        return MaxResult(OPS[red](x, dim, keepdim), OPS[arg](x, dim, keepdim))

    impl.__name__ = name
    return impl


for _n in ("max", "min"):
    lazy_op(_n)(_minmax(_n))
