"""The lazy path's one bounded memo table (pure functions use :func:`functools.lru_cache`).

A step's sizes, leaves and signatures repeat the last step's, so the path memoises them;
:class:`Memo` is for tables whose hits are validated by the caller (a key by identity, a
value checked against the current step), which ``lru_cache`` cannot express."""

from __future__ import annotations


class Memo(dict):
    """A dict that forgets everything once it holds ``maxsize`` entries (hits: plain ``get``)."""

    __slots__ = ("maxsize",)

    def __init__(self, maxsize: int = 4096):
        super().__init__()
        self.maxsize = maxsize

    def put(self, key, value):
        """``self[key] = value`` (cleared first when full); returns ``value``."""
        if len(self) >= self.maxsize:
            self.clear()
        self[key] = value
        return value
