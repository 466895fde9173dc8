"""A failure's message as tables show it: the system's diagnosis in words where a
record has one, else the lines that name the failure; and the class two failures
alike share. The record keeps the message whole; only what is shown is cut."""

from __future__ import annotations

import re

#: lines of a message a table shows (the record keeps all of it)
SHOWN_LINES = 3
_RAISED = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def headline(message: str | None, diagnosis: dict | None = None) -> str:
    """The line that names a failure: the diagnosis's words (torch.export's broken guard
    or suggested fix), a traceback's last exception line (a worker's failure), else the
    first line."""
    if isinstance(diagnosis, dict) and diagnosis.get("words"):
        return str(diagnosis["words"])
    lines = (message or "").strip().splitlines()
    if not lines:
        return ""
    if len(lines) > 1 and any(line.lstrip().startswith('File "') for line in lines):
        raised = [line.strip() for line in lines if _RAISED.match(line)]
        if raised:
            return raised[-1]
    return lines[0]


def shown(message: str | None, diagnosis: dict | None = None, lines: int = SHOWN_LINES) -> str:
    """What a table shows of a failure: its :func:`headline`, then the message's first
    ``lines`` lines (``…`` where more follow), on one line."""
    head = headline(message, diagnosis)
    body = [line.strip() for line in (message or "").strip().splitlines() if line.strip()]
    more = " …" if len(body) > lines else ""
    text = " / ".join(body[:lines]) + more
    if head and not text.startswith(head):
        return f"{head} ({text})" if text else head
    return text


def failure_class(message: str, case: str) -> str:
    """The class of a failure's headline: the case's own name, a module's hash, quoted
    names and numbers blanked, so two cases failing alike share it."""
    named = re.sub(r"\[[0-9a-f]{8,}\]", "[…]", message.replace(case, "CASE"))
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", named))[:140]


def narrowed_words(narrowed: dict) -> str:
    """``ran on p in [4, inf] (declared [1, inf]): torch.export needs p ≥ 4: …``: the range a
    job ran under beside the case's declared one, and why (a record's ``narrowed``)."""

    def rng(lo_hi) -> str:
        lo, hi = lo_hi
        return f"[{lo}, {hi if hi is not None else 'inf'}]"

    ran, declared = narrowed.get("ran") or {}, narrowed.get("declared") or {}
    parts = [f"{d} in {rng(r)}" + (f" (declared {rng(declared[d])})" if d in declared else "") for d, r in ran.items()]
    parts += [f"{d} = {e}" for d, e in (narrowed.get("relations") or {}).items()]
    why = narrowed.get("why")
    return "ran on " + ", ".join(parts) + (f": {why}" if why else "")
