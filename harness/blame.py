"""Whose failure an exception is: the system's (``error``) or our reference
implementations' (``crash``).

An exception is ours when the line that raised it is in ``engines/`` and it is
no named refusal: one of the builtin types Python itself raises on a wrong
program (:data:`BUGS`: ``AttributeError``, ``KeyError``, ``AssertionError``, …), not
a class a module defines to say "this cannot be done here" (``LoweringError``,
``Unsupported``, a system's own errors) nor the builtins our engines raise on
purpose with a reason (``NotImplementedError``, ``ValueError``, ``TypeError``:
"no lowering for …", "symbolic floats are not supported").
"""

from __future__ import annotations

from pathlib import Path

#: the exception types that say the code is wrong, not that a case cannot run
BUGS = (AttributeError, KeyError, IndexError, NameError, UnboundLocalError, AssertionError, ZeroDivisionError, RecursionError)

#: our reference implementations: a builtin exception raised here is a bug of ours
ENGINES = Path(__file__).resolve().parent.parent / "engines"


def raised_at(e: BaseException) -> str | None:
    """The file of the innermost frame of ``e``'s traceback (where it was raised)."""
    tb = e.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename


def ours(e: BaseException) -> bool:
    """Whether ``e`` is an internal error of ``engines/`` (status ``crash``)."""
    if type(e) not in BUGS:  # exactly: a library's own subclass of KeyError is named
        return False  # a named class (a refusal, the system's own error) or a builtin raised with a reason
    where = raised_at(e)
    if where is None:
        return False
    try:
        return Path(where).resolve().is_relative_to(ENGINES)
    except (OSError, ValueError):
        return False
