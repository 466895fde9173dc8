"""Which parameter combinations of an asv benchmark the running ``asv`` selected.

asv runs a class's ``setup_cache`` once, before the first of its benchmarks,
and tells it nothing of ``asv run -b REGEX``. The asv suite's compile tracking
(``benchmarks/suite.py``) runs its jobs there, two at a time, and must
run only the selected ones (``make asv-quick`` selects one case of ~1,000
jobs). The selection is recovered from the ``asv`` process that started this
one (an ancestor: asv → its fork server → ``setup_cache``), read from
``/proc``, and matched as asv matches it (:func:`selects`, the rule of
``asv.benchmarks.Benchmarks``). Where no ``asv`` ancestor can be read (another
platform, asv driven from Python, a test calling ``setup_cache``) the answer is
``None`` and the suite runs each combination when its benchmark asks for it:
the selection changes what is run ahead, never a result.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: the ``asv`` subcommands that take ``-b/--bench`` and run benchmarks
RUNNING = ("run", "continuous", "dev", "profile", "find")


def regexes_from_argv(argv: list[str]) -> list[str] | None:
    """The ``-b``/``--bench`` regexes of an ``asv`` command line (``[]``: no
    ``-b``, everything is selected), or ``None`` if ``argv`` is not an ``asv``
    command that runs benchmarks."""
    at = next((i for i, a in enumerate(argv[:3]) if Path(a).name == "asv" or (i and argv[i - 1] == "-m" and a == "asv")), None)
    if at is None:
        return None
    rest = argv[at + 1 :]
    if not any(a in RUNNING for a in rest):
        return None
    found, it = [], iter(rest)
    for a in it:
        if a in ("-b", "--bench"):
            found.append(next(it, ""))
        elif a.startswith("--bench="):
            found.append(a.split("=", 1)[1])
        elif a.startswith("-b") and not a.startswith("--"):
            found.append(a[2:])
    return found


def _ancestors(pid: int, proc: Path):
    """``(pid, argv)`` of each ancestor of ``pid``, nearest first."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            stat = (proc / str(pid) / "stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent
            argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            return
        yield pid, [a.decode(errors="replace") for a in argv if a]


def running_regexes(pid: int | None = None, proc: str | os.PathLike = "/proc") -> list[str] | None:
    """The ``-b`` regexes of the ``asv`` command that process ``pid`` (this one)
    runs under, ``[]`` if it gave none, ``None`` if it has no readable ``asv``
    ancestor."""
    for _, argv in _ancestors(os.getpid() if pid is None else pid, Path(proc)):
        got = regexes_from_argv(argv)
        if got is not None:
            return got
    return None


def selects(regexes: list[str], names: list[str], params: tuple) -> bool:
    """Whether asv, given ``regexes``, runs ``params`` (values) of any benchmark
    in ``names``: each regex is searched in ``name(repr(p0), repr(p1), ...)``,
    as ``asv.benchmarks.Benchmarks`` does."""
    if not regexes:
        return True
    shown = ", ".join(repr(p) for p in params)
    return any(re.search(r, f"{n}({shown})") for n in names for r in regexes)
