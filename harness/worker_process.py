"""A worker process as the runner watches it: its stderr's last lines (what a
record of a dead worker quotes), whether they say it ran out of memory, and
how it is killed (its whole process group)."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading

from . import forkserver


class WorkerTail:
    """The last lines of a worker's stderr, read after its pump has drained the pipe."""

    def __init__(self, lines: collections.deque, pump: threading.Thread):
        self.lines, self.pump = lines, pump

    def append(self, line: str) -> None:
        self.lines.append(line)

    def __iter__(self):
        self.pump.join(timeout=5)
        return iter(list(self.lines))


def looks_oom(tail) -> bool:
    """Whether a dead worker's stderr says an allocation failed (C++ or C): the
    whole kept tail, since the Python traceback after an abort can run past 20 lines."""
    text = "\n".join(tail)
    return any(s in text for s in ("std::bad_alloc", "MemoryError", "Cannot allocate memory", "out of memory"))


def pump(stream, put, eof: bool = False) -> None:
    """Feed ``stream``'s lines to ``put``; then ``None`` if ``eof``."""
    for line in stream:
        put(line.rstrip("\n"))
    if eof:
        put(None)


def tail_text(tail) -> str:
    """The last lines of a worker's stderr, on one line. After a fatal signal
    (Python's faulthandler is on in workers): the lines before ``Fatal Python
    error``, that line, and the two innermost frames of the crashing thread."""
    lines = [l.strip() for l in tail if l.strip() and not l.startswith("Extension modules:")]
    fatal = [i for i, l in enumerate(lines) if l.startswith("Fatal Python error")]
    if fatal:
        f = fatal[-1]
        frames = [l for l in lines[f + 1 :] if l.startswith("File ")][:2]
        lines = lines[max(0, f - 3) : f + 1] + frames
    return " | ".join(lines[-8:])[-1500:] or "(empty)"


def kill(proc: forkserver.WorkerProcess) -> None:
    assert proc.pid is not None  # forkserver.start returns a ForkedProcess only once it has its pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
