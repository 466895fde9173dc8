"""Symbolic sizes of the StableHLO lowering, in the project's one size algebra.

A dim of a :class:`~.builder.Value`'s ``sym_shape`` is an ``int`` (static) or
a non-constant :class:`engines.sizes.Expr` over the placeholders' symbols
(``s0``, ``s1``, ...): :func:`as_dim` converts torch.export's sympy (and
``SymInt``) once, at the boundary. :class:`SymbolicEmitter` materialises a
size as a ``tensor<i32>`` SSA value with :func:`engines.sizes.evaluate` and
:class:`engines.sizes.StableHLOOps`:

* a symbol is ``get_dimension_size`` of the first input dim it names (or a
  SymInt user input, converted); a
  derived input dim ``a*s + c`` is solved for ``s`` (``subtract``, then an
  exact ``divide``) when ``s`` has no dim of its own;
* ``//`` and ``%`` get the ``select`` fix-ups of floor/Python semantics;
* the evaluator's memo, keyed by normal form, is the CSE cache: each size
  (and each of its sub-expressions) is emitted once.
"""

from __future__ import annotations

from functools import lru_cache

import sympy

from engines import sizes

from .types import SHAPE_DTYPE

Dim = int | sizes.Expr


@lru_cache(maxsize=4096)
def _from_sympy(e) -> sizes.Expr:
    return sizes.from_sympy(e)


def as_dim(d) -> Dim:
    """int | SymInt | sympy | :class:`sizes.Expr` -> ``int`` or a non-constant ``Expr``."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if isinstance(d, sizes.Expr):
        return d.value if d.is_const else d
    node = getattr(d, "node", None)
    if node is not None and hasattr(node, "expr"):  # torch.SymInt
        d = node.expr
    if isinstance(d, sympy.Basic):
        e = _from_sympy(d)
        return e.value if e.is_const else e
    if hasattr(d, "__index__") and not isinstance(d, bool):
        return int(d)
    raise sizes.SizeError(f"not a size: {d!r} ({type(d).__name__})")


def _linear(e: sizes.Expr, name: str) -> tuple[int, int] | None:
    """``(a, c)`` when ``e == a*name + c`` (``a != 0``), else None."""
    a, c = 0, 0
    for m, k in e.terms:
        if not m:
            c = k
        elif len(m) == 1 and m[0][1] == 1 and m[0][0].kind == "var" and m[0][0].name == name:
            a = k
        else:
            return None
    return (a, c) if a else None


class _Ops(sizes.StableHLOOps):
    """:class:`sizes.StableHLOOps` reading derived input dims: an ``env`` entry
    ``(value, axis, a, c)`` says that dim is ``a*name + c``."""

    def var(self, name, env):
        v = env.get(name)
        if isinstance(v, tuple) and len(v) == 4:
            value, axis, a, c = v
            size = super().var(name, {name: (value, axis)})
            if c:
                size = self.sub(size, self.const(c))
            if a != 1:  # exact: the dim is a*name + c
                size = self._op("divide", size, self.const(a))
            return size
        return super().var(name, env)


class SymbolicEmitter:
    """Emits scalar shape arithmetic into a :class:`~.builder.LoweringContext`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.ops = _Ops(ctx, SHAPE_DTYPE)
        self.env: dict[str, tuple] = {}  # symbol -> (input value, axis[, a, c])
        self.memo: dict[sizes.Expr, object] = {}  # normal form -> emitted value
        self.data_symbols: dict[str, str] = {}  # symbol -> the scalar input it is read from

    def register_input(self, value) -> None:
        """Record where the symbols of an input's dims can be read from."""
        derived = []
        for i, d in enumerate(value.sym_shape):
            if isinstance(d, sizes.Expr):
                a = d.single_atom()
                if a is not None and a.kind == "var":
                    self.env.setdefault(a.name, (value, i))
                else:
                    derived.append((i, d))
        for i, d in derived:
            if len(d.vars) == 1:
                (name,) = d.vars
                lin = _linear(d, name)
                if name not in self.env and lin is not None:
                    self.env[name] = (value, i) + lin

    def register_scalar(self, symint, value, input_name: str = "", source: str | None = None) -> None:
        """A SymInt user input (or ``.item()`` of tensor data, named by ``source``): its
        symbol's value is the (0-d) ``value``; a tensor dim over it is refused (:meth:`check_shape`)."""
        a = as_dim(symint)
        atom = a.single_atom() if isinstance(a, sizes.Expr) else None
        if atom is not None and atom.kind == "var" and atom.name not in self.env:
            self.env[atom.name] = self.ctx.op("stablehlo.convert", [value], ((), SHAPE_DTYPE))
            self.data_symbols[atom.name] = source or f"the value of scalar input {input_name!r}"

    def check_shape(self, sym_shape) -> None:
        """A tensor dim may not depend on a scalar input's value: both executors
        take sizes from argument shapes (refinement / the interpreter's static types)."""
        for d in sym_shape:
            if isinstance(d, sizes.Expr) and d.vars & self.data_symbols.keys():
                name = sorted(d.vars & self.data_symbols.keys())[0]
                raise sizes.SizeError(
                    f"tensor dim {d} depends on {name}, {self.data_symbols[name]}: the StableHLO executors "
                    f"need every size from argument shapes (a data-dependent size; for a scalar input, pass "
                    f"a tensor of that size instead)"
                )

    def emit(self, d):
        """Materialise a size (int, sympy, SymInt or Expr) as a ``tensor<i32>`` value."""
        d = as_dim(d)
        if isinstance(d, int):
            return self.ctx.constant(d, SHAPE_DTYPE)
        unknown = d.vars - self.env.keys()
        if unknown:
            raise sizes.SizeError(
                f"size {d}: {', '.join(sorted(unknown))} is not the size of any input dim "
                f"(unbacked/data-dependent sizes are not supported)"
            )
        return sizes.evaluate(d, self.env, self.ops, self.memo)

    def get(self, d):
        """The value already emitted (or bound) for size ``d``, or None (ints: a constant)."""
        d = as_dim(d)
        if isinstance(d, int):
            return self.ctx.constant(d, SHAPE_DTYPE)
        return self.memo.get(d)

    def bind(self, d, value) -> None:
        """Record an already-emitted value for size ``d`` (e.g. a sym_size node)."""
        d = as_dim(d)
        if not isinstance(d, int):
            self.memo.setdefault(d, value)
