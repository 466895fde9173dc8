"""Order and difference ops: ``topk``, ``sort``/``argsort`` (two outputs: one IR node each,
as ``max`` records ``amax`` and ``argmax``) and ``diff`` (composed of ``narrow`` and ``sub``).
Sizes stay symbolic: ``topk``'s ``k`` may be a size, ``diff`` shortens its dim by ``n``."""

from __future__ import annotations

import collections

import torch

from ..symbolic import SymSize, as_expr
from ..tensor import OPS, LazyTensor
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import le, norm_dim

TopkResult = collections.namedtuple("topk", ["values", "indices"])
SortResult = collections.namedtuple("sort", ["values", "indices"])


def _topk_values(x, k, dim, largest, sorted_):
    return torch.topk(x, k, dim, largest, sorted_).values


def _topk_indices(x, k, dim, largest, sorted_):
    return torch.topk(x, k, dim, largest, sorted_).indices


@lazy_op("topk", lowers={"topk_values": _topk_values, "topk_indices": _topk_indices})
def topk(x, k, dim=-1, largest=True, sorted=True):
    """``(values, indices)`` of the ``k`` largest (smallest) along ``dim``; ``k <= size`` is a
    guard when either is symbolic (torch refuses a larger ``k``)."""
    ctx = x.ctx
    d = norm_dim(dim, x.ndim)
    ke, n = as_expr(k), x.node.shape[d] if x.ndim else as_expr(1)
    if not le(ctx, ke, n):
        raise ShapeError(f"topk: k ({ctx.vars.text(ke)}) is past the size of dim {d} ({ctx.vars.text(n)})")
    shape = x.node.shape[:d] + (ke,) + x.node.shape[d + 1 :] if x.ndim else ()
    args = (x, ke, d, bool(largest), bool(sorted))
    return TopkResult(
        record(ctx, "topk_values", args, {}, shape, x.dtype), record(ctx, "topk_indices", args, {}, shape, torch.int64)
    )


def _sort_values(x, dim, descending, stable):
    return torch.sort(x, dim=dim, descending=descending, stable=stable).values


def _sort_indices(x, dim, descending, stable):
    return torch.sort(x, dim=dim, descending=descending, stable=stable).indices


@lazy_op("sort", lowers={"sort_values": _sort_values, "sort_indices": _sort_indices})
def sort(x, dim=-1, descending=False, stable=False):
    """``(values, indices)`` sorted along ``dim`` (shape-preserving)."""
    d = norm_dim(dim, max(x.ndim, 1)) if x.ndim else 0
    args = (x, d, bool(descending), bool(stable))
    return SortResult(
        record(x.ctx, "sort_values", args, {}, x.node.shape, x.dtype),
        record(x.ctx, "sort_indices", args, {}, x.node.shape, torch.int64),
    )


@lazy_op("argsort")
def argsort(x, dim=-1, descending=False, stable=False):
    """The indices of :func:`sort`."""
    return sort(x, dim, descending, stable).indices


@lazy_op("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first), as torch:
    ``x[1:] - x[:-1]`` ``n`` times; a bool tensor differs by ``!=``."""
    ctx = ctx_for(input, prepend, append)
    x = input if type(input) is LazyTensor else LazyTensor(ctx.constant(input), ctx)
    if x.ndim == 0:
        raise ShapeError("diff: expects input to be at least one-dimensional")
    d = norm_dim(dim, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = OPS["cat"](parts, d)
    for _ in range(int(n)):
        m = SymSize.wrap(x.node.shape[d], ctx) - 1
        a, b = OPS["narrow"](x, d, 1, m), OPS["narrow"](x, d, 0, m)
        x = OPS["ne"](a, b) if x.dtype == torch.bool else OPS["sub"](a, b)
    return x
