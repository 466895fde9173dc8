"""Op lowerings, one module per family; importing this fills the registry."""

from . import (  # noqa: F401
    attention,
    bessel,
    control,
    conv,
    creation,
    distance,
    elementwise,
    index,
    linalg,
    movement,
    norm,
    polynomials,
    pool,
    reduce,
    scan,
    scatter,
    selection,
    sort,
    special,
    symint,
)
from .prims import alias_prims

alias_prims()
