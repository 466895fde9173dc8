"""Every name einx 0.4.3 accepts for an operation works in every einx_symbolic mode.

The static mode (``api.specialised``, what the backend's ``static`` mode binds) once
raised ``KeyError: 'rearrange'`` where the unbounded mode accepted the alias.
"""

import warnings

import einx
import numpy as np
import pytest
import torch

from backends.einx_symbolic import _Specialised
from engines import einx_symbolic as ex
from engines.einx_symbolic import api
from engines.einx_symbolic.semantics import FAMILY

#: einx's public operations: the functions its frontend defines (not solve/check helpers)
EINX_OPS = sorted(
    n
    for n in dir(einx)
    if not n.startswith("_")
    and callable(getattr(einx, n))
    and not isinstance(getattr(einx, n), type)
    and getattr(getattr(einx, n), "__module__", "").startswith("einx._src.frontend.")
    and not getattr(einx, n).__module__.endswith(".util")
)
#: one program per op an alias names (description, input shapes)
PROGRAMS = {"id": ("b (c d) -> d b c", [(2, 6)], {"d": 3})}

MODES = {
    "unbounded": lambda name: getattr(ex, name),
    "static": api.specialised,
    "static via the backend": lambda name: getattr(_Specialised(api), name),
}


def test_every_einx_operation_is_known():
    # an operation einx adds (or a new alias) must be classified, or the modes disagree on it again
    unknown = [n for n in EINX_OPS if n not in FAMILY and n not in api.ALIASES and n not in api.REMOVED]
    assert EINX_OPS and unknown == []
    assert set(PROGRAMS) >= set(api.ALIASES.values())


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("alias", sorted(api.ALIASES))
def test_alias_runs_in_every_mode(alias, mode):
    desc, shapes, params = PROGRAMS[api.ALIASES[alias]]
    xs = [torch.arange(int(np.prod(s)), dtype=torch.float32).reshape(s) for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = getattr(einx, alias)(desc, *xs, **params)
    got = MODES[mode](alias)(desc, *xs, **params)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    # the alias is the op: same graph signature as the op's own name
    assert MODES[mode](alias)(desc, *xs, graph=True, **params) == MODES[mode](api.ALIASES[alias])(desc, *xs, graph=True, **params)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("op", sorted(FAMILY))
def test_every_op_name_resolves_in_every_mode(op, mode):
    assert callable(MODES[mode](op))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", api.REMOVED)
def test_removed_operations_raise_einx_error_in_every_mode(name, mode):
    from einx._src.frontend.removed_ops import RemovedOperationError

    with pytest.raises(RemovedOperationError):
        MODES[mode](name)("a -> a", torch.zeros(2))


def test_unknown_name_is_one_clear_error():
    with pytest.raises(AttributeError, match="no operation 'rearange'"):
        api.specialised("rearange")
