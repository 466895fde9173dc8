"""Indexing: ``x[...]`` (slices with symbolic bounds, advanced indices),
``x[...] = v``, the ``index_*``/``scatter*``/``gather`` family, masked_fill,
embedding, one_hot."""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F

from engines.sizes import Expr, evident_nonneg

from ..symbolic import as_expr, is_size
from ..tensor import LazyTensor, UntraceableOp
from .datadep import bool_index
from .registry import ctx_for, lazy_op, record
from .rules import ONE, ZERO, broadcast, clamp, is_tensor, le, norm_dim, shape_of


def _slice_len(ctx, n: Expr, sl: slice) -> Expr:
    step = 1 if sl.step is None else operator.index(sl.step)
    if step <= 0:
        raise UntraceableOp("lazy: slice step must be positive (as in torch)")

    def bound(v, default):
        if v is None:
            return default
        e = as_expr(v)
        if e.is_const:
            if e.value < 0:
                e = n + e
        elif not evident_nonneg(e) and ctx.guard(e, "<", ZERO, reason="slice"):
            e = n + e  # (a symbolic bound below 0 counts from the end too: LED's ``x[:, :-padding]``)
        return clamp(ctx, e, ZERO, n)

    start, stop = bound(sl.start, ZERO), bound(sl.stop, n)
    if start == ZERO:  # both clamped into [0, n]: no guard needed
        length = stop
    else:
        length = ZERO if le(ctx, stop, start) else stop - start
    return length if step == 1 else (length + (step - 1)) // step


def _setitem_rt(x, idx, value):
    y = x.clone()
    y[idx] = value
    return y


_MASKS = (torch.bool, torch.uint8)  # index dtypes that select by a mask


@lazy_op("__getitem__", method=False, lowers={"getitem": operator.getitem})
def getitem(x, idx):
    if type(idx) is LazyTensor and idx.node.dtype not in _MASKS and x.node.shape:  # ``x[index]``: rows gathered
        return record(x.ctx, "getitem", (x, idx), {}, idx.node.shape + x.node.shape[1:], x.node.dtype)  # (message passing)
    ctx = x.ctx
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(is_tensor(it) and it.dtype in _MASKS for it in idx):
        idx = bool_index(x, idx)  # a data-dependent size: the mask's nonzero indices (see .datadep)
    for it in idx:
        if isinstance(it, (list,)):
            raise UntraceableOp("lazy: indexing with a Python list (use a tensor)")
    used = sum(1 for it in idx if it is not None and it is not Ellipsis)
    if any(it is Ellipsis for it in idx):
        i = next(i for i, it in enumerate(idx) if it is Ellipsis)
        idx = idx[:i] + (slice(None),) * (x.ndim - used) + idx[i + 1 :]
    else:
        idx = idx + (slice(None),) * (x.ndim - used)
    s, out, adv, d = x.node.shape, [], [], 0
    for it in idx:
        if it is None:
            out.append(ONE)
        elif isinstance(it, slice):
            out.append(_slice_len(ctx, s[d], it))
            d += 1
        elif is_tensor(it):
            adv.append((len(out), shape_of(it)))
            out.append(None)
            d += 1
        elif is_size(it):
            d += 1
        else:
            raise UntraceableOp(f"lazy: index of type {type(it).__name__}")
    if adv:
        bshape = broadcast(ctx, *(a[1] for a in adv))
        places = [p for p, _ in adv]
        at = places[0] if places == list(range(places[0], places[0] + len(places))) else 0
        rest = [e for e in out if e is not None]
        before = sum(1 for e in out[:at] if e is not None)
        out = rest[:before] + list(bshape) + rest[before:]
    rec = idx
    while len(rec) > 1 and _full_slice(rec[-1]):  # ``x[i, :]`` runs as ``x[i]``: torch's fast path for one index
        rec = rec[:-1]
    return record(ctx, "getitem", (x, rec[0] if len(rec) == 1 else rec), {}, out, x.node.dtype)


def _full_slice(it) -> bool:
    return type(it) is slice and it.start is None and it.stop is None and it.step is None


@lazy_op("__setitem__", method=False, lowers={"setitem": _setitem_rt})
def setitem(x, idx, value):
    getitem(x, idx)  # validates the index (and records its guards)
    x.node = record(x.ctx, "setitem", (x, idx, value), {}, x.node.shape, x.dtype).node


def _index_op(name, out_like_index=False):
    def impl(x, dim, index, *args, **kwargs):
        if type(x) is not LazyTensor:  # a plain tensor (a model's buffer) with a lazy index
            ctx = ctx_for(index, *args)
            x = LazyTensor(ctx.constant(x), ctx)
        d = norm_dim(dim, x.ndim)
        if out_like_index:  # gather
            shape = shape_of(index)
        elif name == "index_select":
            shape = x.node.shape[:d] + (shape_of(index)[0] if shape_of(index) else ONE,) + x.node.shape[d + 1 :]
        else:
            shape = x.node.shape
        return record(x.ctx, name, (x, d, index) + args, kwargs, shape, x.dtype)

    impl.__name__ = name
    return impl


for _n in ("index_add", "index_copy", "index_fill", "scatter", "scatter_add", "scatter_reduce", "index_select"):
    lazy_op(_n, lowers=getattr(torch.Tensor, _n))(_index_op(_n))
lazy_op("gather", lowers=torch.Tensor.gather)(_index_op("gather", out_like_index=True))


@lazy_op("masked_fill", lowers=torch.Tensor.masked_fill)
def masked_fill(x, mask, value):
    broadcast(x.ctx, x.node.shape, shape_of(mask))
    return record(x.ctx, "masked_fill", (x, mask, value), {}, x.node.shape, x.dtype)


@lazy_op("embedding", method=False, fnames=("embedding",), lowers=F.embedding)
def embedding(input, weight, *args, **kwargs):
    ctx = ctx_for(input, weight)
    return record(ctx, "embedding", (input, weight) + args, kwargs, shape_of(input) + shape_of(weight)[1:], weight.dtype)


@lazy_op("one_hot", method=False, fnames=("one_hot",), lowers=F.one_hot)
def one_hot(x, num_classes=-1):
    if as_expr(num_classes).is_const and as_expr(num_classes).value < 0:
        raise UntraceableOp("lazy: one_hot without num_classes has a data-dependent output size", kind="data-dependent output")
    return record(x.ctx, "one_hot", (x, num_classes), {}, x.node.shape + (as_expr(num_classes),), torch.int64)
