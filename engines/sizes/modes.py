"""The four ways a dynamic dim is presented to a backend: ``static`` (every
size concrete), ``bounded`` (a symbol with a maximum), ``unbounded`` (a symbol)
and ``bucketed`` (sizes padded up to a power-of-two bucket)."""

MODES = ("static", "bounded", "unbounded", "bucketed")
