"""SymInt / SymFloat / SymBool nodes and torch.export's runtime assertions.

``sym_size`` is ``get_dimension_size``; size arithmetic, comparisons,
``sym_not``, shifts and powers are scalar ops on ``tensor<i32>`` (shape
arithmetic's dtype), SymFloats (``sym_float``, ``/``, ``sym_sqrt``) are
``tensor<f64>`` scalars (Python floats), and ``floor``/``ceil``/``round``/
``sym_int`` bring them back to ``i32``.

Runtime assertions (``_assert_scalar`` on a SymBool, ``sym_constrain_range``)
become jax's ``shape_assertion`` custom call: the xla executor evaluates it
during shape refinement for each concrete shape and fails with the message
(with the dims' values); the interpreter worker checks it the same way. An
assertion on tensor *data* (``_assert_async``) cannot be checked by these
executors, so it is a lowering error, never dropped.
"""

from __future__ import annotations

import builtins
import math
import operator

import torch

from engines import sizes

from ..builder import LoweringError, Value
from ..registry import lowers
from ..types import SHAPE_DTYPE

aten = torch.ops.aten

FLOAT = "f64"  # SymFloats are Python floats


def _cached(ctx, node):
    """The value already emitted for the node's size, if any (a constant for a static one)."""
    val = node.meta.get("val")
    if not isinstance(val, torch.SymInt):
        return None
    try:
        return ctx.sym.get(val)
    except sizes.SizeError:  # e.g. RoundToInt: not in the size algebra, emit the op instead
        return None


def _kind(x) -> str:
    """ "i1" (SymBool / bool), FLOAT (SymFloat / float) or SHAPE_DTYPE (SymInt / int)."""
    if isinstance(x, Value):
        return "i1" if x.dtype == "i1" else FLOAT if x.dtype.startswith(("f", "bf")) else SHAPE_DTYPE
    if isinstance(x, bool):
        return "i1"
    if isinstance(x, float):
        return FLOAT
    if isinstance(x, int):
        return SHAPE_DTYPE
    raise TypeError(f"symbolic arithmetic on {type(x).__name__} {x!r} is not supported")


def _common(*xs) -> str:
    kinds = {_kind(x) for x in xs}
    return FLOAT if FLOAT in kinds else SHAPE_DTYPE if SHAPE_DTYPE in kinds else "i1"


def _operand(ctx, x, dtype=SHAPE_DTYPE):
    if isinstance(x, Value):
        return ctx.convert(x, dtype) if not (dtype != "i1" and x.dtype == "i1") else ctx.op("stablehlo.convert", [x], ((), dtype))
    _kind(x)
    return ctx.constant(x, dtype)


def _arith(opname, float_ok=True):
    def fn(ctx, node, a, b):
        c = _cached(ctx, node)
        if c is not None:
            return c
        dt = _common(a, b)
        if dt == "i1":
            dt = SHAPE_DTYPE
        if dt == FLOAT and not float_ok:
            raise TypeError(f"{opname} of symbolic floats is not supported")
        return ctx.binary(opname, _operand(ctx, a, dt), _operand(ctx, b, dt))

    return fn


lowers(operator.add)(_arith("stablehlo.add"))
lowers(operator.sub)(_arith("stablehlo.subtract"))
lowers(operator.mul)(_arith("stablehlo.multiply"))
lowers(torch.sym_max)(_arith("stablehlo.maximum"))
lowers(torch.sym_min)(_arith("stablehlo.minimum"))


def _size_of(ctx, node):
    """The node's value as a size of the algebra (``ctx.dim``), or ``None`` where it is
    no SymInt or the algebra has no form for it."""
    val = node.meta.get("val")
    if isinstance(val, torch.SymInt):
        try:
            return ctx.dim(val)
        except sizes.SizeError:
            pass
    return None


def _shift(opname):
    """``<<`` / ``>>`` of sizes: the node's size in the algebra where it has one
    (``n << 1`` is ``2*n``, ``n >> 2`` is ``n // 4``: ops shape refinement folds;
    it cannot fold the shift ops, so a module slicing by ``n >> 1`` had "dynamic
    shapes" at every concrete shape); else the shift op."""
    arith = _arith(opname, float_ok=False)

    def fn(ctx, node, a, b):
        size = _size_of(ctx, node)
        if size is not None:
            return size
        return arith(ctx, node, a, b)

    return fn


