"""Movement ops: views and reshapes (a ``-1`` inferred symbolically), expand,
permutations, narrowing and splitting, repeat, cat/stack, pad."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engines.sizes import Expr

from ..symbolic import SymSize, as_expr, const, is_size
from ..tensor import LazyTensor, UntraceableOp
from .registry import ShapeError, ctx_for, lazy_op, record
from .rules import ONE, ZERO, assume_eq, broadcast, hint, norm_dim, numel, promote, shape_of, size_arg, size_list

T = torch.Tensor
MINUS_ONE = const(-1)


@lazy_op("unsqueeze", lowers=T.unsqueeze)
def unsqueeze(x, dim):
    node = x.node
    s = node.shape
    d = norm_dim(dim, len(s) + 1)
    return record(x.ctx, "unsqueeze", (x, dim), {}, s[:d] + (ONE,) + s[d:], node.dtype)


@lazy_op("squeeze", lowers=T.squeeze)
def squeeze(x, dim=None):
    ctx, s = x.ctx, x.node.shape
    dims = range(len(s)) if dim is None else [dim] if not isinstance(dim, (list, tuple)) else dim
    dims = {norm_dim(d, len(s)) for d in dims}
    keep = [e for i, e in enumerate(s) if not (i in dims and ctx.guard(e, "==", ONE, reason="squeeze"))]
    args = (x,) if dim is None else (x, dim)
    return record(ctx, "squeeze", args, {}, keep, x.dtype)


def _infer(ctx, sizes_, total: Expr, what: str) -> list:
    """Sizes with at most one -1, the -1 inferred as ``total // prod(others)``."""
    sizes_ = [as_expr(s) for s in sizes_]
    known = [s for s in sizes_ if s != -1]
    if len(known) < len(sizes_) - 1:
        raise ShapeError(f"{what}: more than one -1")
    if len(known) < len(sizes_):
        inferred = total // numel(known)
        sizes_ = [inferred if s == -1 else s for s in sizes_]
    if hint(ctx, numel(sizes_)) != hint(ctx, total):
        raise ShapeError(f"{what}: shape {[hint(ctx, s) for s in sizes_]} is invalid for {hint(ctx, total)} elements")
    return sizes_


def _view(name):
    keyword = "shape" if name == "reshape" else "size"  # (torch's names: ``x.reshape(shape=...)``, ``x.view(size=...)``)

    def impl(x, *size, **kwargs):
        if (len(size) == 1 and isinstance(size[0], torch.dtype)) or "dtype" in kwargs:
            raise UntraceableOp("lazy: view(dtype)")
        sizes_ = size_arg(size, kwargs, keyword)
        shape = _infer(x.ctx, sizes_, numel(x.node.shape), name)
        return record(x.ctx, name, (x, tuple(sizes_)), {}, shape, x.dtype)

    impl.__name__ = name
    return impl


view = lazy_op("view", lowers=T.view)(_view("view"))
reshape = lazy_op("reshape", lowers=T.reshape)(_view("reshape"))
# (torch's meta kernel for view_copy branches on a size equal to a literal of the shape: a formula per size)
view_copy = lazy_op("view_copy", method=False, lowers=torch.view_copy)(_view("view_copy"))


@lazy_op("view_as")
def view_as(x, other):
    return view(x, other.shape)


@lazy_op("reshape_as")
def reshape_as(x, other):
    return reshape(x, other.shape)


@lazy_op("flatten", lowers=T.flatten)
def flatten(x, start_dim=0, end_dim=-1):
    s = x.node.shape
    if not s:
        return reshape(x, (1,))
    a, b = norm_dim(start_dim, len(s)), norm_dim(end_dim, len(s))
    shape = s[:a] + (numel(s[a : b + 1]),) + s[b + 1 :]
    return record(x.ctx, "flatten", (x, start_dim, end_dim), {}, shape, x.dtype)


@lazy_op("unflatten", lowers=T.unflatten)
def unflatten(x, dim, sizes_):
    s = x.node.shape
    d = norm_dim(dim, len(s))
    new = _infer(x.ctx, size_list([sizes_]), s[d], "unflatten")
    return record(x.ctx, "unflatten", (x, dim, tuple(sizes_)), {}, s[:d] + tuple(new) + s[d + 1 :], x.dtype)


