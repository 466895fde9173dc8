"""Symbolic sizes as the traced program sees them, over :mod:`engines.sizes`.

Sizes are :class:`engines.sizes.Expr` over variable *names*; the algebra
(normal form, ``+ - * // %``, printing, evaluation) is the project's one.
This module adds what the lazy path needs on top:

* :class:`Var`, the record of one dynamic input dim -- its current size
  (``hint``), the ``(leaf node, axis)`` it is read from (``src``), its bound
  and its display ``name``. The variable's name in the algebra is
  ``d<leaf uid>_<axis>`` (the leaf and axis that created it), unique across
  steps even when two steps reuse a user name such as ``n``.
* :class:`SizeVars`, a context's table of them: ``vars[name]`` and
  ``hints = {name: size}`` (the environment of ``sizes.evaluate``).
* :class:`SymSize` / :class:`SymBool`, the user-facing values (``x.shape[0]``,
  ``x.shape[0] == 3``). Arithmetic on them stays symbolic; anything that
  needs a concrete Python value (``int()``, ``bool()``, ``if``) specialises
  on the current size and records a guard in the tensor's context.
"""

from __future__ import annotations

import functools
import math
import operator
import sys

from engines import sizes
from engines.sizes import Expr
from engines.sizes.expr import trusted_var


class Var:
    """A dynamic input dim; ``expr`` is it as a size (the variable ``sym``,
    an identifier by construction: ``d<uid>_<axis>``)."""

    __slots__ = ("bound", "expr", "hint", "name", "src", "sym")

    def __init__(self, sym: str, name: str, hint: int, src, bound: int | None = None, expr: Expr | None = None):
        self.sym, self.name, self.hint, self.src, self.bound = sym, name, hint, src, bound
        self.expr = _var_expr(sym) if expr is None else expr  # (``expr``: ``sym`` as a size, when the caller has it)


_var_expr = functools.lru_cache(maxsize=4096)(trusted_var)  # one object per name: the step names repeat


class FinishedStep(ValueError):
    """A size or lazy tensor of an earlier jit step used in a later one."""


_NAMES: set = set()  # user dim names checked to be valid variable names


def check_dim_name(name: str) -> None:
    """Refuse a user dim name that is not a valid size variable; remember a valid one in ``_NAMES``."""
    try:
        sizes.var(name)
    except sizes.SizeError:
        raise ValueError(f"dim name {name!r} is not an identifier (dim names are size variables)") from None
    _NAMES.add(name)


#: whether the step being traced runs without ``hooks.tracing``'s functions (see ``hooks.trace_step``):
#: then ``int()``/``float()`` of a size, and ``__torch_function__``, send it to be traced again with them
UNPATCHED = [False]


class NeedsSizedMethods(BaseException):
    """A step traced without ``torch.Tensor``'s sized methods (``hooks.tracing(methods=False)``)
    asked a size for its index: the step is traced again with them. A ``BaseException``, so a
    library's ``except Exception`` cannot take it for its own error."""


class ShapeGuess(BaseException):
    """A compiled step's runtime shape check failed: a torch function the registry lacks, traced
    optimistically (``ops.meta``: its meta kernel's guards not made lazy guards), ran to another
    shape than the trace predicted. ``LazyFunction`` demotes ``key`` (its guards are lazy guards
    from now on) and traces the step again. A ``BaseException``, as :class:`NeedsSizedMethods`."""

    def __init__(self, key: str, got=None, want=None):
        super().__init__(f"lazy: {key} ran to {got}, its trace predicted {want}")
        self.key, self.got, self.want = key, got, want


class SizeVars:
    """The size variables of a context's current step, by algebra name.

    The table holds each variable's leaf (its ``src``) until the step ends
    (``LazyContext.release`` cuts them); :meth:`clear` (at the next step)
    forgets the records. A context used without ``jit`` keeps its
    variables until it starts a step (``LazyContext.new_step``).
    """

    __slots__ = ("hints", "step", "vars")

    def __init__(self):
        self.vars: dict = {}
        self.hints: dict = {}
        self.step = 0  # bumped by clear(): a SymSize of an earlier step is refused (see SymSize.live)

    def __getitem__(self, sym: str) -> Var:
        return self.vars[sym]

    def get(self, sym: str) -> Var | None:
        return self.vars.get(sym)

    def clear(self) -> None:
        self.vars.clear()
        self.hints.clear()
        self.step += 1

    def hint(self, e: Expr) -> int:
        """The value of ``e`` under the current sizes."""
        return hint(e, self.hints, self._evaluate)

    def _evaluate(self, e: Expr) -> int:
        try:
            return sizes.evaluate(e, self.hints)
        except sizes.SizeError as err:
            if isinstance(err, ZeroDivisionError):
                raise
            raise sizes.SizeError(f"{err} (a size of a finished step?)") from None

    def display(self, names) -> tuple:
        """``(name, display name)`` pairs for the named variables among ``names``."""
        out = []
        for n in names:
            v = self.vars.get(n)
            if v is not None and v.name != n:
                out.append((n, v.name))
        return tuple(sorted(out))

    def text(self, e: Expr) -> str:
        """``e`` written with the variables' display names."""
        return rename(e, self.display(e.vars))


