"""Errors of the symbolic einx.

Each class subclasses einx 0.4.3's exception of the same name (``NotationSyntaxError``: einx's
``SyntaxError``), so code that
catches ``einx.errors.SemanticError`` (etc.) also catches ours.  Every message
quotes the description with the offending characters marked by ``^``.
"""

import einx.errors as _ee

__all__ = [
    "AxisSizeError",
    "CallOperationError",
    "EinxError",
    "InputCountError",
    "NotSupportedError",
    "NotationSyntaxError",
    "OpValueError",
    "RankError",
    "SemanticError",
    "mark",
]

EinxError = _ee.EinxError


def shown(ch):
    """How character ``ch`` of a description is printed: itself, or escaped
    (``\\n``, ``\\t``, ``\\x00``) when it would break the two-line indicator."""
    return ch if ch.isprintable() else repr(ch)[1:-1]


def mark(description, pos=()):
    """Return the einx-style two-line indicator for ``pos`` in ``description``
    (a control character is printed escaped, with as many markers as it takes)."""
    pos = set(pos)
    text = "".join(shown(c) for c in description)
    marks = "".join(("^" if i in pos else " ") * len(shown(c)) for i, c in enumerate(description))
    return f'Expression: "{text}"\n' + " " * 13 + marks


def _message(description, message, pos):
    if description is None:
        return message
    ind = mark(description, pos or ())
    return message.replace("%EXPR%", ind) if "%EXPR%" in message else message + "\n" + ind


class NotationSyntaxError(_ee.SyntaxError):
    """einx's ``SyntaxError`` (a subclass: ``except einx.errors.SyntaxError`` catches it), named so as
    not to shadow the builtin ``SyntaxError`` where it is imported."""

    def __init__(self, description, message, pos=None):
        self.pos = list(pos or [])
        _ee.EinxError.__init__(self, _message(description, message, self.pos))


class RankError(_ee.RankError):
    def __init__(self, description, message, pos=None):
        self.pos = list(pos or [])
        _ee.EinxError.__init__(self, _message(description, message, self.pos))


class AxisSizeError(_ee.AxisSizeError):
    def __init__(self, description, message, pos=None):
        self.pos = list(pos or [])
        _ee.EinxError.__init__(self, _message(description, message, self.pos))


class SemanticError(_ee.SemanticError):
    def __init__(self, description, message, pos=None):
        self.pos = list(pos or [])
        _ee.EinxError.__init__(self, _message(description, message, self.pos))


class InputCountError(SemanticError, ValueError):
    """The description's inputs and the arguments differ in number (a ``ValueError`` too,
    which is what einx 0.4.3 raises there)."""


class NotSupportedError(_ee.OperationNotSupportedError):
    """A corner of the notation that einx accepts but this implementation does not (yet)."""

    def __init__(self, description, message, pos=None):
        self.pos = list(pos or [])
        _ee.EinxError.__init__(self, _message(description, "einx_symbolic does not support this: " + message, self.pos))


CallOperationError = _ee.CallOperationError


class OpValueError(ValueError):
    """A ``ValueError`` einx raises as is (not inside ``CallOperationError``) that our graph raises after its checks."""
