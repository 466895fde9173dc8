"""Elementwise ops: arithmetic and comparisons (with Python-scalar operands),
unary math and activations, ``where``, softmax, dtype conversion, closeness."""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F

from ..tensor import LazyTensor, UntraceableOp
from .registry import ctx_for, lazy_op, record
from .rules import ONE, assume_eq, broadcast, float_of, int_sum_dtype, is_tensor, numel, promote, shape_of

# Python's operator for each binary op: ``2 - x`` records ``py_sub(2, x)``
PYOPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor")
# op -> its other torch names
BINARY = {
    "add": (),
    "sub": ("subtract",),
    "mul": ("multiply",),
    "div": ("true_divide", "divide"),
    "floor_divide": (),
    "remainder": (),
    "fmod": (),
    "pow": (),
    "maximum": (),
    "minimum": (),
    "atan2": (),
    "bitwise_and": (),
    "bitwise_or": (),
    "bitwise_xor": (),
    "gt": ("greater",),
    "lt": ("less",),
    **{n: () for n in COMPARE if n not in ("gt", "lt")},
}


_COMPARE = frozenset(COMPARE)
_SCALARS = frozenset({int, float, bool})
_SCALAR_PROMOTE: dict = {}  # (tensor dtype, scalar type, tensor has dims) -> the result dtype


_FLOAT_BINARY = frozenset({"div", "atan2"})  # (a float result from integer operands: true division, angles)


def _binary(name):
    compare = name in _COMPARE
    true_div = name in _FLOAT_BINARY

    def impl(a, b, **kwargs):
        if type(a) is LazyTensor and type(b) is LazyTensor and a.node.dtype is b.node.dtype:
            # the common case: two lazy tensors of one dtype (promotion keeps it)
            ctx = a.ctx
            sa, sb = a.node.shape, b.node.shape
            shape = sa if sa is sb else broadcast(ctx, sa, sb)
            dt = torch.bool if compare else a.node.dtype
            if true_div and kwargs.get("rounding_mode") is None:
                dt = float_of(dt)
            return record(ctx, name, (a, b), kwargs, shape, dt)
        if type(a) is LazyTensor and type(b) in _SCALARS:  # ``x * 2``: a's shape, a dtype by (dtype, scalar type)
            n = a.node
            k = (n.dtype, type(b), len(n.shape) > 0)
            dt = _SCALAR_PROMOTE.get(k)
            if dt is None:
                dt = _SCALAR_PROMOTE[k] = promote(a, b)
            if compare:
                dt = torch.bool
            elif true_div and kwargs.get("rounding_mode") is None:
                dt = float_of(dt)
            return record(a.ctx, name, (a, b), kwargs, n.shape, dt)
        ctx = ctx_for(a, b)
        shape = broadcast(ctx, *(shape_of(x) for x in (a, b) if is_tensor(x)))
        if name in COMPARE:
            dt = torch.bool
        else:
            dt = promote(a, b)
            if true_div and kwargs.get("rounding_mode") is None:
                dt = float_of(dt)
        if not is_tensor(a):  # reflected: ``2 - x`` runs as operator.sub(2, x)
            if kwargs:
                raise UntraceableOp(f"lazy: {name} with a scalar first operand and {kwargs}")
            return record(ctx, "py_" + name, (a, b), {}, shape, dt)
        return record(ctx, name, (a, b), kwargs, shape, dt)

    impl.__name__ = name
    return impl


for _n, _aliases in BINARY.items():
    _lowers = {_n: getattr(torch, _n), **({"py_" + _n: PYOPS[_n]} if _n in PYOPS else {})}
    lazy_op(_n, *_aliases, lowers=_lowers)(_binary(_n))


@lazy_op("where", method=False, lowers=torch.where)
def where(cond, a=None, b=None):
    if a is None:
        raise UntraceableOp("lazy: torch.where(cond) has a data-dependent output size", kind="data-dependent output")
    ctx = ctx_for(cond, a, b)
    shape = broadcast(ctx, *(shape_of(x) for x in (cond, a, b) if is_tensor(x)))
    return record(ctx, "where", (cond, a, b), {}, shape, promote(*(x for x in (a, b))))


@lazy_op("where", function=False)
def where_method(self, condition, y):
    """``x.where(cond, y)``: ``torch.where(cond, x, y)`` (LED's ``full_like(...).where(mask, x)``)."""
    return where(condition, self, y)


