"""Op lowerings, one module per family; importing this fills the registry."""

from . import (  # noqa: F401
    airy,
    attention,
    bessel,
    bessel_jy,
    bessel_k,
    complex,
    control,
    conv,
    creation,
    elementwise,
    erfcx,
    floatbits,
    igamma,
    index,
    linalg,
    masked,
    movement,
    norm,
    polynomials,
    pool,
    random,
    reduce,
    selection,
    sort,
    special,
    symint,
)
from .prims import alias_prims

alias_prims()
