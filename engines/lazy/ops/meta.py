"""The generic shape rule: torch's own meta kernels, for a torch function the registry lacks.

A torch function that reaches ``LazyTensor.__torch_function__`` with no registry entry runs
once on *fake* tensors (``torch._subclasses.fake_tensor.FakeTensorMode``) whose sizes are
``SymInt``s of a fresh ``ShapeEnv``: one symbol per size variable of the operands (its hint the
variable's current size), each operand dim that symbol's expression. The outputs' sizes, sympy
expressions over those symbols, map back to size expressions (``engines.sizes.from_sympy``);
their dtypes are the nodes' dtypes. Each output records one node (``record``) whose op lowers to
the torch function itself (the output picked from its result when there are several), so the
compiled FX module runs the real kernel.

The meta kernel may add guards to the ``ShapeEnv`` (``Ne(s0, 1)`` where it broadcast, ``Eq(s0, s1)`` where
two sizes must agree, ``s0 <= 3`` where a backend heuristic chose a kernel). Values never depend on them:
the compiled graph calls the real function, which decides every branch again. Only the predicted output
shape (and dtype) does, so in a step that can be traced again (``ctx.recovers``: a ``LazyFunction`` call)
the call is traced *optimistically*: its guards are dropped, and each output node is followed by a
``check_shape`` node, which compares the real output's shape and dtype with the predicted ones (the size
expressions, materialised to ints) and raises :class:`~..symbolic.ShapeGuess` when they differ (a pick of
several outputs also checks their number). ``LazyFunction`` then *demotes* the function
(:func:`.guess.demote`: process-wide) and traces the step again (one that replayed the call and check,
:mod:`..replay`, first traced afresh). A demoted function, a call outside such a step (a plain ``L.tensor``
leaf: nothing could trace it again), or an output a check cannot see (a size, a scalar, an operand returned
as is) turns every meta guard into a guard of the lazy context (``ctx.guard``): a size that breaks one
re-traces. A guard the size algebra cannot state specialises the variables in it. A call whose meta kernel
added no guard (none the lazy context would record) is traced the same either way, unchecked.

Refused by name (``UntraceableOp.kind``): an output whose size depends on the values ("data-dependent
output": ``nonzero``, ``unique``, ``masked_select``, ``.item()``), an in-place or ``out=`` call
("in-place"), an output that is neither a tensor nor a size nor a plain scalar ("non-tensor
output"), an argument the FX graph cannot hold as a literal (a module, a callable: "unsupported
argument"), an op that draws random numbers ("random": it would draw at the sync, from the
generator's state then, not at the call, where eager draws) and a function torch has no symbolic
meta kernel for ("unsupported op").
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

from engines import sizes
from engines.sizes import Expr

from ..symbolic import ShapeGuess, SymSize
from ..tensor import FALLBACK, LazyTensor, UntraceableOp, ctx_of
from . import guess
from .registry import LOWER, _put, record, replayed

_IMPLS: dict = {}  # torch function -> its implementation (one each: replay keys on it)
_KEYS: dict = {}  # LOWER key -> the torch function it lowers (a key names one function)


def _qualname(func, name: str) -> str:
    mod = getattr(func, "__module__", None) or ""
    qual = getattr(func, "__qualname__", None) or name
    if mod in ("torch._ops.aten", "torch._ops.prims"):  # an OpOverload: ``aten._safe_softmax.default``
        qual = str(func)
    return f"{mod}.{qual}" if mod else qual


def lower_key(func, name: str) -> str:
    """The LOWER key of ``func``: ``torch_fn:<module>.<qualified name>`` (deterministic; a key
    another function holds already gets a counter)."""
    base = "torch_fn:" + _qualname(func, name)
    key, i = base, 1
    while _KEYS.get(key, func) is not func:
        i += 1
        key = f"{base}#{i}"
    _KEYS[key] = func
    return key


class _Pick:
    """The ``i``-th leaf (``pytree`` order) of ``func``'s result: one node's lowering. ``n``:
    the number of leaves the trace predicted (a :class:`ShapeGuess` when the result has
    another), or None (guarded: no check)."""

    def __init__(self, func, i: int, name: str, n: int | None = None, key: str = ""):
        self.func, self.i, self.n, self.key = func, i, n, key
        self.__name__ = f"{name}_out{i}" if n is None else f"{name}_out{i}of{n}"
        self.__qualname__ = self.__name__

    def __call__(self, *args, **kwargs):
        leaves = pytree.tree_leaves(self.func(*args, **kwargs))
        if self.n is not None and len(leaves) != self.n:
            raise ShapeGuess(self.key, f"{len(leaves)} outputs", f"{self.n}")
        return leaves[self.i]


def _checkable(leaves, vals) -> bool:
    """Whether the output is all that a runtime check sees: tensor leaves the call made (checked
    by shape and dtype; their number by the pick) or None. A size, a Python scalar or an operand
    returned as is may have been decided by a guard, with no runtime check to catch it."""
    for x, v in zip(leaves, vals, strict=True):
        if x is None:
            continue
        if not isinstance(x, torch.Tensor) or v is not None:
            return False
    return True


class _Getter:
    """A tensor attribute (``x.H``) as a function: what ``__torch_function__`` meets is the
    attribute's ``__get__``, which an FX graph cannot name."""

    def __init__(self, attr: str):
        self.attr = attr
        self.__name__ = self.__qualname__ = f"Tensor_{attr}"
        self.__module__ = "engines.lazy.ops.meta"

    def __call__(self, x):
        return getattr(x, self.attr)


