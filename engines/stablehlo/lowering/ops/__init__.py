"""Op lowerings, one module per family; importing this fills the registry."""

from . import (  # noqa: F401
    attention,
    bessel,
    cholesky,
    control,
    conv,
    creation,
    distance,
    elementwise,
    index,
    linalg,
    lu,
    movement,
    norm,
    polynomials,
    pool,
    qr,
    reduce,
    scan,
    scatter,
    selection,
    sort,
    special,
    spectral,
    symint,
)
from .prims import alias_prims

alias_prims()
