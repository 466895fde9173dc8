"""Shape and dtype rules shared by the op families.

A shape is a tuple of :class:`engines.sizes.Expr`. Where a rule must decide
something about sizes it cannot prove (broadcasting two different sizes,
slicing past an end), it decides on the current sizes and records a guard;
``ctx.sync`` checks every prediction against the real result.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator

import torch

from engines.sizes import Expr, evident_nonneg

from ..symbolic import SymSize, const
from ..tensor import LazyTensor, UntraceableOp
from .registry import ShapeError

ONE, ZERO = const(1), const(0)


# ---------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------
def shape_of(x) -> tuple:
    """Symbolic shape (tuple of Expr) of a lazy or concrete tensor."""
    if type(x) is LazyTensor or isinstance(x, LazyTensor):
        return x.node.shape
    return tuple(const(s) for s in x.shape)


def is_tensor(x) -> bool:
    return type(x) is LazyTensor or isinstance(x, (LazyTensor, torch.Tensor))


def norm_dim(d, ndim: int) -> int:
    if type(d) is int and -ndim <= d < ndim:  # an int in range (most dims)
        return d if d >= 0 else d + ndim
    d = operator.index(d)
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"dimension {d} out of range for a {ndim}-d tensor")
    return d % n


def size_list(args) -> list:
    """``*size`` or a single sequence of sizes -> list."""
    if len(args) == 1 and isinstance(args[0], (list, tuple, torch.Size)):
        args = args[0]
    return list(args)


def size_arg(args, kwargs, name: str) -> list:
    """The sizes (or dims) of an op torch takes as ``*sizes``, one sequence or the keyword
    ``name`` (``x.reshape(shape=...)``); any other keyword is a TypeError, as torch's."""
    if kwargs:
        if args or set(kwargs) != {name}:
            raise TypeError(f"unexpected arguments {args} {sorted(kwargs)} (sizes: *{name}, or {name}=)")
        args = (kwargs[name],)
    return size_list(args)


def numel(shape) -> Expr:
    return math.prod(shape, start=ONE)


def hint(ctx, e: Expr) -> int:
    """The value of ``e`` under the current sizes."""
    return ctx.vars.hint(e)


def assume_eq(ctx, a: Expr, b: Expr, what: str) -> Expr:
    """``a`` and ``b`` must be equal: guard on it (unless provable) and return one."""
    if a is b or a == b:
        return a
    if not ctx.guard(a, "==", b, reason=what):
        t = ctx.vars.text
        raise ShapeError(f"{what}: sizes {t(a)} ({hint(ctx, a)}) and {t(b)} ({hint(ctx, b)}) differ")
    return b if b.is_const else a


def _is_one(e: Expr) -> bool:
    t = e.terms
    return len(t) == 1 and not t[0][0] and t[0][1] == 1


def bcast_dim(ctx, a: Expr, b: Expr) -> Expr:
    if a is b or b is ONE or _is_one(b) or a == b:
        return a
    if _is_one(a):
        return b
    ha, hb = hint(ctx, a), hint(ctx, b)
    if ha == hb:
        return assume_eq(ctx, a, b, "broadcast")
    if ha == 1 and ctx.guard(a, "==", ONE, reason="broadcast"):
        return b
    if hb == 1 and ctx.guard(b, "==", ONE, reason="broadcast"):
        return a
    t = ctx.vars.text
    raise ShapeError(f"cannot broadcast sizes {t(a)} ({ha}) and {t(b)} ({hb})")


def broadcast(ctx, *shapes) -> tuple:
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]):  # two operands of one rank: most binary ops
        out = []
        # (a loop, not a comprehension: a comprehension is a call of its own; ``strict=`` a keyword call)
        for a, b in zip(*shapes):  # noqa: B905 (one rank)
            out.append(a if a is b else bcast_dim(ctx, a, b))
        return tuple(out)
    if not shapes:
        return ()
    n = max(map(len, shapes))
    first = shapes[0]
    out = [ONE] * (n - len(first)) + list(first)
    for s in shapes[1:]:
        off = n - len(s)
        for i, e in enumerate(s):
            o = out[off + i]
            if o is not e:  # most dims of most operands are the same size object
                out[off + i] = bcast_dim(ctx, o, e)
    return tuple(out)


def le(ctx, a: Expr, b: Expr) -> bool:
    """``a <= b``: decided by the constant difference, else by a guard."""
    d = b - a
    if d.is_const:
        return d.value >= 0
    if evident_nonneg(d):  # (``h <= h + (4 - h % 4) % 4``, a window's padding: at every size)
        return True
    return ctx.guard(a, "<=", b, reason="clamp")


def clamp(ctx, e: Expr, lo: Expr, hi: Expr) -> Expr:
    """``min(max(e, lo), hi)``, decided by guards where not constant."""
    if le(ctx, e, lo):
        return lo
    if evident_nonneg(hi - e):  # e <= hi at every size: ``hi <= e`` only where they are equal, so ``e``
        return e
    if le(ctx, hi, e):
        return hi
    return e


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------
def _sig(x):
    if isinstance(x, LazyTensor):
        return ("t", x.dtype, x.ndim > 0)
    if isinstance(x, torch.Tensor):
        return ("t", x.dtype, x.dim() > 0)
    if isinstance(x, (SymSize, Expr)):
        return ("s", int)
    t = type(x)
    if t in _SAMPLE:
        return ("s", t)
    for kind, as_ in _SCALARS:  # (numpy's scalars: ``np.float64`` is a float, ``np.int64`` an Integral)
        if isinstance(x, kind):
            return ("s", as_)
    raise UntraceableOp(f"lazy: a {t.__name__} operand (not a tensor nor a Python number)", kind="unsupported argument")


_SAMPLE = {bool: True, int: 1, float: 1.0, complex: 1j}
_SCALARS = ((bool, bool), (numbers.Integral, int), (numbers.Real, float), (numbers.Complex, complex))


@functools.cache
def _promote(sigs):
    vals = [torch.zeros((1,) if s[2] else (), dtype=s[1]) if s[0] == "t" else _SAMPLE[s[1]] for s in sigs]
    r = vals[0]
    for v in vals[1:]:
        if not isinstance(r, torch.Tensor) and not isinstance(v, torch.Tensor):
            r = r + v
            continue
        dt = torch.result_type(r, v)
        dimmed = any(isinstance(t, torch.Tensor) and t.dim() > 0 for t in (r, v))
        r = torch.zeros((1,) if dimmed else (), dtype=dt)
    return r.dtype if isinstance(r, torch.Tensor) else torch.tensor(r).dtype


def promote(*xs) -> torch.dtype:
    """torch's type promotion of tensors (lazy or concrete), sizes and scalars."""
    if len(xs) == 2:
        a, b = xs
        if type(a) is LazyTensor and type(b) is LazyTensor and a.node.dtype is b.node.dtype:
            return a.node.dtype  # one dtype: promotion keeps it
    return _promote(tuple([_sig(x) for x in xs]))


def float_of(dt: torch.dtype) -> torch.dtype:
    return dt if dt.is_floating_point or dt.is_complex else torch.get_default_dtype()


def int_sum_dtype(dt: torch.dtype) -> torch.dtype:
    return torch.int64 if (dt == torch.bool or not (dt.is_floating_point or dt.is_complex)) else dt