@lazy_op("expand", "broadcast_to", lowers=T.expand)
def expand(x, *size, implicit=False, **kwargs):
    ctx, s = x.ctx, x.node.shape
    sizes_ = [as_expr(e) for e in size_arg(size, kwargs, "size")]
    if len(sizes_) < len(s):
        raise ShapeError(f"expand: {len(sizes_)} sizes for a {len(s)}-d tensor")
    lead = len(sizes_) - len(s)
    out = list(sizes_[:lead])
    for e, t in zip(s, sizes_[lead:]):  # noqa: B905 (one size per dim by construction; ``strict=`` is a keyword call)
        if t is MINUS_ONE or t == MINUS_ONE:
            out.append(e)
        elif e is ONE or e in (t, ONE):
            out.append(t)
        elif hint(ctx, e) == hint(ctx, t):
            out.append(assume_eq(ctx, e, t, "expand"))
        elif hint(ctx, e) == 1 and ctx.guard(e, "==", ONE, reason="expand"):
            out.append(t)
        else:
            txt = ctx.vars.text
            raise ShapeError(f"expand: size {txt(e)} ({hint(ctx, e)}) cannot expand to {txt(t)} ({hint(ctx, t)})")
    return record(ctx, "expand", (x, tuple(sizes_)), {}, out, x.dtype)


@lazy_op("expand_as")
def expand_as(x, other):
    return expand(x, other.shape)


@lazy_op("permute", lowers=T.permute)
def permute(x, *dims, **kwargs):
    dims = [norm_dim(d, x.ndim) for d in size_arg(dims, kwargs, "dims")]
    if sorted(dims) != list(range(x.ndim)):
        raise ShapeError(f"permute: {dims} is not a permutation of {x.ndim} dims")
    return record(x.ctx, "permute", (x, tuple(dims)), {}, [x.node.shape[d] for d in dims], x.dtype)


@lazy_op("flip", lowers=torch.flip)
def flip(x, *dims, **kwargs):
    """``flip``: the dims as torch takes them, one int, ints (``x.flip(0, 1)``), a sequence or
    ``dims=``; recorded as a tuple, which is all ``torch.flip`` takes."""
    dims = tuple(norm_dim(d, x.ndim) for d in size_arg(dims, kwargs, "dims"))
    return record(x.ctx, "flip", (x, dims), {}, x.node.shape, x.dtype)


@lazy_op("transpose", "swapaxes", "swapdims", lowers=T.transpose)
def transpose(x, d0, d1):
    s = list(x.node.shape)
    a, b = norm_dim(d0, len(s)), norm_dim(d1, len(s))
    s[a], s[b] = s[b], s[a]
    return record(x.ctx, "transpose", (x, a, b), {}, s, x.dtype)


@lazy_op("t")
def t(x):
    return x if x.ndim < 2 else transpose(x, 0, 1)


@lazy_op("movedim", "moveaxis")
def movedim(x, source, destination):
    src = [norm_dim(d, x.ndim) for d in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [norm_dim(d, x.ndim) for d in (destination if isinstance(destination, (list, tuple)) else [destination])]
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=False)):
        order.insert(d, s)
    return permute(x, order)


def _as_strided_rt(x, size, stride, storage_offset=None):
    """``as_strided`` over ``x`` laid out contiguously: a lazy tensor has no layout, so its
    ``stride()`` is the contiguous one, whatever layout the compiled graph gives ``x``."""
    base = x.contiguous() if storage_offset is None else x.clone(memory_format=torch.contiguous_format)
    return base.as_strided(size, stride, storage_offset)


@lazy_op("as_strided", lowers=_as_strided_rt)
def as_strided(x, size, stride, storage_offset=None):
    """Longformer's overlapping chunks: ``x.as_strided(size, stride)`` with ``stride`` read off
    ``x.stride()`` (contiguous strides, symbolic). The generic rule ran the kernel on the graph's
    own layout of ``x``, which need not be the one ``stride()`` reported (wrong values)."""
    shape = [as_expr(e) for e in size]
    return record(x.ctx, "as_strided", (x, tuple(size), tuple(stride), storage_offset), {}, shape, x.dtype)


@lazy_op("narrow", lowers=T.narrow)
def narrow(x, dim, start, length):
    s = list(x.node.shape)
    d = norm_dim(dim, len(s))
    s[d] = as_expr(length)
    return record(x.ctx, "narrow", (x, d, start, length), {}, s, x.node.dtype)


