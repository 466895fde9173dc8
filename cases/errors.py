"""The catalogue's one error type (its own module, so that :mod:`cases.inputs` and
:mod:`cases.model`, which use each other, both import it without a cycle)."""


class CaseError(ValueError):
    """A case definition or lookup is invalid; the message names the case."""