def fallback(func, name: str):
    """The implementation ``__torch_function__`` uses for ``func`` (no registry entry): see the module."""
    if getattr(func, "lazy_tracing", False):  # (a step's patch of a torch method: keyed as the method itself,
        func = func.__wrapped__  # or the step that patched and the steps that did not record different graphs)
    impl = _IMPLS.get(func)
    if impl is None:
        if name == "__get__":  # a tensor attribute
            attr = getattr(getattr(func, "__self__", None), "__name__", "?")
            impl = _IMPLS[func] = replayed(_generic(_Getter(attr), attr))
        else:
            impl = _IMPLS[func] = replayed(_generic(func, name))
    return impl


def _refuse(kind: str, msg: str):
    return UntraceableOp(msg, kind=kind)


def _generic(func, name: str):
    key = lower_key(func, name)
    inplace = (name.endswith("_") and not name.endswith("__")) or (name.startswith("__i") and name.endswith("__"))
    picks: dict = {}

    def impl(*args, **kwargs):
        if inplace:
            raise _refuse("in-place", f"lazy: in-place torch function {name!r} is not supported by the lazy path")
        if kwargs.get("out") is not None:
            raise _refuse("in-place", f"lazy: {name}(out=...) is not supported by the lazy path")
        bad = _unliteral((args, kwargs))
        if bad is not None:
            raise _refuse(
                "unsupported argument", f"lazy: {name} with a {type(bad).__name__} argument (the lowering cannot name it)"
            )
        ctx = ctx_of(args, kwargs)
        if ctx is None:
            raise _refuse("unsupported op", f"lazy: {name}: no lazy operand found")
        may = ctx.recovers and key not in guess.DEMOTED  # (may guess: sizes the kernel pins kept symbolic)
        fake, out, leaves, spec, vals, seeded = _run_meta(func, name, ctx, args, kwargs, may)
        if seeded.random:
            raise _refuse("random", f"lazy: {name} draws random numbers (it would run at the sync, not at the call)")
        idx = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and vals[i] is None]
        conds = guess.decides(fake, name) if may and _checkable(leaves, vals) else ()  # (some: optimistic)
        if not conds:
            fake.guards(name)
        n = len(leaves)
        for i in idx:
            x = leaves[i]
            shape = tuple(fake.expr(s) for s in x.shape)
            if isinstance(out, torch.Tensor):
                op = key
                _put(LOWER, op, func, "lowering")
            else:
                # (optimistic: the pick checks the number of leaves too, which a guard may decide)
                op = f"{key}[{i}/{n}]" if conds else f"{key}[{i}]"
                if op not in picks:
                    picks[op] = _Pick(func, i, name, n if conds else None, key)
                    _put(LOWER, op, picks[op], "lowering")
            t = record(ctx, op, args, kwargs, shape, x.dtype)
            if conds:  # optimistic: the real output's shape and dtype, checked against the trace's
                t = record(ctx, "check_shape", (t, shape, x.dtype, key), {}, shape, x.dtype)
                ctx.guessed = (t.node, conds)  # (the guards a replay of the call tests)
            vals[i] = t
        return pytree.tree_unflatten(vals, spec)

    impl.__name__ = impl.__qualname__ = name
    return impl


