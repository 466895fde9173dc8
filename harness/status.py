"""One status type: how a job (or one record of it) ended, worst first."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Status(enum.StrEnum):
    """How a record ended: the one status type. Members are declared worst
    first (a job's status is the worst of its records) and compare equal to
    their value, the string a record holds."""

    #: the worker died (a signal, an abort): the system took the process down
    CRASHED = "crashed"
    #: our reference implementation (``engines/``) raised an error that is no named refusal: a bug of ours
    CRASH = "crash"
    OOM = "oom"
    TIMEOUT = "timeout"
    #: the system failed (its own exception)
    ERROR = "error"
    MISMATCH = "mismatch"
    RECOMPILED = "recompiled"
    #: a sweep size outside the range the system narrowed the job to (the narrowed range in ``narrowed``)
    OUT_OF_RANGE = "out_of_range"
    SKIPPED = "skipped"
    UNSUPPORTED = "unsupported"
    PASS = "pass"

    @classmethod
    def worst(cls, statuses: Iterable[str]) -> Status:
        """The worst of ``statuses`` (strings or members)."""
        order = list(cls)
        return min((cls(s) for s in statuses), key=order.index)

    @property
    def idle(self) -> bool:
        """A job of this status never measured anything (refused before running, or left out)."""
        return self in (Status.UNSUPPORTED, Status.SKIPPED)

    @property
    def no_output(self) -> bool:
        """A record of this status produced no output (the call failed or the worker went)."""
        return self in (Status.CRASHED, Status.CRASH, Status.OOM, Status.TIMEOUT, Status.ERROR)
