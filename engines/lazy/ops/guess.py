"""The generic shape rule's optimistic guesses (:mod:`.meta`): the runtime check of one, and the
functions whose guess a check caught (traced with their meta kernel's guards from then on)."""

from __future__ import annotations

from ..symbolic import ShapeGuess
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