def hint(e: Expr, env: dict, evaluate=None) -> int:
    """``sizes.evaluate(e, env)``, with fast paths for a constant and a single
    variable (most dims; this runs for every dim of every step)."""
    terms = e.terms
    if not terms:
        return 0
    n = len(terms)
    if n <= 2:  # c, k*v, or c + k*v (``L - 4``): most sizes
        m, c = terms[-1]
        if not m:  # (the constant term sorts first: only when it is the only one)
            return c
        if len(m) == 1 and m[0][1] == 1:
            a = m[0][0]
            if a.kind == "var" and a.name in env:
                if n == 1:
                    return c * env[a.name]
                if not terms[0][0]:
                    return terms[0][1] + c * env[a.name]
    try:
        return _compile(e)(env)
    except (KeyError, ZeroDivisionError):  # the general walk raises the error that names the size
        return evaluate(e) if evaluate is not None else sizes.evaluate(e, env)


@functools.lru_cache(maxsize=4096)  # the steps' sizes repeat
def _compile(e: Expr):
    """``e`` as ``lambda env: ...`` (Python's ``//`` and ``%``: the algebra's semantics)."""
    return _env_lambda(sizes.source(e, {n: f"env[{n!r}]" for n in e.vars}))


def shapes_fn(shapes):
    """``lambda env: (shape, ...)``: each of ``shapes`` (tuples of Expr) under the sizes ``env``,
    one compiled call (what :func:`hint` of every dim computes)."""
    names = set().union(*[e.vars for shape in shapes for e in shape])
    env = {n: f"env[{n!r}]" for n in names}
    src = ", ".join("(" + "".join(f"{sizes.source(e, env)}, " for e in shape) + ")" for shape in shapes)
    return _env_lambda(f"({src},)")


def _env_lambda(src: str):
    """``lambda env: <src>``, ``src`` the text of our own size algebra (:func:`engines.sizes.source`)."""
    return eval(f"lambda env: {src}", {"max": max, "min": min})


def rename(e: Expr, pairs) -> str:
    """``e`` as text, each variable in ``pairs`` (``(name, new name)``) renamed."""
    if not pairs:
        return str(e)
    return str(sizes.substitute(e, {n: sizes.var(d) for n, d in pairs}))


def var_of(e: Expr) -> str | None:
    """The variable's name when ``e`` is exactly one variable."""
    a = e.single_atom()
    return a.name if a is not None and a.kind == "var" else None


def names_of(e: Expr):
    """The variable names in ``e`` (a fast path for constants and ``c*v**p``)."""
    t = e.terms
    if not t:
        return ()
    if len(t) == 1:
        m = t[0][0]
        if not m:
            return ()
        if len(m) == 1 and m[0][0].kind == "var":
            return (m[0][0].name,)
    return e.vars


const = sizes.as_expr  # an int as a size: the algebra's shared constants (one consts cache)


def as_expr(x) -> Expr:
    """An int, :class:`SymSize` or :class:`~engines.sizes.Expr` as an Expr."""
    t = type(x)
    if t is Expr:
        return x
    if t is int:
        return const(x)
    if t is SymSize:
        return x.live()
    if isinstance(x, Expr):
        return x
    if isinstance(x, SymSize):
        return x.live()
    if isinstance(x, bool):
        return const(int(x))
    try:
        return sizes.as_expr(x)
    except sizes.SizeError:
        raise TypeError(f"expected a size (int or symbolic size), got {type(x).__name__}") from None


def is_size(x) -> bool:
    return isinstance(x, (SymSize, Expr)) or (isinstance(x, int) and not isinstance(x, bool))


_CMP = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compare(lhs: Expr, op: str, rhs: Expr, hints) -> bool:
    """``lhs op rhs`` on the current sizes (``hints``)."""
    return _CMP[op](hint(lhs, hints), hint(rhs, hints))


# ---------------------------------------------------------------------------
# user-facing symbolic values
# ---------------------------------------------------------------------------
class SymBool:
    """A pending comparison of sizes; ``bool()`` specialises and records a guard."""

    __slots__ = ("ctx", "lhs", "op", "rhs")

    def __init__(self, op, lhs: Expr, rhs: Expr, ctx):
        self.op, self.lhs, self.rhs, self.ctx = op, lhs, rhs, ctx

    def __bool__(self) -> bool:
        return self.ctx.guard(self.lhs, self.op, self.rhs, reason="bool")

    def __repr__(self) -> str:
        t = self.ctx.vars.text
        return f"SymBool({t(self.lhs)} {self.op} {t(self.rhs)})"


