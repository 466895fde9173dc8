"""The four ways a dynamic dim is presented to a backend: ``static`` (every
size concrete), ``bounded`` (a symbol with a maximum), ``unbounded`` (a symbol)
and ``bucketed`` (sizes padded up to a power-of-two bucket)."""

MODES = ("static", "bounded", "unbounded", "bucketed")


class BoundError(ValueError):
    """An input size above the bound a bounded program was built for (the one class: the
    harness's bounds check, the padding backends and the lazy engine raise it)."""
