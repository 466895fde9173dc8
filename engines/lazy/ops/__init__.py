"""The lazy path's ops, one module per family; importing this fills the registry.

Every op records one node whose ``args``/``kwargs`` are exactly what its
runtime callable (``LOWER[op]``) takes, with tensors as Nodes and sizes as
:class:`engines.sizes.Expr`. Families: :mod:`.elementwise`, :mod:`.reduce`,
:mod:`.movement`, :mod:`.index`, :mod:`.linalg`, :mod:`.creation`,
:mod:`.inplace`, :mod:`.layers` (conv2d, batch_norm); registration and recording in :mod:`.registry`, shape and
dtype rules in :mod:`.rules`.
"""

from ..tensor import install_methods
from . import creation, datadep, elementwise, index, inplace, layers, linalg, meta, movement, order, reduce  # noqa: F401  (fill the registry)
from .reduce import MaxResult
from .registry import F_OPS, LOWER, METHODS, OPS, ShapeError, covered_ops, lazy_op, lift, record

install_methods(METHODS)

__all__ = ["F_OPS", "LOWER", "METHODS", "OPS", "MaxResult", "ShapeError", "covered_ops", "lazy_op", "lift", "record"]
