"""Op lowerings, one module per family; importing this fills the registry."""
from . import symint, elementwise, creation, reduce, movement, linalg, conv, index, norm, sort, pool, control, \
    attention  # noqa: F401
