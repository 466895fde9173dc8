"""A guard: a comparison of sizes a step's program forced, and its result (``LazyContext.guard``)."""

from __future__ import annotations

import dataclasses

from engines.sizes import Expr

from .symbolic import rename


@dataclasses.dataclass(frozen=True)
class Guard:
    """``lhs op rhs`` held (``result``) when the program forced a size (``reason``).

    ``vars``: the variable names in it; ``names``: ``(name, display name)``
    pairs for those the user named (``str()`` shows those names)."""

    lhs: Expr
    op: str
    rhs: Expr
    result: bool
    reason: str
    vars: frozenset = frozenset()
    names: tuple = ()

    def fmt(self, fmt=None) -> str:
        """The guard as text, each side written by ``fmt`` (default: display names)."""
        if fmt is None:

            def fmt(e):
                return rename(e, self.names)

        return f"{fmt(self.lhs)} {self.op} {fmt(self.rhs)} is {self.result} ({self.reason})"

    def __str__(self) -> str:
        return self.fmt()
