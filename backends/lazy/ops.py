"""The op table: symbolic shape and dtype rules, and each op's runtime callable.

Every op records one node whose ``args``/``kwargs`` are exactly what its
runtime callable (``LOWER[op]``) takes, with tensors as Nodes and sizes as
Exprs. The shape rule predicts the output's symbolic shape; where it must
decide something about sizes it cannot prove (broadcasting two different
sizes, slicing past an end), it decides on the current sizes and records a
guard. ``ctx.sync`` checks every prediction against the real result.
"""

from __future__ import annotations

import collections
import functools
import operator

import torch
import torch.nn.functional as F

from .ir import Node
from .symbolic import Expr, SymSize, as_expr, is_size
from .tensor import F_OPS, OPS, LazyTensor, Unsupported, ctx_of

LOWER: dict = {}  # op name -> runtime callable
ONE, ZERO = Expr.const(1), Expr.const(0)
MaxResult = collections.namedtuple("MaxResult", "values indices")


class ShapeError(RuntimeError):
    pass


# ---------------------------------------------------------------------------
# recording helpers
# ---------------------------------------------------------------------------
def lift(ctx, obj):
    """A nested op argument in IR form: lazy tensors -> Nodes, torch tensors ->
    constant leaves, sizes -> Exprs, ``torch.Size`` -> tuple."""
    if isinstance(obj, LazyTensor):
        return obj.node
    if isinstance(obj, torch.Tensor):
        return ctx.constant(obj)
    if isinstance(obj, SymSize):
        return obj.expr
    if isinstance(obj, (list, tuple)):
        t = [lift(ctx, o) for o in obj]
        return t if isinstance(obj, list) else tuple(t)
    if isinstance(obj, slice):
        return slice(lift(ctx, obj.start), lift(ctx, obj.stop), lift(ctx, obj.step))
    if isinstance(obj, dict):
        return {k: lift(ctx, v) for k, v in obj.items()}
    return obj


def record(ctx, op, args, kwargs, shape, dtype) -> LazyTensor:
    assert op in LOWER, op
    node = Node(op, lift(ctx, tuple(args)), lift(ctx, dict(kwargs)), tuple(as_expr(s) for s in shape), dtype)
    return LazyTensor(node, ctx)


def shape_of(x) -> tuple:
    """Symbolic shape (tuple of Expr) of a lazy or concrete tensor."""
    if isinstance(x, LazyTensor):
        return x.node.shape
    return tuple(Expr.const(s) for s in x.shape)


def is_tensor(x) -> bool:
    return isinstance(x, (LazyTensor, torch.Tensor))


def norm_dim(d, ndim: int) -> int:
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


def numel(shape) -> Expr:
    n = ONE
    for e in shape:
        n = n.mul(e)
    return n


def assume_eq(ctx, a: Expr, b: Expr, what: str) -> Expr:
    """``a`` and ``b`` must be equal: guard on it (unless provable) and return one."""
    if a == b:
        return a
    if not ctx.guard(a, "==", b, reason=what):
        raise ShapeError(f"{what}: sizes {a} ({a.eval()}) and {b} ({b.eval()}) differ")
    return b if b.is_const else a


def bcast_dim(ctx, a: Expr, b: Expr) -> Expr:
    if a == b or (b.is_const and b.value == 1):
        return a
    if a.is_const and a.value == 1:
        return b
    ha, hb = a.eval(), b.eval()
    if ha == hb:
        return assume_eq(ctx, a, b, "broadcast")
    if ha == 1 and ctx.guard(a, "==", ONE, reason="broadcast"):
        return b
    if hb == 1 and ctx.guard(b, "==", ONE, reason="broadcast"):
        return a
    raise ShapeError(f"cannot broadcast sizes {a} ({ha}) and {b} ({hb})")


def broadcast(ctx, *shapes) -> tuple:
    n = max((len(s) for s in shapes), default=0)
    out = [ONE] * n
    for s in shapes:
        for i, e in enumerate(s):
            j = n - len(s) + i
            out[j] = bcast_dim(ctx, out[j], e)
    return tuple(out)


def clamp(ctx, e: Expr, lo: Expr, hi: Expr) -> Expr:
    """``min(max(e, lo), hi)``, decided by guards where not constant."""
    if _le(ctx, e, lo):
        return lo
    if _le(ctx, hi, e):
        return hi
    return e


def _le(ctx, a: Expr, b: Expr) -> bool:
    d = b.sub(a)
    if d.is_const:
        return d.value >= 0
    return ctx.guard(a, "<=", b, reason="clamp")