lowers(operator.lshift)(_shift("stablehlo.shift_left"))
lowers(operator.rshift)(_shift("stablehlo.shift_right_arithmetic"))


@lowers(operator.pow, builtins.pow)
def _pow(ctx, node, a, b):
    c = _cached(ctx, node)
    if c is not None:
        return c
    dt = FLOAT if isinstance(node.meta.get("val"), torch.SymFloat) else _common(a, b)
    return ctx.binary("stablehlo.power", _operand(ctx, a, dt), _operand(ctx, b, dt))


@lowers(operator.truediv)
def _truediv(ctx, node, a, b):
    return ctx.binary("stablehlo.divide", _operand(ctx, a, FLOAT), _operand(ctx, b, FLOAT))


@lowers(operator.floordiv)
def _floordiv(ctx, node, a, b):
    c = _cached(ctx, node)
    if c is not None:
        return c
    if _common(a, b) == FLOAT:
        return ctx.unary("stablehlo.floor", _truediv(ctx, node, a, b))
    return ctx.sym.ops.floordiv(_operand(ctx, a), _operand(ctx, b))


@lowers(operator.mod)
def _mod(ctx, node, a, b):
    c = _cached(ctx, node)
    if c is not None:
        return c
    if _common(a, b) == FLOAT:
        raise TypeError("% of symbolic floats is not supported")
    return ctx.sym.ops.mod(_operand(ctx, a), _operand(ctx, b))


@lowers(operator.neg)
def _neg(ctx, node, a):
    c = _cached(ctx, node)
    if c is not None:
        return c
    if _common(a) == SHAPE_DTYPE:  # a size: 0 - a, which shape refinement folds (it cannot fold negate)
        return ctx.sym.ops.neg(_operand(ctx, a))
    return ctx.unary("stablehlo.negate", _operand(ctx, a, _common(a)))


@lowers(operator.abs, builtins.abs)
def _abs(ctx, node, a):
    return ctx.unary("stablehlo.abs", _operand(ctx, a, _common(a)))


def _compare(direction):
    def fn(ctx, node, a, b):
        dt = _common(a, b)
        return ctx.compare(_operand(ctx, a, dt), _operand(ctx, b, dt), direction)

    return fn


for _d, _op in {
    "EQ": operator.eq,
    "NE": operator.ne,
    "LT": operator.lt,
    "LE": operator.le,
    "GT": operator.gt,
    "GE": operator.ge,
}.items():
    lowers(_op)(_compare(_d))


@lowers(torch.sym_not, operator.not_)
def _sym_not(ctx, node, a):
    # `p == false`, not `stablehlo.not`: shape refinement folds compare (and so
    # evaluates the assertions built on it) but leaves `not` alone
    return ctx.compare(_operand(ctx, a, "i1"), ctx.constant(False, "i1"), "EQ")


@lowers(operator.and_)
def _and(ctx, node, a, b):
    dt = _common(a, b)
    return ctx.binary("stablehlo.and", _operand(ctx, a, dt), _operand(ctx, b, dt))


@lowers(operator.or_)
def _or(ctx, node, a, b):
    dt = _common(a, b)
    return ctx.binary("stablehlo.or", _operand(ctx, a, dt), _operand(ctx, b, dt))


@lowers(torch.sym_ite)
def _sym_ite(ctx, node, cond, a, b):
    dt = _common(a, b)
    return ctx.select(_operand(ctx, cond, "i1"), _operand(ctx, a, dt), _operand(ctx, b, dt))


@lowers(torch.sym_float)
def _sym_float(ctx, node, a):
    return _operand(ctx, a, FLOAT)


@lowers(torch._sym_sqrt)
def _sym_sqrt(ctx, node, a):
    return ctx.unary("stablehlo.sqrt", _operand(ctx, a, FLOAT))


