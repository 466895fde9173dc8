"""Ops whose output size depends on values: ``nonzero`` and boolean-mask indexing.

The lazy path cannot predict such a size from shapes. It syncs the operand (a
graph of its own, compiled once per structure like any other), computes the
op on the value, and continues the trace from a new leaf whose data-dependent
axis is a fresh size *variable*, not a constant: the rest of the step keeps
one structure for every size, so it compiles once too. A step with such an
op costs one compile more per data-dependent split, constant over sizes.
Every compiler splits so: the StableHLO one (``to_stablehlo``) compiles the
graph before the split and the one after as two modules, the count a
host step between them. In bounded mode the new size variable is bounded
by the most elements the operand can hold (its variables at their bounds),
so a bounded compiler serves every count with one compile.

``x[mask]`` is recorded as ``x[mask.nonzero(as_tuple=True)]`` (torch's own
definition), so only ``nonzero`` materialises.
"""

from __future__ import annotations

import math

import torch

from engines.sizes.facts import bounds

from ..symbolic import SymSize, var_of
from ..tensor import OPS, LazyTensor
from .registry import lazy_op, record
from .rules import broadcast, numel, shape_of


def _leaf(ctx, value: torch.Tensor, dynamic: int, bound: int | None = None) -> LazyTensor:
    """A leaf over ``value`` whose axis ``dynamic`` is a fresh size variable (the others constant),
    shown as ``nnz<i>`` (the step's i-th such size: the same text every step, so a guard on it is
    reported once, not once per step under the leaf's process-wide name)."""
    step, i = getattr(ctx, "_datadep", (None, 0))
    i = i if step == ctx.vars.step else 0
    ctx._datadep = (ctx.vars.step, i + 1)
    out = ctx.input(value, dims={dynamic: None}, bounds=None if bound is None else {dynamic: bound})
    var = var_of(out.node.shape[dynamic])
    if var is not None:  # (static mode: every axis a constant, the count in the next graph's key)
        ctx.vars[var].name = f"nnz{i}"
    return out


def _most_elements(ctx, shape) -> int | None:
    """In bounded mode, the most elements a tensor of ``shape`` holds (every variable at its
    bound): the bound of a count taken over it; None when unbounded (or not bounded mode)."""
    if ctx.mode != "bounded":
        return None
    ranges = {sym: (0, v.bound) for sym, v in ctx.vars.vars.items()}
    hi = bounds(numel(shape), ranges)[1]
    return int(hi) if math.isfinite(hi) else None


def _nonzero_rt(x):  # (never lowered: the op materialises; registered for the coverage list)
    return torch.nonzero(x)


@lazy_op("nonzero", "argwhere", lowers={"nonzero": _nonzero_rt})
def nonzero(x, *, as_tuple=False):
    """``(count, ndim)`` int64 indices of the non-zero elements; ``count`` a size variable
    read from the synced operand (one more graph before this op, compiled once)."""
    ctx = x.ctx
    nz = torch.nonzero(x.value())
    out = _leaf(ctx, nz, 0, _most_elements(ctx, shape_of(x)))
    if not as_tuple:
        return out
    return tuple(record(ctx, "select", (out, 1, j), {}, out.node.shape[:1], torch.int64) for j in range(x.ndim))


def bool_index(x, idx: tuple) -> tuple:
    """``idx`` with each boolean-mask tensor replaced by its ``nonzero`` indices (torch's semantics:
    a k-d mask stands for k integer index tensors)."""
    out = []
    for it in idx:
        if (type(it) is LazyTensor or isinstance(it, torch.Tensor)) and it.dtype in (torch.bool, torch.uint8):
            if type(it) is not LazyTensor:
                it = LazyTensor(x.ctx.constant(it), x.ctx)
            out.extend(nonzero(it, as_tuple=True))
        else:
            out.append(it)
    return tuple(out)


@lazy_op("masked_select")
def masked_select(x, mask):
    """``x[mask]`` flattened, after broadcasting ``x`` and ``mask`` (torch's rule)."""
    ctx = x.ctx
    shape = [SymSize.wrap(e, ctx) for e in broadcast(ctx, shape_of(x), shape_of(mask))]
    if type(mask) is not LazyTensor:
        mask = LazyTensor(ctx.constant(mask), ctx)
    return OPS["__getitem__"](OPS["expand"](x, *shape), OPS["expand"](mask, *shape))