# ---------------------------------------------------------------------------
# dtype rules
# ---------------------------------------------------------------------------
def _sig(x):
    if isinstance(x, LazyTensor):
        return ("t", x.dtype, x.ndim > 0)
    if isinstance(x, torch.Tensor):
        return ("t", x.dtype, x.dim() > 0)
    if isinstance(x, (SymSize, Expr)):
        return ("s", int)
    return ("s", type(x))


_SAMPLE = {bool: True, int: 1, float: 1.0, complex: 1j}


@functools.lru_cache(maxsize=None)
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
    return _promote(tuple(_sig(x) for x in xs))


def float_of(dt: torch.dtype) -> torch.dtype:
    return dt if dt.is_floating_point or dt.is_complex else torch.get_default_dtype()


def int_sum_dtype(dt: torch.dtype) -> torch.dtype:
    return torch.int64 if (dt == torch.bool or not (dt.is_floating_point or dt.is_complex)) else dt


# ---------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------
def op(*names, target=None, methods=True, fnames=()):
    """Register an implementation under torch/method ``names`` (and F ``fnames``)."""

    def deco(fn):
        for n in names:
            OPS[n] = fn
            if methods and not hasattr(LazyTensor, n):
                setattr(LazyTensor, n, fn)
        for n in fnames:
            F_OPS[n] = fn
        return fn

    return deco


def lower(name, target):
    LOWER[name] = target


def _ctx(*args):
    ctx = ctx_of(*args)
    if ctx is None:
        raise TypeError("no lazy tensor among the operands")
    return ctx


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------
PYOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
         "floor_divide": operator.floordiv, "remainder": operator.mod, "pow": operator.pow,
         "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
         "ge": operator.ge, "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor")
BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
          "atan2", "bitwise_and", "bitwise_or", "bitwise_xor") + COMPARE


def _binary(name):
    def impl(a, b, **kwargs):
        ctx = _ctx(a, b)
        shape = broadcast(ctx, *(shape_of(x) for x in (a, b) if is_tensor(x)))
        if name in COMPARE:
            dt = torch.bool
        else:
            dt = promote(a, b)
            if name == "div" and kwargs.get("rounding_mode") is None:
                dt = float_of(dt)
        if not is_tensor(a):  # reflected: ``2 - x`` runs as operator.sub(2, x)
            if kwargs:
                raise Unsupported(f"lazy: {name} with a scalar first operand and {kwargs}")
            return record(ctx, "py_" + name, (a, b), {}, shape, dt)
        return record(ctx, name, (a, b), kwargs, shape, dt)

    impl.__name__ = name
    return impl


for _n in BINARY:
    lower(_n, getattr(torch, _n))
    if _n in PYOPS:
        lower("py_" + _n, PYOPS[_n])
    op(_n)(_binary(_n))
OPS["true_divide"] = OPS["divide"] = LazyTensor.true_divide = LazyTensor.divide = OPS["div"]
OPS["subtract"] = LazyTensor.subtract = OPS["sub"]
OPS["multiply"] = LazyTensor.multiply = OPS["mul"]
OPS["greater"], OPS["less"] = OPS["gt"], OPS["lt"]

for _dunder, _name in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                       ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"),
                       ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
    _impl = OPS[_name]
    setattr(LazyTensor, f"__{_dunder}__", lambda a, b, _f=_impl: _f(a, b))
    setattr(LazyTensor, f"__r{_dunder}__", lambda a, b, _f=_impl: _f(b, a))
    OPS[f"__{_dunder}__"] = _impl
for _dunder in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(LazyTensor, f"__{_dunder}__", lambda a, b, _f=OPS[_dunder]: _f(a, b))
    OPS[f"__{_dunder}__"] = OPS[_dunder]


@op("where")
def where(cond, a=None, b=None):
    if a is None:
        raise Unsupported("lazy: torch.where(cond) has a data-dependent output size")
    ctx = _ctx(cond, a, b)
    shape = broadcast(ctx, *(shape_of(x) for x in (cond, a, b) if is_tensor(x)))
    return record(ctx, "where", (cond, a, b), {}, shape, promote(*(x for x in (a, b))))


lower("where", torch.where)