@functools.lru_cache(maxsize=4096)  # a step's size arithmetic repeats the last step's
def _arith(fn, a: Expr, b) -> Expr:
    """``fn(a, b)``, memoised."""
    return fn(a, b)


def _sym(fn):
    def method(self, o):
        if type(o) is int:  # the common case (``x.shape[0] * 2``)
            ctx = self.ctx
            if self.step != ctx.vars.step:
                self.live()  # (raises FinishedStep)
            r = _arith(fn, self.expr, o)
            t = r.terms  # SymSize.wrap, inline
            return 0 if not t else t[0][1] if len(t) == 1 and not t[0][0] else SymSize(r, ctx)
        if type(o) is SymSize:  # (``t - t // 2``): memoised as the int case
            return SymSize.wrap(_arith(fn, self.live(), o.live()), self.ctx)
        if not is_size(o):
            if isinstance(o, float):
                return fn(float(self), o)
            return NotImplemented
        return SymSize.wrap(fn(self.live(), as_expr(o)), self.ctx)

    return method


def _rsym(fn):
    def method(self, o):
        if not is_size(o):
            if isinstance(o, float):
                return fn(o, float(self))
            return NotImplemented
        return SymSize.wrap(fn(as_expr(o), self.live()), self.ctx)

    return method


def _cmp(op):
    def method(self, o):
        if not is_size(o):
            return NotImplemented
        return SymBool(op, self.live(), as_expr(o), self.ctx)

    return method


#: torch creation function -> its lazy implementation, for a size reaching it in a list
#: (``torch.zeros((n, 3))``) through :meth:`SymSize.__torch_function__` (filled by :mod:`.hooks`)
SIZED_FUNCTIONS: dict = {}
#: ``[fn(func, args, kwargs)]``: a plain tensor's op called with a symbolic size, as the lazy op on
#: that tensor as a constant leaf, or NotImplemented (set by :mod:`.hooks`)
PLAIN_METHOD: list = []


#: guards recorded by ``__index__`` called from C, the newest last: ``(frame, instruction, ctx, guard)``.
#: torch's argument parser asks an int-list element for ``__index__`` to learn whether it is an int
#: (a probe, its answer dropped), then calls ``__torch_function__`` on it: :func:`retract_probes`.
PROBES: list = []


def note_probe(ctx, before: int) -> None:
    """After ``__index__`` specialised a size: remember the guard it added (if it added one) with the
    frame that called the C function asking (``__index__``'s caller's caller is C, no frame)."""
    added = len(ctx.guards) - before
    if added == 1:
        f = sys._getframe(2)
        if PROBES and (PROBES[-1][0] is not f or PROBES[-1][1] != f.f_lasti):
            PROBES.clear()  # (another call site: its probes were real reads, kept)
        PROBES.append((f, f.f_lasti, ctx, ctx.guards[-1]))


def retract_probes(frame) -> None:
    """Drop the guards ``__index__`` recorded for the C call now dispatching to a
    ``__torch_function__`` (called from ``frame``, at the same instruction): the parser
    only probed the sizes, which reach the lazy implementation symbolic. A guard that is
    no longer the context's newest stays (something after it may have read it)."""
    for f, lasti, ctx, g in reversed(PROBES):
        if f is not frame or f.f_lasti != lasti or not ctx.guards or ctx.guards[-1] is not g:
            break
        ctx.retract(g)
    PROBES.clear()


def _concrete(v):
    """``v`` with every size in it read as an int (each a guard), lists and tuples included:
    torch's argument parser would call ``__torch_function__`` again on a size left in one."""
    if isinstance(v, SymSize):
        return int(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_concrete(x) for x in v)
    return v