_DECOMPOSE: dict = {}  # torch function -> whether its meta run decomposes (see _run_meta)


def _run_meta(func, name, ctx, args, kwargs, symbolic=False):
    """``func`` on fake operands: ``(fake world, output, its leaves, their spec, what each leaf is
    lazily (see ``_Fake.out``), the dispatch mode that watched it)``. A run whose guards pin a size
    to a number (a C++ kernel reading ``sizes()``) is tried again with torch's Python decompositions
    (``torch._decomp``), which keep sizes symbolic; the run that pins fewer is kept, and the choice
    remembered per function."""
    tries = (_DECOMPOSE[func],) if func in _DECOMPOSE else (False, True)
    best = None
    for decompose in tries:
        fake = _Fake(ctx)
        if symbolic:
            guess.keep_symbolic(fake.env, {a for a in pytree.tree_leaves((args, kwargs)) if type(a) is int})
        try:
            fargs, fkwargs = pytree.tree_map(fake.arg, (args, kwargs))
            fake.start()
            with _python_dispatcher(), fake.mode, _Watch(decompose) as seeded:
                out = func(*fargs, **fkwargs)
            leaves, spec = pytree.tree_flatten(out)
            vals = [fake.out(x, name) for x in leaves]
        except UntraceableOp:
            if best is None and decompose is tries[-1]:
                raise
            continue
        except Exception as e:
            if best is None and decompose is tries[-1]:
                raise _meta_refusal(e, name) from e
            continue
        pins = fake.pins()
        if best is None or pins < best[0]:
            best = (pins, decompose, (fake, out, leaves, spec, vals, seeded))
        if not pins:
            break
    _DECOMPOSE[func] = best[1]
    return best[2]


_LITERALS = (int, float, bool, complex, str, type(None), type(...), torch.dtype, torch.device, torch.memory_format, torch.layout)


def _unliteral(obj):
    """The first argument (nested) that an FX graph cannot hold as a literal: not a tensor, size,
    scalar, dtype, device, layout, memory format, nor a list, tuple, dict or slice of those (a
    module, a callable: the lowering could not name it). None when there is none."""
    if isinstance(obj, (torch.Tensor, SymSize, *_LITERALS)):
        return None
    if isinstance(obj, (list, tuple)):
        for o in obj:
            b = _unliteral(o)
            if b is not None:
                return b
        return None
    if isinstance(obj, dict):
        return _unliteral(tuple(obj.values()))
    if isinstance(obj, slice):
        return _unliteral((obj.start, obj.stop, obj.step))
    return obj


def _python_dispatcher():
    """torch's Python dispatcher, on: the Python kernels torch registers for composite ops
    (``upsample_*.vec``: sizes kept symbolic) take the place of C++ ones that read ``sizes()``."""
    from torch._dispatch.python import enable_python_dispatcher

    return enable_python_dispatcher()


def _meta_refusal(e: Exception, name: str) -> UntraceableOp:
    from torch._subclasses import fake_tensor as ft
    from torch.fx.experimental import symbolic_shapes as ss

    if isinstance(e, (ft.DynamicOutputShapeException, ft.DataDependentOutputException, ss.GuardOnDataDependentSymNode)):
        return _refuse("data-dependent output", f"lazy: {name} has a data-dependent output ({type(e).__name__}: {_first(e)})")
    if isinstance(e, ft.UnsupportedOperatorException):
        return _refuse("unsupported op", f"lazy: {name}: torch has no meta kernel for {_first(e)}")
    return _refuse("unsupported op", f"lazy: {name}: its meta kernel failed on symbolic sizes ({type(e).__name__}: {_first(e)})")