def _to_int(opname):
    """floor/ceil/round/trunc of a SymFloat: the node's size in the algebra where
    it has one (``round(n / 3)`` is integer ``//``, ``%`` and ``min``: ops shape
    refinement folds; it cannot fold ``convert`` to f64 and back, so a module
    slicing by ``round(n / 3)`` had "dynamic shapes"); else the float op."""

    def fn(ctx, node, a, *rest):
        if rest and rest[0] is not None:
            raise TypeError(f"{node.target.__name__} with ndigits={rest[0]!r} on a symbolic float is not supported")
        size = _size_of(ctx, node)
        if size is not None:
            return size
        if _kind(a) != FLOAT:
            return _operand(ctx, a)
        return ctx.convert(ctx.unary(opname, _operand(ctx, a, FLOAT)), SHAPE_DTYPE)

    return fn


lowers(math.floor)(_to_int("stablehlo.floor"))
lowers(math.ceil)(_to_int("stablehlo.ceil"))
lowers(builtins.round)(_to_int("stablehlo.round_nearest_even"))  # Python rounds half to even
lowers(torch.sym_int, math.trunc)(_to_int("stablehlo.convert"))  # convert truncates toward zero


@lowers(aten.sym_size.int)
def _sym_size(ctx, node, x, dim):
    c = _cached(ctx, node)
    if c is not None:
        return c
    return ctx.op("stablehlo.get_dimension_size", [x], ((), SHAPE_DTYPE), attrs={"dimension": f"{dim % x.rank} : i64"})


@lowers(aten.sym_storage_offset.default, aten.sym_stride.int)
def _sym_layout(ctx, node, x, *dim):
    """A view's storage offset or stride (torch.export checks the outputs' aliasing
    with them): the node's size, from the dims. StableHLO values have no layout.
    Size-obliviously it can be an unbacked symbol with no source; then it may
    only feed assertions (each is entailed by the ranges and dropped, or refused
    by :func:`_assert_scalar`), and its value here is a stand-in 0."""
    try:
        return ctx.dim(node.meta["val"])
    except sizes.SizeError:
        if not _only_asserted(node):
            raise
        ctx.stand_ins = getattr(ctx, "stand_ins", set()) | {node.name}
        return ctx.constant(0, SHAPE_DTYPE)


def _only_asserted(node) -> bool:
    """Every use of ``node`` is a size comparison that only ``_assert_scalar`` uses."""
    for u in node.users:
        if u.target in (operator.ge, operator.le, operator.gt, operator.lt, operator.eq, operator.ne):
            if not all(w.target is aten._assert_scalar.default for w in u.users):
                return False
        elif u.target is not aten._assert_scalar.default:
            return False
    return True


@lowers(aten.sym_numel.default)
def _sym_numel(ctx, node, x):
    return ctx.numel(x.sym_shape, SHAPE_DTYPE)


@lowers(operator.getitem)
def _getitem(ctx, node, seq, i):
    return seq[i]


# ---------------------------------------------------------------- assertions
def _mlir_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("{", "(").replace("}", ")") + '"'


def shape_assertion(ctx, pred: Value, message: str, expr=None) -> None:
    """Emit jax's ``shape_assertion`` custom call: fails the run with ``message``
    (and the values of the size symbols of ``expr``) when ``pred`` is false."""
    names = []
    if expr is not None:
        names = sorted(s.name for s in getattr(expr, "free_symbols", ()) if s.name in ctx.sym.env)
    vals = [ctx.dim(sizes.var(n)) for n in names]
    msg = _mlir_string(message)[1:-1]
    if names:
        msg += " (" + ", ".join(f"{n} = {{{i}}}" for i, n in enumerate(names)) + ")"
    ctx.op(
        "stablehlo.custom_call",
        [pred] + vals,
        [],
        attrs={
            "call_target_name": '"shape_assertion"',
            "api_version": "2 : i32",
            "has_side_effect": "true",
            "error_message": f'"{msg}"',
        },
    )


def _expr_of(node, i=0):
    a = node.args[i] if len(node.args) > i else None
    val = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
    n = getattr(val, "node", None)
    return getattr(n, "expr", None)


