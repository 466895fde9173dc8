"""Symbolic einx: einx 0.4.3 notation, one generated graph per signature.

    from engines import einx_symbolic as ex
    y = ex.divide("e d, e -> e d", d, c)
    ex.compile_count()  # graphs built in this process

Sizes are read from the inputs at run time; conditions the notation imposes
(equal sizes, divisibility) are checked by the generated code.
"""

from . import errors
from .api import OPS as _OPS
from .api import clear_cache, compile_count
from .shapes import check, matches, solve, solve_axes, solve_shapes

globals().update(_OPS)  # the ops and their aliases (``rearrange``)
# einx 0.4.3's removed operations: the same functions, raising its RemovedOperationError
from einx import arange, elementwise, reduce, vmap, vmap_with_axis  # noqa: E402

__all__ = sorted(_OPS) + [
    "compile_count",
    "clear_cache",
    "errors",
    "arange",
    "elementwise",
    "reduce",
    "vmap",
    "vmap_with_axis",
    "solve_shapes",
    "solve_axes",
    "solve",
    "matches",
    "check",
]
