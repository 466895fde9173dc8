"""The generic shape rule's optimistic guesses (:mod:`.meta`): the runtime check of one, and the
functions whose guess a check caught (traced with their meta kernel's guards from then on)."""

from __future__ import annotations

from engines.sizes import const

from ..symbolic import ShapeGuess, compare
from .registry import LOWER, _put


def check_shape(t, shape, dtype, key):
    """The optimistic trace's runtime check (see the module): ``t`` itself when its shape and dtype
    are the predicted ones (``shape`` materialised to ints), else a :class:`ShapeGuess`."""
    if t.shape != shape or t.dtype != dtype:
        raise ShapeGuess(key, f"{t.dtype}{list(t.shape)}", f"{dtype}{list(shape)}")
    return t


_put(LOWER, "check_shape", check_shape, "lowering")

#: the LOWER keys of the functions a runtime shape check caught (:func:`demote`): their meta guards
#: are lazy guards from now on. Process-wide, as the meta kernels are.
DEMOTED: set = set()


def demote(key: str) -> bool:
    """``key``'s function takes its meta kernel's guards as lazy guards from now on; False when it
    did already (a check of a demoted function cannot fail: no caller should retry then)."""
    if key in DEMOTED:
        return False
    DEMOTED.add(key)
    return True


def decides(fake, name: str) -> tuple:
    """The guards the meta kernel's guards of ``fake`` (a ``meta._Fake``) would add to its lazy
    context, as ``(lhs, op, rhs, result)`` each (one the size algebra finds evident, or constant,
    adds none): a call is traced optimistically only when there are some. Else it is traced as
    before, and a step may replay it (``replay``). A step that replays an optimistic call tests
    them again (``OpCall.holds``): its prediction is the last step's only where they decide alike."""
    if len(fake.env.guards) <= fake.n0:
        return ()
    ctx = fake.ctx
    dry = fake.ctx = _Dry(ctx)
    try:
        fake.guards(name)
    finally:
        fake.ctx = ctx
    return tuple(dry.conds)


class _Dry:
    """A lazy context's ``guard``/``specialise``, collected, not recorded (see :func:`decides`)."""

    def __init__(self, ctx):
        self.vars, self.conds = ctx.vars, []

    def guard(self, lhs, op: str, rhs, reason: str) -> bool:
        if lhs is rhs or lhs == rhs:
            return op in ("==", "<=", ">=")
        result = compare(lhs, op, rhs, self.vars.hints)
        if not (lhs.is_const and rhs.is_const):
            self.conds.append((lhs, op, rhs, result))
        return result

    def specialise(self, e, reason: str) -> int:
        v = self.vars.hint(e)
        self.guard(e, "==", const(v), reason)
        return v


def keep_symbolic(env, literals) -> None:
    """``env`` (a ``ShapeEnv``) replaces by a number no symbol that inequalities narrowed to one
    value (``s0 <= 3`` with ``s0 >= 3``: a backend heuristic), unless the call was given that
    number (``fft(x, n=7)`` at ``s0 == 7``: the output is 7 at every size): the output sizes over
    it stay symbolic, so a guess holds one expression at every size (the bounds are guards of a
    demoted call still). ``literals``: the ints among the call's arguments."""
    set_replacement, narrowed = env._set_replacement, set()

    def _set_replacement(a, tgt, msg):
        if getattr(tgt, "is_number", False) and tgt not in literals:
            if msg == "range_refined_to_singleton" or a in narrowed:
                narrowed.add(a)
                return
        set_replacement(a, tgt, msg)

    env._set_replacement = _set_replacement