@lowers(aten._assert_scalar.default)
def _assert_scalar(ctx, node, cond, msg="assertion failed"):
    if not isinstance(cond, Value):
        if not cond:
            raise LoweringError(f"runtime assertion is statically false: {msg}")
        return None
    expr = _expr_of(node)
    if _entailed(ctx, expr):
        return None
    cond_node = node.args[0] if isinstance(node.args[0], torch.fx.Node) else None
    stand_ins = getattr(ctx, "stand_ins", set())
    if cond_node is not None and any(getattr(a, "name", None) in stand_ins for a in cond_node.args):
        raise LoweringError(
            f"runtime assertion {expr} on a view's storage offset or stride that has no value here (an unbacked size): {msg}"
        )
    over = sorted({s.name for s in getattr(expr, "free_symbols", ())} & getattr(ctx, "item_symbols", set()))
    if over:  # shape refinement sees argument shapes only, never a value or size read from tensor data
        return data_assertion(ctx, node, f"runtime assertion {expr} over {', '.join(over)}, read from tensor data")
    shape_assertion(ctx, _operand(ctx, cond, "i1"), f"{msg} (torch.export runtime assertion %{node.name})", expr)
    return None


def _entailed(ctx, expr) -> bool:
    """An assertion over a data-dependent size (an unbacked ``u`` symbol, e.g. a
    boolean mask's count) that its range implies (``u0 >= 0``, ``u0 <= 96``
    where the count is at most the mask's 96 rows): true by construction, so
    not emitted (shape refinement cannot evaluate a size computed on the device)."""
    rel = getattr(expr, "rel_op", None)
    if rel not in (">=", "<=", ">", "<", "==", "!="):
        return False
    if not any(str(sym).startswith("u") for sym in expr.free_symbols):
        return False
    try:
        lhs, rhs = sizes.from_sympy(expr.lhs), sizes.from_sympy(expr.rhs)
        return sizes.compare(lhs, rel, rhs, ctx.ranges)
    except (sizes.SizeError, sizes.UndecidedError):
        return False


@lowers(aten.sym_constrain_range.default, aten.sym_constrain_range_for_size.default)
def _constrain_range(ctx, node, size, min=None, max=None):
    if not isinstance(size, Value):
        return None
    v = _operand(ctx, size)
    lo = 0 if min is None and node.target is aten.sym_constrain_range_for_size.default else min
    over = {s.name for s in getattr(_expr_of(node), "free_symbols", ())} & getattr(ctx, "item_symbols", set())
    if over:
        return data_assertion(ctx, node, f"range [{lo}, {max}] of {', '.join(sorted(over))}, read from tensor data")
    for bound, direction, word in ((lo, "GE", ">="), (max, "LE", "<=")):
        if bound is not None and abs(bound) < 2**31:
            shape_assertion(
                ctx,
                ctx.compare(v, ctx.constant(int(bound), SHAPE_DTYPE), direction),
                f"{node.target.name()}: size must be {word} {bound} (%{node.name})",
                _expr_of(node),
            )
    return None


@lowers(aten._assert_async.default, aten._assert_async.msg)
def _assert_async(ctx, node, cond, msg="assertion on tensor data"):
    return data_assertion(ctx, node, msg)


def data_assertion(ctx, node, msg: str) -> None:
    """Refuse an assertion on tensor data by name (no executor can check it), or drop it
    where the caller asked (``lower(..., data_asserts="skip")``)."""
    if getattr(ctx, "data_asserts", "error") == "skip":
        return None  # the caller asked for it: lower(..., data_asserts="skip")
    raise LoweringError(
        f"{msg}: an assertion on tensor data ({node.target.name()}) cannot be checked by the "
        f"StableHLO executors (no runtime-error op); it is not dropped silently "
        f"(lower(..., data_asserts='skip') lowers the program without it)"
    )


@lowers(aten._linalg_check_errors.default)
def _linalg_check_errors(ctx, node, info, api_name, *, is_matrix=True):
    """linalg's check of its ``info`` result (a singular matrix raises in eager): a
    check on tensor data, refused as :func:`_assert_async` is unless skipped."""
    return _assert_async(ctx, node, None, f"{api_name}: torch.linalg's check of its info result")


@lowers(aten._assert_tensor_metadata.default)
def _assert_metadata(ctx, node, *args, **kwargs):
    """Trace-time dtype/shape metadata; the executors check argument dtypes and shapes."""
    return None