@lazy_op("select", lowers=T.select)
def select(x, dim, index):
    s = list(x.node.shape)
    d = norm_dim(dim, len(s))
    del s[d]
    return record(x.ctx, "select", (x, d, index), {}, s, x.dtype)


@lazy_op("split")
def split(x, split_size, dim=0):
    ctx, d = x.ctx, norm_dim(dim, x.ndim)
    n = x.node.shape[d]
    if isinstance(split_size, (list, tuple)):
        lengths = [e if type(e) is Expr else as_expr(e) for e in split_size]
    else:
        size = as_expr(split_size)
        k = max(ctx.specialise((n + size - 1) // size, reason="split count"), 1)
        lengths = [size] * (k - 1) + [n - size * (k - 1)]
    shape, dt = x.node.shape, x.node.dtype
    head, tail = shape[:d], shape[d + 1 :]
    out, start, last = [], ZERO, len(lengths) - 1
    for i, ln in enumerate(lengths):  # narrow(x, d, start, ln), its shape rule inline
        out.append(record(ctx, "narrow", (x, d, start, ln), {}, head + (ln,) + tail, dt))
        if i < last:
            start = start + ln
    return tuple(out)


@lazy_op("chunk")
def chunk(x, chunks, dim=0):
    n = x.node.shape[norm_dim(dim, x.ndim)]
    return split(x, (n + chunks - 1) // chunks, dim)


@lazy_op("unbind")
def unbind(x, dim=0):
    d = norm_dim(dim, x.ndim)
    k = x.ctx.specialise(x.node.shape[d], reason="unbind")
    return tuple(select(x, d, i) for i in range(k))


@lazy_op("repeat", lowers=T.repeat)
def repeat(x, *sizes_, **kwargs):
    reps = [as_expr(e) for e in size_arg(sizes_, kwargs, "repeats")]
    s = (ONE,) * (len(reps) - x.ndim) + x.node.shape
    return record(x.ctx, "repeat", (x, tuple(reps)), {}, [a * b for a, b in zip(s, reps, strict=False)], x.dtype)


@lazy_op("cat", "concat", "concatenate", method=False, lowers=torch.cat)
def cat(tensors, dim=0):
    tensors = list(tensors)
    ctx = tensors[0].ctx if tensors and type(tensors[0]) is LazyTensor else ctx_for(tensors)
    if len(tensors) > 1 and any(_legacy_empty(t) for t in tensors):
        # torch skips a 1-d empty operand of any cat (a KV cache starts as ``torch.tensor([])``)
        kept = [t for t in tensors if not _legacy_empty(t)]
        tensors = kept or tensors[:1]
        if len(tensors) == 1:
            return tensors[0] if type(tensors[0]) is LazyTensor else LazyTensor(ctx.constant(tensors[0]), ctx)
    s0 = shape_of(tensors[0])
    d = norm_dim(dim, len(s0))
    out = list(s0)
    for t_ in tensors[1:]:
        s = shape_of(t_)
        if len(s) != len(s0):
            raise ShapeError("cat: tensors of different rank")
        for i in range(len(s)):
            out[i] = out[i] + s[i] if i == d else assume_eq(ctx, out[i], s[i], "cat")
    return record(ctx, "cat", (tensors, d), {}, out, promote(*tensors))


@lazy_op("_chunk_cat", method=False, lowers=torch._chunk_cat)
def chunk_cat(tensors, dim, num_chunks):
    """``torch._chunk_cat``: each tensor padded along ``dim`` to a multiple of ``num_chunks``, viewed
    as ``[*lead, num_chunks, -1]`` and concatenated along ``dim + 1`` (torch's decomposition);
    the last size ``sum(ceil(size[dim] / num_chunks) * prod(size[dim + 1:]))`` stays symbolic."""
    tensors = list(tensors)
    ctx = ctx_for(tensors)
    shapes = [shape_of(t) for t in tensors]
    if dim < 0 and len({len(s) for s in shapes}) > 1:
        raise ShapeError("_chunk_cat: a negative dim with tensors of different rank")
    d = norm_dim(dim, len(shapes[0]))
    k = as_expr(num_chunks)
    lead, last = list(shapes[0][:d]), ZERO
    for s in shapes:
        if len(s) <= d:
            raise ShapeError(f"_chunk_cat: dim {dim} past a {len(s)}-d tensor")
        lead = [assume_eq(ctx, a, b, "_chunk_cat") for a, b in zip(lead, s[:d], strict=True)]
        last = last + (s[d] + k - ONE) // k * numel(s[d + 1 :])
    return record(ctx, "_chunk_cat", (tensors, d, num_chunks), {}, [*lead, k, last], promote(*tensors))


def _legacy_empty(t) -> bool:
    s = shape_of(t)
    return len(s) == 1 and s[0].is_const and s[0].value == 0


@lazy_op("stack", method=False, lowers=torch.stack)
def stack(tensors, dim=0):
    tensors = list(tensors)
    ctx = tensors[0].ctx if tensors and type(tensors[0]) is LazyTensor else ctx_for(tensors)
    s0 = list(shape_of(tensors[0]))
    for t_ in tensors[1:]:
        s = shape_of(t_)
        if len(s) != len(s0):
            raise ShapeError(f"stack: tensors of rank {len(s0)} and {len(s)}")
        s0 = [a if a is b else assume_eq(ctx, a, b, "stack") for a, b in zip(s0, s)]  # noqa: B905 (ranks checked above)
    d = norm_dim(dim, len(s0) + 1)
    s0.insert(d, const(len(tensors)))
    return record(ctx, "stack", (tensors, d), {}, s0, promote(*tensors))


@lazy_op("pad", method=False, fnames=("pad",), lowers=F.pad)
def pad(x, pad, mode="constant", value=None):
    s = list(x.node.shape)
    for i in range(len(pad) // 2):
        d = len(s) - 1 - i
        s[d] = s[d] + as_expr(pad[2 * i]) + as_expr(pad[2 * i + 1])
    return record(x.ctx, "pad", (x, tuple(pad), mode, value), {}, s, x.dtype)


@lazy_op("unfold", function=False, lowers=T.unfold)
def unfold(x, dimension, size, step):
    """``Tensor.unfold``: the windows of ``size`` every ``step`` along ``dimension``, a new last
    dim of ``size``; the window count ``(n - size) // step + 1`` stays symbolic."""
    s = list(x.node.shape)
    d = norm_dim(dimension, len(s))
    if size < 1 or step < 1:
        raise ShapeError(f"unfold: size {size} and step {step} must be positive")
    s[d] = (s[d] - as_expr(size)) // as_expr(step) + 1
    return record(x.ctx, "unfold", (x, d, size, step), {}, [*s, as_expr(size)], x.dtype)


@lazy_op("repeat_interleave", lowers=torch.repeat_interleave)
def repeat_interleave(x, repeats, dim=None, *, output_size=None):
    """Each element ``repeats`` times along ``dim`` (flattened when ``None``); an int ``repeats``
    only: a tensor of counts makes the size data-dependent."""
    if not isinstance(repeats, int):
        raise UntraceableOp(
            "lazy: repeat_interleave with a tensor of repeats (a data-dependent size)", kind="data-dependent output"
        )
    s = list(x.node.shape)
    if dim is None:
        return record(x.ctx, "repeat_interleave", (x, repeats), {}, [numel(s) * as_expr(repeats)], x.dtype)
    d = norm_dim(dim, len(s))
    s[d] = s[d] * as_expr(repeats)
    return record(x.ctx, "repeat_interleave", (x, repeats, d), {}, s, x.dtype)


@lazy_op("lazy_broadcast_shapes", method=False)
def lazy_broadcast_shapes(*shapes):
    """``torch.broadcast_shapes`` of shapes holding symbolic sizes (reached through
    ``hooks.tracing()``): the broadcast rule of every other op here (:func:`.rules.broadcast`,
    a guard only where a size may be 1 or not), the result a tuple of sizes as ``x.shape`` is.
    torch's own (``torch._refs._broadcast_shapes``) asks ``guard_or_false`` of each comparison,
    which accepts torch's ``SymBool`` only."""
    shapes = tuple((s,) if not isinstance(s, (list, tuple)) else tuple(s) for s in shapes if s is not None)
    if not shapes:
        return ()
    ctx = ctx_for(shapes)
    for s in shapes:
        for d in s:
            if is_size(d) and as_expr(d).is_const and as_expr(d).value < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
    out = broadcast(ctx, *(tuple(as_expr(d) for d in s) for s in shapes))
    return tuple(SymSize.wrap(e, ctx) for e in out)