def _first(e: Exception) -> str:
    s = str(e).strip().split("\n")
    return s[0][:200] if s else ""


class _Watch(torch.utils._python_dispatch.TorchDispatchMode):
    """Notes whether an aten op the call reaches draws random numbers; with ``decompose``, runs
    each aten op that has a Python decomposition as that decomposition."""

    def __init__(self, decompose: bool):
        super().__init__()
        self.random = False
        self.decompose = decompose

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()):
            self.random = True
        if self.decompose:
            from torch._decomp import decomposition_table

            d = decomposition_table.get(func)
            if d is not None:
                with self:
                    r = d(*args, **kwargs)
                if r is not NotImplemented:
                    return r
        return func(*args, **kwargs)


class _Fake:
    """One call's fake world: a ``ShapeEnv`` with a symbol per size variable of the operands."""

    def __init__(self, ctx):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.ctx = ctx
        self.env = ShapeEnv(
            duck_shape=False, specialize_zero_one=False, allow_dynamic_output_shape_ops=False, allow_scalar_outputs=False
        )
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=False)
        self.syms: dict = {}  # lazy variable name -> SymInt
        self.names: dict = {}  # sympy symbol -> lazy variable name
        self.memo: dict = {}  # Expr -> SymInt
        self.inputs: dict = {}  # id(fake tensor) -> the lazy operand it stands for
        self.n0 = 0

    # -- operands ----------------------------------------------------------
    def sym(self, name: str):
        s = self.syms.get(name)
        if s is None:
            from torch._dynamo.source import ConstantSource

            h = self.ctx.vars.hint(sizes.var(name))
            env = self.env
            symbol = env.create_symbol(h, ConstantSource(f"lazy_{name}"), positive=None)
            s = self.syms[name] = env.create_symintnode(symbol, hint=h)
            self.names[symbol] = name
        return s

    def size(self, e: Expr):
        if e.is_const:
            return e.value
        v = self.memo.get(e)
        if v is None:
            v = self.memo[e] = sizes.evaluate(e, None, _SymOps(self), {})
        return v

    def arg(self, a):
        if isinstance(a, LazyTensor):
            n = a.node
            with self.mode:
                t = torch.empty([self.size(e) for e in n.shape], dtype=n.dtype)
            self.inputs[id(t)] = a
            return t
        if isinstance(a, torch.Tensor):  # (its sizes are constants: symbols of its own would leak into guards)
            return self.mode.from_tensor(a, static_shapes=True)
        if isinstance(a, SymSize):
            return self.size(a.live())
        return a

    def start(self) -> None:
        self.n0 = len(self.env.guards)  # (the guards of making the operands: facts of sizes)

    # -- results -----------------------------------------------------------
    def expr(self, s) -> Expr:
        """A fake output's size as a size expression over the lazy variables."""
        if isinstance(s, int):
            return sizes.const(s)
        x = s.node.expr
        if x.free_symbols - set(self.names):
            raise _refuse("data-dependent output", f"lazy: a size {x} that is not a function of the input sizes")
        try:
            return self._from(x)
        except sizes.SizeError:  # (``TruncToInt(1.7*ToFloat(s0))``: a float the exact algebra refuses) specialised
            for sym in sorted(x.free_symbols, key=str):
                self.ctx.specialise(sizes.var(self.names[sym]), reason=f"output size {x}")
            return sizes.const(int(x.xreplace(_values(self.env))))

    def _from(self, x) -> Expr:
        import sympy

        x = x.xreplace({s: sympy.Symbol(n, integer=True) for s, n in self.names.items() if s in x.free_symbols})
        return sizes.from_sympy(x)

    def out(self, x, name: str):
        """An output leaf: None for a tensor (recorded by the caller), its lazy operand for an
        operand returned as is, a symbolic size for a SymInt, a plain scalar as is."""
        if isinstance(x, torch.Tensor):
            a = self.inputs.get(id(x))
            return a if a is not None else None
        if isinstance(x, torch.SymInt):
            return SymSize.wrap(self.expr(x), self.ctx)
        if isinstance(x, torch.SymBool):
            return bool(x)  # (a guard, translated with the others)
        if isinstance(x, torch.SymFloat):
            return float(x)
        if x is None or type(x) in (int, float, bool, str, torch.dtype, torch.device):
            return x
        raise _refuse("non-tensor output", f"lazy: {name} returns a {type(x).__name__}")

    def pins(self) -> int:
        """How many of the run's guards pin a size to a number (``Eq(s0, 5)``)."""
        n = 0
        for g in self.env.guards[self.n0 :]:
            x = g.expr
            if type(x).__name__ == "Equality" and (x.lhs.is_number or x.rhs.is_number):
                v = x.rhs if x.lhs.is_number is False else x.lhs
                n += not (v.is_number and int(v) in (0, 1))
        return n

    def guards(self, name: str) -> None:
        """The meta kernel's guards, as the lazy context's."""
        for g in self.env.guards[self.n0 :]:
            self._guard(g.expr, name)

    def _guard(self, x, name: str) -> None:
        """The sympy condition ``x`` (true at the current sizes) as guards of the lazy context: a
        comparison as one, a conjunction as each part, a disjunction as its first part that holds
        (a stronger condition), anything else by specialising its variables."""
        ctx = self.ctx
        kind = type(x).__name__
        if kind == "And":
            for a in x.args:
                self._guard(a, name)
            return
        if kind == "Or":
            for a in x.args:
                if self._holds(a):
                    self._guard(a, name)
                    return
        op = _REL.get(kind) if x.free_symbols <= self.names.keys() else None  # (a symbol of no lazy size: specialised)
        if op is not None:
            try:
                lhs, rhs = self._from(x.lhs), self._from(x.rhs)
            except (sizes.SizeError, TypeError, ValueError, ArithmeticError):
                op = None
        if op is None:  # not a comparison the size algebra states: each variable in it, specialised
            for s in sorted(x.free_symbols, key=str):
                n = self.names.get(s)
                if n is not None:
                    ctx.specialise(sizes.var(n), reason=f"{name} (meta: {x})")
            return
        if _evident(lhs, op, rhs):
            return
        if not ctx.guard(lhs, op, rhs, reason=f"{name} (meta)"):
            raise AssertionError(f"lazy: {name}: the meta kernel's guard {x} does not hold at the current sizes")

    def _holds(self, x) -> bool:
        """``x`` at the current sizes (its symbols at their hints)."""
        try:
            return bool(x.xreplace({s: _values(self.env)[s] for s in x.free_symbols}))
        except (TypeError, KeyError):
            return False