# unary: name -> (runtime target, dtype rule)
_SAME, _FLOAT, _BOOL = "same", "float", "bool"
UNARY = {
    **{n: (getattr(torch, n), _SAME) for n in ("neg", "abs", "relu", "sign", "floor", "ceil", "round", "trunc",
                                              "square", "clone", "logical_not", "bitwise_not")},
    **{n: (getattr(torch, n), _FLOAT) for n in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
                                               "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                                               "cosh", "tanh", "sigmoid", "erf", "erfc", "reciprocal")},
    **{n: (getattr(torch, n), _BOOL) for n in ("isnan", "isinf", "isfinite")},
    **{n: (getattr(F, n), _FLOAT) for n in ("gelu", "silu", "softplus", "elu", "leaky_relu", "relu6",
                                           "hardtanh", "mish", "logsigmoid", "selu", "celu", "softsign")},
    "contiguous": (torch.Tensor.contiguous, _SAME), "detach": (torch.Tensor.detach, _SAME),
    "nan_to_num": (torch.nan_to_num, _SAME),
    "clamp": (torch.clamp, _SAME), "clip": (torch.clip, _SAME),
    "clamp_min": (torch.clamp_min, _SAME), "clamp_max": (torch.clamp_max, _SAME),
    "tril": (torch.tril, _SAME), "triu": (torch.triu, _SAME), "flip": (torch.flip, _SAME),
    "roll": (torch.roll, _SAME), "cumsum": (torch.cumsum, "sum"), "cumprod": (torch.cumprod, "sum"),
    "layer_norm": (F.layer_norm, _SAME), "normalize": (F.normalize, _SAME),
    "dropout": (F.dropout, _SAME),
}
_UNARY_F = ("relu", "gelu", "silu", "softplus", "elu", "leaky_relu", "relu6", "hardtanh", "mish", "logsigmoid",
            "selu", "celu", "softsign", "sigmoid", "tanh", "softmax", "log_softmax", "layer_norm", "normalize",
            "dropout")


def _unary(name, rule, opname=None):
    def impl(x, *args, **kwargs):
        ctx = _ctx(x)
        if name == "dropout" and (kwargs.get("training", args[1] if len(args) > 1 else True)):
            if kwargs.get("p", args[0] if args else 0.5) != 0:
                raise Unsupported("lazy: dropout in training mode is random")
        dt = x.dtype
        if rule == _FLOAT:
            dt = float_of(dt)
        elif rule == _BOOL:
            dt = torch.bool
        elif rule == "sum":
            given = kwargs.get("dtype", args[1] if len(args) > 1 else None)
            dt = given if isinstance(given, torch.dtype) else int_sum_dtype(dt)
        elif name.startswith("clamp") or name == "clip":
            dt = promote(x, *[a for a in list(args) + list(kwargs.values()) if a is not None])
        return record(ctx, opname or name, (x,) + args, kwargs, x.node.shape, dt)

    impl.__name__ = name
    return impl


for _n, (_t, _r) in UNARY.items():
    lower(_n, _t)
    op(_n)(_unary(_n, _r))
    if _n in _UNARY_F:  # F.relu(x, inplace=False) etc. run as F.<name>
        lower("F." + _n, getattr(F, _n))
        F_OPS[_n] = _unary(_n, _r, "F." + _n)


def _softmax(name):
    def impl(x, dim=None, _stacklevel=3, dtype=None):
        if dim is None:
            raise Unsupported(f"lazy: {name} without dim")
        kwargs = {} if dtype is None else {"dtype": dtype}
        return record(x.ctx, name, (x, dim), kwargs, x.node.shape, dtype or x.dtype)

    impl.__name__ = name
    return impl


for _n in ("softmax", "log_softmax"):
    lower(_n, getattr(torch, _n))
    op(_n, fnames=(_n,))(_softmax(_n))


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


# ---------------------------------------------------------------------------
# dtype conversion
# ---------------------------------------------------------------------------
@op("to", "type")
def to(x, *args, **kwargs):
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (str, torch.device)) and str(a) != "cpu" and not str(a).startswith("cpu"):
            raise Unsupported(f"lazy: .to({a!r}): only the CPU device runs the lazy path")
        elif is_tensor(a):
            dtype = a.dtype
    if dtype is None:
        if any(str(a).startswith("cpu") for a in list(args) + [kwargs.get("device")] if a is not None):
            return x.value()  # .to("cpu") transfers: materialises
        return x
    if dtype == x.dtype:
        return x
    return record(_ctx(x), "to", (x, dtype), {}, x.node.shape, dtype)


