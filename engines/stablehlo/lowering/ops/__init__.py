"""Op lowerings, one module per family; importing this fills the registry."""

from . import attention, control, conv, creation, elementwise, index, linalg, movement, norm, pool, reduce, sort, symint  # noqa: F401