_REL = {
    "Equality": "==",
    "Unequality": "!=",
    "StrictLessThan": "<",
    "LessThan": "<=",
    "StrictGreaterThan": ">",
    "GreaterThan": ">=",
}


def _evident(lhs: Expr, op: str, rhs: Expr) -> bool:
    """``lhs op rhs`` holds for every size (sizes are >= 0): no guard needed."""
    if op in (">=", "<="):
        d = lhs - rhs if op == ">=" else rhs - lhs
        return sizes.evident_nonneg(d)
    return False


class _SymOps(sizes.Ops):
    """:func:`engines.sizes.evaluate` over ``SymInt``s: a variable is its ShapeEnv symbol."""

    def __init__(self, fake: _Fake):
        self.fake = fake

    def var(self, name, env):
        return self.fake.sym(name)

    def const(self, c):
        return c

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def mul(self, a, b):
        return a * b

    def neg(self, a):
        return -a

    def floordiv(self, a, b):
        return a // b

    def mod(self, a, b):
        return a % b

    def max(self, a, b):
        return torch.sym_max(a, b)

    def min(self, a, b):
        return torch.sym_min(a, b)


FALLBACK.append(fallback)


def _values(env) -> dict:
    """The ShapeEnv's symbol -> hint table (``backed_var_to_val`` in newer torch)."""
    return getattr(env, "backed_var_to_val", None) or env.var_to_val