lower("to", torch.Tensor.to)
for _n, _dt in [("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
                ("bfloat16", torch.bfloat16), ("long", torch.int64), ("int", torch.int32), ("bool", torch.bool)]:
    setattr(LazyTensor, _n, lambda x, _d=_dt: to(x, _d))
OPS["type_as"] = LazyTensor.type_as = lambda x, other: to(x, other.dtype)


# ---------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------
def _reduce_shape(x, dim, keepdim):
    shape = x.node.shape
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = set(range(len(shape)))
    else:
        dims = {norm_dim(d, len(shape)) for d in (dim if isinstance(dim, (list, tuple)) else (dim,))}
    return tuple(ONE if i in dims else e for i, e in enumerate(shape) if keepdim or i not in dims)


REDUCE = {"sum": "sum", "prod": "sum", "nansum": "sum", "mean": "same", "nanmean": "same", "amax": "same",
          "amin": "same", "logsumexp": "same", "std": "same", "var": "same", "norm": "same",
          "argmax": torch.int64, "argmin": torch.int64, "all": torch.bool, "any": torch.bool,
          "count_nonzero": torch.int64}
_REDUCE_DIMARG = {"norm": 1}  # norm(x, p, dim, keepdim)


def _reduce(name, rule):
    def impl(x, *args, **kwargs):
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
        return record(_ctx(x), name, (x,) + args, kwargs, shape, dt)

    impl.__name__ = name
    return impl


for _n, _r in REDUCE.items():
    lower(_n, getattr(torch, _n))
    op(_n)(_reduce(_n, _r))


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


op("max")(_minmax("max"))
op("min")(_minmax("min"))


# ---------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------
def _method(name):
    lower(name, getattr(torch.Tensor, name))
    return name


@op("unsqueeze")
def unsqueeze(x, dim):
    s = list(x.node.shape)
    s.insert(norm_dim(dim, len(s) + 1), ONE)
    return record(x.ctx, _method("unsqueeze"), (x, dim), {}, s, x.dtype)


@op("squeeze")
def squeeze(x, dim=None):
    ctx, s = x.ctx, x.node.shape
    dims = range(len(s)) if dim is None else [dim] if not isinstance(dim, (list, tuple)) else dim
    dims = {norm_dim(d, len(s)) for d in dims}
    keep = [e for i, e in enumerate(s) if not (i in dims and ctx.guard(e, "==", ONE, reason="squeeze"))]
    args = (x,) if dim is None else (x, dim)
    return record(ctx, _method("squeeze"), args, {}, keep, x.dtype)


def _infer(ctx, sizes, total: Expr, what: str) -> list:
    """Sizes with at most one -1, the -1 inferred as ``total // prod(others)``."""
    sizes = [as_expr(s) for s in sizes]
    known = [s for s in sizes if not (s.is_const and s.value == -1)]
    if len(known) < len(sizes) - 1:
        raise ShapeError(f"{what}: more than one -1")
    prod = numel(known)
    if len(known) < len(sizes):
        inferred = total.floordiv(prod)
        sizes = [inferred if (s.is_const and s.value == -1) else s for s in sizes]
    if numel(sizes).eval() != total.eval():
        raise ShapeError(f"{what}: shape {[s.eval() for s in sizes]} is invalid for {total.eval()} elements")
    return sizes


def _view(name):
    def impl(x, *size):
        if len(size) == 1 and isinstance(size[0], torch.dtype):
            raise Unsupported("lazy: view(dtype)")
        sizes = size_list(size)
        shape = _infer(x.ctx, sizes, numel(x.node.shape), name)
        return record(x.ctx, _method(name), (x, tuple(sizes)), {}, shape, x.dtype)

    impl.__name__ = name
    return impl


op("view")(_view("view"))
op("reshape")(_view("reshape"))
OPS["view_as"] = LazyTensor.view_as = lambda x, other: OPS["view"](x, other.shape)
OPS["reshape_as"] = LazyTensor.reshape_as = lambda x, other: OPS["reshape"](x, other.shape)


@op("flatten")
def flatten(x, start_dim=0, end_dim=-1):
    s = x.node.shape
    if not s:
        return OPS["reshape"](x, (1,))
    a, b = norm_dim(start_dim, len(s)), norm_dim(end_dim, len(s))
    shape = s[:a] + (numel(s[a:b + 1]),) + s[b + 1:]
    return record(x.ctx, _method("flatten"), (x, start_dim, end_dim), {}, shape, x.dtype)


@op("unflatten")
def unflatten(x, dim, sizes):
    s = x.node.shape
    d = norm_dim(dim, len(s))
    new = _infer(x.ctx, size_list([sizes]), s[d], "unflatten")
    return record(x.ctx, _method("unflatten"), (x, dim, tuple(sizes)), {}, s[:d] + tuple(new) + s[d + 1:], x.dtype)


@op("expand", "broadcast_to")
def expand(x, *size):
    ctx, s = x.ctx, x.node.shape
    sizes = [as_expr(e) for e in size_list(size)]
    if len(sizes) < len(s):
        raise ShapeError(f"expand: {len(sizes)} sizes for a {len(s)}-d tensor")
    lead = len(sizes) - len(s)
    out = list(sizes[:lead])
    for e, t in zip(s, sizes[lead:]):
        if t.is_const and t.value == -1:
            out.append(e)
        elif e == t or (e.is_const and e.value == 1):
            out.append(t)
        elif e.eval() == t.eval():
            out.append(assume_eq(ctx, e, t, "expand"))
        elif e.eval() == 1 and ctx.guard(e, "==", ONE, reason="expand"):
            out.append(t)
        else:
            raise ShapeError(f"expand: size {e} ({e.eval()}) cannot expand to {t} ({t.eval()})")
    return record(ctx, _method("expand"), (x, tuple(sizes)), {}, out, x.dtype)


OPS["expand_as"] = LazyTensor.expand_as = lambda x, other: expand(x, other.shape)


@op("permute")
def permute(x, *dims):
    dims = [norm_dim(d, x.ndim) for d in size_list(dims)]
    if sorted(dims) != list(range(x.ndim)):
        raise ShapeError(f"permute: {dims} is not a permutation of {x.ndim} dims")
    return record(x.ctx, _method("permute"), (x, tuple(dims)), {}, [x.node.shape[d] for d in dims], x.dtype)


@op("transpose", "swapaxes", "swapdims")
def transpose(x, d0, d1):
    s = list(x.node.shape)
    a, b = norm_dim(d0, len(s)), norm_dim(d1, len(s))
    s[a], s[b] = s[b], s[a]
    return record(x.ctx, _method("transpose"), (x, a, b), {}, s, x.dtype)


@op("t")
def t(x):
    return x if x.ndim < 2 else transpose(x, 0, 1)


@op("movedim", "moveaxis")
def movedim(x, source, destination):
    src = [norm_dim(d, x.ndim) for d in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [norm_dim(d, x.ndim) for d in (destination if isinstance(destination, (list, tuple)) else [destination])]
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, order)


LazyTensor.T = property(lambda x: permute(x, list(range(x.ndim))[::-1]))
LazyTensor.mT = property(lambda x: transpose(x, -2, -1))


@op("narrow")
def narrow(x, dim, start, length):
    s = list(x.node.shape)
    d = norm_dim(dim, len(s))
    s[d] = as_expr(length)
    return record(x.ctx, _method("narrow"), (x, d, start, length), {}, s, x.dtype)


@op("select")
def select(x, dim, index):
    s = list(x.node.shape)
    d = norm_dim(dim, len(s))
    del s[d]
    return record(x.ctx, _method("select"), (x, d, index), {}, s, x.dtype)


@op("split")
def split(x, split_size, dim=0):
    ctx, d = x.ctx, norm_dim(dim, x.ndim)
    n = x.node.shape[d]
    if isinstance(split_size, (list, tuple)):
        lengths = [as_expr(e) for e in split_size]
    else:
        size = as_expr(split_size)
        k = max(ctx.specialise(n.add(size).sub(ONE).floordiv(size), reason="split count"), 1)
        lengths = [size] * (k - 1) + [n.sub(size.mul(Expr.const(k - 1)))]
    out, start = [], ZERO
    for ln in lengths:
        out.append(narrow(x, d, start, ln))
        start = start.add(ln)
    return tuple(out)


@op("chunk")
def chunk(x, chunks, dim=0):
    n = x.node.shape[norm_dim(dim, x.ndim)]
    c = Expr.const(chunks)
    return split(x, n.add(c).sub(ONE).floordiv(c), dim)


@op("unbind")
def unbind(x, dim=0):
    d = norm_dim(dim, x.ndim)
    k = x.ctx.specialise(x.node.shape[d], reason="unbind")
    return tuple(select(x, d, i) for i in range(k))


@op("repeat")
def repeat(x, *sizes):
    reps = [as_expr(e) for e in size_list(sizes)]
    s = (ONE,) * (len(reps) - x.ndim) + x.node.shape
    return record(x.ctx, _method("repeat"), (x, tuple(reps)), {}, [a.mul(b) for a, b in zip(s, reps)], x.dtype)


@op("cat", "concat", "concatenate", methods=False)
def cat(tensors, dim=0):
    ctx = _ctx(tensors)
    tensors = list(tensors)
    s0 = shape_of(tensors[0])
    d = norm_dim(dim, len(s0))
    out = list(s0)
    for t_ in tensors[1:]:
        s = shape_of(t_)
        if len(s) != len(s0):
            raise ShapeError("cat: tensors of different rank")
        for i in range(len(s)):
            out[i] = out[i].add(s[i]) if i == d else assume_eq(ctx, out[i], s[i], "cat")
    return record(ctx, "cat", (tensors, d), {}, out, promote(*tensors))


@op("stack", methods=False)
def stack(tensors, dim=0):
    ctx = _ctx(tensors)
    tensors = list(tensors)
    s0 = list(shape_of(tensors[0]))
    for t_ in tensors[1:]:
        s0 = [assume_eq(ctx, a, b, "stack") for a, b in zip(s0, shape_of(t_))]
    d = norm_dim(dim, len(s0) + 1)
    s0.insert(d, Expr.const(len(tensors)))
    return record(ctx, "stack", (tensors, d), {}, s0, promote(*tensors))


lower("cat", torch.cat)
lower("stack", torch.stack)


@op("pad", methods=False, fnames=("pad",))
def pad(x, pad, mode="constant", value=None):
    s = list(x.node.shape)
    for i in range(len(pad) // 2):
        d = len(s) - 1 - i
        s[d] = s[d].add(as_expr(pad[2 * i])).add(as_expr(pad[2 * i + 1]))
    return record(x.ctx, "pad", (x, tuple(pad), mode, value), {}, s, x.dtype)


lower("pad", F.pad)


# ---------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------
def _slice_len(ctx, n: Expr, sl: slice) -> Expr:
    step = 1 if sl.step is None else operator.index(sl.step)
    if step <= 0:
        raise Unsupported("lazy: slice step must be positive (as in torch)")

    def bound(v, default):
        if v is None:
            return default
        e = as_expr(v)
        if e.is_const and e.value < 0:
            e = n.add(e)
        return clamp(ctx, e, ZERO, n)

    start, stop = bound(sl.start, ZERO), bound(sl.stop, n)
    if start == ZERO:  # both clamped into [0, n]: no guard needed
        length = stop
    else:
        length = ZERO if _le(ctx, stop, start) else stop.sub(start)
    return length if step == 1 else length.add(Expr.const(step - 1)).floordiv(Expr.const(step))


@op("__getitem__")
def getitem(x, idx):
    ctx = x.ctx
    idx = idx if isinstance(idx, tuple) else (idx,)
    for it in idx:
        if is_tensor(it) and it.dtype == torch.bool:
            raise Unsupported("lazy: boolean-mask indexing has a data-dependent output size")
        if isinstance(it, (list,)):
            raise Unsupported("lazy: indexing with a Python list (use a tensor)")
    used = sum(1 for it in idx if it is not None and it is not Ellipsis)
    if any(it is Ellipsis for it in idx):
        i = next(i for i, it in enumerate(idx) if it is Ellipsis)
        idx = idx[:i] + (slice(None),) * (x.ndim - used) + idx[i + 1:]
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
            raise Unsupported(f"lazy: index of type {type(it).__name__}")
    if adv:
        bshape = broadcast(ctx, *(a[1] for a in adv))
        places = [p for p, _ in adv]
        at = places[0] if places == list(range(places[0], places[0] + len(places))) else 0
        rest = [e for e in out if e is not None]
        before = sum(1 for e in out[:at] if e is not None)
        out = rest[:before] + list(bshape) + rest[before:]
    return record(ctx, "getitem", (x, idx), {}, out, x.dtype)


def _setitem_rt(x, idx, value):
    y = x.clone()
    y[idx] = value
    return y


@op("__setitem__")
def setitem(x, idx, value):
    getitem(x, idx)  # validates the index (and records its guards)
    x.node = record(x.ctx, "setitem", (x, idx, value), {}, x.node.shape, x.dtype).node


lower("getitem", operator.getitem)
lower("setitem", _setitem_rt)


def _index_op(name, out_like_index=False):
    def impl(x, dim, index, *args, **kwargs):
        d = norm_dim(dim, x.ndim)
        if out_like_index:  # gather
            shape = shape_of(index)
        elif name == "index_select":
            shape = x.node.shape[:d] + (shape_of(index)[0] if shape_of(index) else ONE,) + x.node.shape[d + 1:]
        else:
            shape = x.node.shape
        return record(x.ctx, _method(name), (x, d, index) + args, kwargs, shape, x.dtype)

    impl.__name__ = name
    return impl


for _n in ("index_add", "index_copy", "index_fill", "scatter", "scatter_add", "scatter_reduce", "index_select"):
    op(_n)(_index_op(_n))
op("gather")(_index_op("gather", out_like_index=True))


@op("masked_fill")
def masked_fill(x, mask, value):
    broadcast(x.ctx, x.node.shape, shape_of(mask))
    return record(x.ctx, _method("masked_fill"), (x, mask, value), {}, x.node.shape, x.dtype)


@op("embedding", methods=False, fnames=("embedding",))
def embedding(input, weight, *args, **kwargs):
    ctx = _ctx(input, weight)
    return record(ctx, "embedding", (input, weight) + args, kwargs, shape_of(input) + shape_of(weight)[1:],
                  weight.dtype)


@op("one_hot", methods=False, fnames=("one_hot",))
def one_hot(x, num_classes=-1):
    if as_expr(num_classes).is_const and as_expr(num_classes).value < 0:
        raise Unsupported("lazy: one_hot without num_classes has a data-dependent output size")
    return record(x.ctx, "one_hot", (x, num_classes), {}, x.node.shape + (as_expr(num_classes),), torch.int64)


lower("embedding", F.embedding)
lower("one_hot", F.one_hot)

for _n in ("add", "sub", "mul", "div", "clamp", "clamp_min", "clamp_max", "index_add", "index_copy",
           "index_fill", "scatter", "scatter_add", "scatter_reduce", "masked_fill", "relu", "sigmoid",
           "tanh", "exp", "neg", "abs", "pow", "sqrt", "floor_divide", "remainder", "fmod", "log"):
    setattr(LazyTensor, _n + "_", _inplace(_n))
    OPS[_n + "_"] = getattr(LazyTensor, _n + "_")
for _d, _n in [("iadd", "add"), ("isub", "sub"), ("imul", "mul"), ("itruediv", "div")]:
    setattr(LazyTensor, f"__{_d}__", _inplace(_n))


# ---------------------------------------------------------------------------
# contractions
# ---------------------------------------------------------------------------
@op("matmul", "__matmul__")
def matmul(a, b):
    ctx = _ctx(a, b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ShapeError("matmul: 0-d operand")
    va, vb = len(sa) == 1, len(sb) == 1
    sa = (ONE,) + sa if va else sa
    sb = sb + (ONE,) if vb else sb
    assume_eq(ctx, sa[-1], sb[-2], "matmul")
    out = list(broadcast(ctx, sa[:-2], sb[:-2])) + [sa[-2], sb[-1]]
    if vb:
        out.pop(-1)
    if va:
        out.pop(-2 if not vb else -1)
    return record(ctx, "matmul", (a, b), {}, out, promote(a, b))


LazyTensor.__rmatmul__ = lambda a, b: matmul(b, a)


@op("mm", "bmm")
def mm(a, b):
    return matmul(a, b)


@op("linear", methods=False, fnames=("linear",))
def linear(x, weight, bias=None):
    ctx = _ctx(x, weight, bias)
    sx, sw = shape_of(x), shape_of(weight)
    assume_eq(ctx, sx[-1], sw[-1], "linear")
    out = sx[:-1] + (sw[0],) if len(sw) == 2 else sx[:-1]
    if bias is not None:
        out = broadcast(ctx, out, shape_of(bias))
    return record(ctx, "linear", (x, weight, bias), {}, out, promote(x, weight))


@op("einsum", methods=False)
def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ctx = _ctx(operands)
    eq = equation.replace(" ", "")
    if "." in eq:
        raise Unsupported("lazy: einsum with '...'")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not _:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes: dict = {}
    for term, x in zip(terms, operands):
        for c, e in zip(term, shape_of(x)):
            sizes[c] = bcast_dim(ctx, sizes[c], e) if c in sizes else e
    return record(ctx, "einsum", (equation,) + tuple(operands), {}, [sizes[c] for c in rhs], promote(*operands))


lower("matmul", torch.matmul)
lower("linear", F.linear)
lower("einsum", torch.einsum)


# ---------------------------------------------------------------------------
# creation (sizes may be symbolic)
# ---------------------------------------------------------------------------
_DROP = ("device", "layout", "pin_memory", "requires_grad", "memory_format", "generator")


def _create(name, default_fill=None):
    def impl(*size, fill_value=None, dtype=None, _ctx_=None, **kwargs):
        for k in _DROP:
            kwargs.pop(k, None)
        if kwargs:
            raise Unsupported(f"lazy: {name} with {sorted(kwargs)}")
        if name == "full":
            (size, fill_value) = (size[0], size[1]) if len(size) == 2 else (size[0], fill_value)
            size = (size,)
        sizes = [as_expr(s) for s in size_list(size)]
        ctx = _ctx_ or _ctx(size)
        if dtype is None:
            fv = fill_value if name == "full" else default_fill
            dtype = torch.bool if isinstance(fv, bool) else torch.int64 if isinstance(fv, int) and name == "full" \
                else torch.get_default_dtype()
        args = (tuple(sizes), fill_value) if name == "full" else (tuple(sizes),)
        return record(ctx, name, args, {"dtype": dtype}, sizes, dtype)

    impl.__name__ = name
    return impl


CREATE = {"zeros": 0.0, "ones": 1.0, "empty": 0.0, "full": None}
for _n, _fill in CREATE.items():
    lower(_n, getattr(torch, _n))
    OPS["lazy_" + _n] = _create(_n, _fill)


def _like(name):
    base = name[:-5]

    def impl(x, *args, dtype=None, **kwargs):
        for k in _DROP:
            kwargs.pop(k, None)
        dtype = dtype or x.dtype
        fill = (args[0] if args else kwargs.pop("fill_value")) if base == "full" else None
        if base == "full":
            return record(x.ctx, "full", (x.node.shape, fill), {"dtype": dtype}, x.node.shape, dtype)
        return record(x.ctx, base, (x.node.shape,), {"dtype": dtype}, x.node.shape, dtype)

    return impl


for _n in ("zeros_like", "ones_like", "empty_like", "full_like"):
    op(_n, methods=False)(_like(_n))


def _new(name):
    base = name[4:]

    def impl(x, *args, dtype=None, **kwargs):
        for k in _DROP:
            kwargs.pop(k, None)
        if base == "full":
            return OPS["lazy_full"](args[0], args[1] if len(args) > 1 else kwargs["fill_value"], dtype=dtype or x.dtype,
                                    _ctx_=x.ctx)
        sizes = size_list(args)
        ctx = x.ctx
        sizes = [as_expr(s) for s in sizes]
        dt = dtype or x.dtype
        return record(ctx, base, (tuple(sizes),), {"dtype": dt}, sizes, dt)

    return impl


for _n in ("new_zeros", "new_ones", "new_empty", "new_full"):
    op(_n)(_new(_n))


def lazy_arange(*args, dtype=None, **kwargs):
    for k in _DROP:
        kwargs.pop(k, None)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    start, end, step = kwargs.pop("start", start), kwargs.pop("end", end), kwargs.pop("step", step)
    ctx = _ctx(start, end, step)
    if not all(is_size(v) for v in (start, end, step)):
        raise Unsupported("lazy: arange with float bounds and symbolic sizes")
    st = as_expr(step)
    if not (st.is_const and st.value > 0):
        raise Unsupported("lazy: arange with a non-constant or negative step")
    span = clamp(ctx, as_expr(end).sub(as_expr(start)), ZERO, as_expr(end).sub(as_expr(start)))
    n = span if st.value == 1 else span.add(Expr.const(st.value - 1)).floordiv(st)
    dt = dtype or torch.int64
    return record(ctx, "arange", (start, end, step), {"dtype": dt}, (n,), dt)


OPS["lazy_arange"] = lazy_arange
lower("arange", torch.arange)


def lazy_eye(n, m=None, dtype=None, **kwargs):
    ctx = _ctx(n, m)
    m = n if m is None else m
    dt = dtype or torch.get_default_dtype()
    return record(ctx, "eye", (n, m), {"dtype": dt}, (as_expr(n), as_expr(m)), dt)


OPS["lazy_eye"] = lazy_eye
lower("eye", torch.eye)

# functions that only need the tensor's metadata (answered without recording)
OPS["numel"] = LazyTensor.numel
OPS["size"] = LazyTensor.size
OPS["dim"] = LazyTensor.dim
OPS["is_floating_point"] = LazyTensor.is_floating_point


def _materialising(name, fn):
    def impl(*args, **kwargs):
        vals = [a.value() if isinstance(a, LazyTensor) else a for a in args]
        return fn(*vals, **kwargs)

    impl.__name__ = name
    return impl


for _n in ("equal", "allclose"):
    OPS[_n] = _materialising(_n, getattr(torch, _n))
    setattr(LazyTensor, _n, OPS[_n])
op("isclose")(lambda a, b, rtol=1e-5, atol=1e-8, equal_nan=False: le(
    abs(OPS["sub"](a, b)), OPS["add"](OPS["mul"](abs(b), rtol), atol)))


def le(a, b):
    return OPS["le"](a, b)


LazyTensor.__neg__ = lambda x: OPS["neg"](x)
LazyTensor.__abs__ = lambda x: OPS["abs"](x)
LazyTensor.__invert__ = lambda x: OPS["bitwise_not"](x)
LazyTensor.__pos__ = lambda x: x
OPS["__neg__"], OPS["__abs__"] = OPS["neg"], OPS["abs"]