# unary: name -> (runtime target, dtype rule)
_SAME, _FLOAT, _BOOL = "same", "float", "bool"
#: the activations of ``torch.nn.functional`` (float results), traced as ``F.<name>``
_ACTIVATIONS = (
    "gelu",
    "silu",
    "softplus",
    "elu",
    "leaky_relu",
    "relu6",
    "hardtanh",
    "mish",
    "logsigmoid",
    "selu",
    "celu",
    "softsign",
    "hardswish",
    "hardsigmoid",
)
UNARY = {
    **{
        n: (getattr(torch, n), _SAME)
        for n in (
            "neg",
            "abs",
            "relu",
            "sign",
            "floor",
            "ceil",
            "round",
            "trunc",
            "clone",
            "bitwise_not",
        )
    },
    **{
        n: (getattr(torch, n), _FLOAT)
        for n in (
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sqrt",
            "rsqrt",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "sigmoid",
            "erf",
            "erfc",
            "reciprocal",
        )
    },
    **{n: (getattr(torch, n), _BOOL) for n in ("isnan", "isinf", "isfinite", "logical_not")},
    "square": (torch.square, "square"),
    **{n: (getattr(F, n), _FLOAT) for n in _ACTIVATIONS},
    "contiguous": (torch.Tensor.contiguous, _SAME),
    "detach": (torch.Tensor.detach, _SAME),
    "nan_to_num": (torch.nan_to_num, _SAME),
    "clamp": (torch.clamp, _SAME),
    "clip": (torch.clip, _SAME),
    "clamp_min": (torch.clamp_min, _SAME),
    "clamp_max": (torch.clamp_max, _SAME),
    "tril": (torch.tril, _SAME),
    "triu": (torch.triu, _SAME),
    "roll": (torch.roll, _SAME),
    "cumsum": (torch.cumsum, "sum"),
    "cumprod": (torch.cumprod, "sum"),
    "layer_norm": (F.layer_norm, _SAME),
    "normalize": (F.normalize, _SAME),
    "dropout": (F.dropout, _SAME),
}
# those torch.nn.functional also has: ``F.relu(x, inplace=False)`` records ``F.relu``
_UNARY_F = (
    "relu",
    *_ACTIVATIONS,
    "sigmoid",
    "tanh",
    "layer_norm",
    "normalize",
    "dropout",
)


_BOUNDS = frozenset({"clamp", "clip", "clamp_min", "clamp_max"})  # (their bounds broadcast with the input)


def _unary(name, rule, opname=None):
    def impl(x, *args, **kwargs):
        ctx = ctx_for(x)
        if name == "dropout" and (kwargs.get("training", args[1] if len(args) > 1 else True)):
            if kwargs.get("p", args[0] if args else 0.5) != 0:
                raise UntraceableOp("lazy: dropout in training mode is random", kind="random")
        dt = x.dtype
        if rule == _FLOAT:
            dt = float_of(dt)
        elif rule == _BOOL:
            dt = torch.bool
        elif rule == "square":  # (x * x: a bool squares to int64)
            dt = torch.int64 if dt == torch.bool else dt
        elif rule == "sum":
            given = kwargs.get("dtype", args[1] if len(args) > 1 else None)
            dt = given if isinstance(given, torch.dtype) else int_sum_dtype(dt)
        shape = x.node.shape
        if name in _BOUNDS:  # the bounds may be tensors: broadcast with them
            bounds = [a for a in list(args) + list(kwargs.values()) if a is not None]
            dt = promote(x, *bounds)
            tensors = [shape_of(a) for a in bounds if is_tensor(a)]
            if tensors:
                shape = broadcast(ctx, shape, *tensors)
        return record(ctx, opname or name, (x,) + args, kwargs, shape, dt)

    impl.__name__ = name
    return impl


for _n, (_t, _r) in UNARY.items():
    lazy_op(_n, lowers=_t)(_unary(_n, _r))
    if _n in _UNARY_F:
        lazy_op(fnames=(_n,), lowers={"F." + _n: getattr(F, _n)})(_unary(_n, _r, "F." + _n))


def _softmax(name):
    def impl(x, dim=None, _stacklevel=3, dtype=None):
        if dim is None:
            raise UntraceableOp(f"lazy: {name} without dim")
        kwargs = {} if dtype is None else {"dtype": dtype}
        return record(x.ctx, name, (x, dim), kwargs, x.node.shape, dtype or x.dtype)

    impl.__name__ = name
    return impl