class SymSize:
    """A symbolic size (``x.shape[i]`` and arithmetic on it).

    ``+ - * // %`` stay symbolic; comparisons give a :class:`SymBool`;
    ``int()`` / ``index()`` / ``bool()`` / ``float()`` / true division force a
    concrete value and record a guard.
    """

    __slots__ = ("ctx", "expr", "step")

    def __init__(self, expr: Expr, ctx):
        self.expr, self.ctx, self.step = expr, ctx, ctx.vars.step

    def live(self) -> Expr:
        """``expr``, refusing a size of an earlier step (its variable names are
        reused by the current step: it would read the current sizes)."""
        if self.step != self.ctx.vars.step:
            raise FinishedStep(f"size {self.expr} belongs to a finished step")
        return self.expr

    @staticmethod
    def wrap(expr: Expr, ctx):
        """A plain int when ``expr`` is constant, else a :class:`SymSize`."""
        t = expr.terms
        if not t:
            return 0
        if len(t) == 1 and not t[0][0]:
            return t[0][1]
        return SymSize(expr, ctx)

    @property
    def hint(self) -> int:
        return self.ctx.vars.hint(self.expr)

    __add__, __radd__ = _sym(operator.add), _rsym(operator.add)
    __sub__, __rsub__ = _sym(operator.sub), _rsym(operator.sub)
    __mul__, __rmul__ = _sym(operator.mul), _rsym(operator.mul)
    __floordiv__, __rfloordiv__ = _sym(operator.floordiv), _rsym(operator.floordiv)
    __mod__, __rmod__ = _sym(operator.mod), _rsym(operator.mod)
    __eq__, __ne__, __lt__, __le__, __gt__, __ge__ = (_cmp(o) for o in ("==", "!=", "<", "<=", ">", ">="))

    def __neg__(self):
        return SymSize.wrap(-self.live(), self.ctx)

    def __pos__(self):
        return self

    def __truediv__(self, o):
        return float(self) / float(o)

    def __pow__(self, o):
        """A non-negative int power stays symbolic (a product); any other reads the size
        (``int(n ** 0.5)``, diffusers' patch grids: a number per size)."""
        if type(o) is int and o >= 0:
            return SymSize.wrap(math.prod([self.live()] * o, start=const(1)), self.ctx)
        if not isinstance(o, (int, float, SymSize)):
            return NotImplemented
        return (int(self) if type(o) is int else float(self)) ** o

    def __rshift__(self, o):
        return self // (1 << o) if type(o) is int and o >= 0 else NotImplemented

    def __lshift__(self, o):
        return self * (1 << o) if type(o) is int and o >= 0 else NotImplemented

    def __rpow__(self, o):
        if not isinstance(o, (int, float)):
            return NotImplemented
        return o ** int(self)

    def __abs__(self):
        return self  # (a size is never negative)

    def __round__(self, ndigits=None):
        return int(self)

    __trunc__ = __floor__ = __ceil__ = __round__

    def __rtruediv__(self, o):
        return float(o) / float(self)

    def __hash__(self) -> int:
        return hash(self.expr)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """A size handed to a torch function (``torch.div(seq_len, w, rounding_mode="floor")``,
        LED's and Longformer's window counts): a floor or trunc division of non-negative sizes
        by a positive divisor stays symbolic; anything else reads the sizes (guards) and runs."""
        if PROBES:
            retract_probes(sys._getframe(1))
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("div", "divide", "floor_divide") and len(args) == 2:
            mode = kwargs.get("rounding_mode", "floor" if name == "floor_divide" else None)
            a, b = args
            plain = all(isinstance(v, SymSize) or (type(v) is int and v >= 0) for v in (a, b))
            if mode in ("floor", "trunc") and plain and (isinstance(b, SymSize) or b > 0):
                return a // b  # (sizes are >= 0: trunc is floor)
        if PLAIN_METHOD and args:  # (``arange(h).repeat(1, n)``: a plain tensor's op at a symbolic size)
            out = PLAIN_METHOD[0](func, args, kwargs)
            if out is not NotImplemented:
                return out
        impl = SIZED_FUNCTIONS.get(func)
        if impl is not None:  # a creation function held from before ``tracing()`` (OpInfo's ``torch.zeros``)
            return impl(*args, **kwargs)
        return func(*[_concrete(v) for v in args], **{k: _concrete(v) for k, v in kwargs.items()})

    def __int__(self) -> int:
        if UNPATCHED[0]:  # (maybe torch's argument parser, which a tracing() function would have spared)
            raise NeedsSizedMethods(self)
        return self.ctx.specialise(self.live(), reason="int")

    def __index__(self) -> int:
        ctx = self.ctx
        if ctx.sized_methods_off:  # torch's own Tensor.__getitem__/expand reading a size: see LazyFunction
            raise NeedsSizedMethods(self)
        n = len(ctx.guards)
        v = ctx.specialise(self.live(), reason="index")
        note_probe(ctx, n)
        return v

    def __float__(self) -> float:
        if UNPATCHED[0]:
            raise NeedsSizedMethods(self)
        return float(self.ctx.specialise(self.live(), reason="float"))

    def __bool__(self) -> bool:
        return self.ctx.guard(self.live(), "!=", const(0), reason="bool")

    def __repr__(self) -> str:
        return f"SymSize({self.ctx.vars.text(self.expr)}, hint={self.hint})"

    __str__ = __repr__