for _n in ("softmax", "log_softmax"):
    lazy_op(_n, fnames=(_n,), lowers=getattr(torch, _n))(_softmax(_n))


# ---------------------------------------------------------------------------
# dtype conversion
# ---------------------------------------------------------------------------
@lazy_op("to", "type", lowers=torch.Tensor.to)
def to(x, *args, **kwargs):
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (str, torch.device)) and str(a) != "cpu" and not str(a).startswith("cpu"):
            raise UntraceableOp(f"lazy: .to({a!r}): only the CPU device runs the lazy path")
        elif is_tensor(a):
            dtype = a.dtype
    if dtype is None:
        # ``x.to(y.device)``: a lazy tensor is on the CPU (its ``device``), so as in torch the move is a
        # no-op; it stays lazy (model code moves to the device its inputs are on, mid-trace). ``cpu()``
        # is the call that materialises.
        return x
    if dtype == x.dtype:
        return x
    return record(ctx_for(x), "to", (x, dtype), {}, x.node.shape, dtype)


def _cast(dtype):
    def cast(x, memory_format=torch.preserve_format):  # (a memory format changes strides, not values)
        return to(x, dtype)

    return cast


for _n, _dt in [
    ("float", torch.float32),
    ("double", torch.float64),
    ("half", torch.float16),
    ("bfloat16", torch.bfloat16),
    ("long", torch.int64),
    ("int", torch.int32),
    ("bool", torch.bool),
]:
    lazy_op(_n, function=False)(_cast(_dt))


@lazy_op("type_as")
def type_as(x, other):
    return to(x, other.dtype)


# ---------------------------------------------------------------------------
# closeness
# ---------------------------------------------------------------------------
def _materialising(name, fn):
    def impl(*args, **kwargs):
        vals = [a.value() if isinstance(a, LazyTensor) else a for a in args]
        return fn(*vals, **kwargs)

    impl.__name__ = name
    return impl


for _n in ("equal", "allclose"):
    lazy_op(_n)(_materialising(_n, getattr(torch, _n)))


@lazy_op("isclose")
def isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    return abs(a - b) <= abs(b) * rtol + atol


# ---------------------------------------------------------------------------
# shape-preserving activations and norms that torch spells outside the tables above:
# builtins of ``torch._C._nn`` (reached by name), Python functions of
# ``torch.nn.functional`` (reached as ``F_OPS``), and torch functions with parameters
# ---------------------------------------------------------------------------
def _same_shape(op, dtype_rule=_FLOAT):
    def impl(x, *args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if is_tensor(a)]
        dt = float_of(x.dtype) if dtype_rule == _FLOAT else promote(x, *tensors)
        return record(ctx_for(x, *tensors), op, (x, *args), kwargs, x.node.shape, dt)

    impl.__name__ = op
    return impl


# builtins: F.logsigmoid is torch._C._nn.log_sigmoid, F.softshrink torch._C._nn.softshrink
for _n in ("log_sigmoid", "softshrink"):
    lazy_op(_n, method=False, lowers=getattr(torch._C._nn, _n))(_same_shape(_n))
lazy_op("hardshrink", lowers=torch.hardshrink)(_same_shape("hardshrink"))
_prelu = _same_shape("prelu", "promote")


@lazy_op("prelu", lowers=torch.prelu)
def prelu(x, weight):
    """One slope, or one per channel (dim 1; a 0-d or 1-d input has one channel): then the
    channels equal the slopes (a guard)."""
    ctx = ctx_for(x, weight)
    n = numel(shape_of(weight))
    if not (n.is_const and n.value == 1):
        sx = shape_of(x)
        assume_eq(ctx, sx[1] if len(sx) >= 2 else ONE, n, "prelu (one slope per channel)")
    return _prelu(x, weight)


lazy_op("rms_norm", method=False, lowers=torch.rms_norm)(_same_shape("rms_norm", "promote"))
# Python functions of torch.nn.functional (their own has_torch_function dispatch)
for _n in ("tanhshrink", "rms_norm"):
    lazy_op(fnames=(_n,), lowers={"F." + _n: getattr(F, _n)})(_same_shape("F." + _n, "promote"))
