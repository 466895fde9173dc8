"""What the commands share: exit codes, the range rule of numeric flags, the
``--cases/--backends/--modes`` selection and its records, the ``--out`` check."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import limits, results

#: exit codes: every job as expected; a job ended otherwise than
#: ``cases/expectations.toml`` says (or B regressed, for ``compare``); bad
#: usage (an unknown name, a value out of range); interrupted (Ctrl-C)
EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: the allowed range of each numeric flag
RANGES = {
    "jobs": (1, 64),
    "repeats": (1, 10_000),
    "warmup": (0, 1_000),
    "threads": (0, 1_024),
    "timeout": (1.0, 86_400.0),
    "max_slowdown": (1.0, 1_000.0),
}


def in_range(name: str, kind=int):
    """An argparse type: ``kind`` within ``RANGES[name]``, else a usage error naming the range."""
    lo, hi = RANGES[name]

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(
                f"must be {'an integer' if kind is int else 'a number'} in [{lo}, {hi}], got {text!r}"
            )
        return v

    return parse


def memory(text: str):
    """An argparse type: a memory size (:func:`harness.limits.parse`)."""
    try:
        return limits.parse(text)
    except limits.LimitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def selection(p: argparse.ArgumentParser) -> None:
    """``--cases/--backends/--modes``: the jobs a command looks at (every command that selects jobs)."""
    for what in ("cases", "backends", "modes"):
        p.add_argument(f"--{what}", help=f"only these {what} (comma-separated globs; default: all)")


def scheduler(p: argparse.ArgumentParser, what: str) -> None:
    """``--scheduler [ADDRESS]``: ``what`` on a Dask cluster at ADDRESS, without one on a LocalCluster."""
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        nargs="?",
        const="local",
        help=f"{what} on a Dask distributed cluster at ADDRESS (tcp://host:8786); "
        "without an address, on a LocalCluster (needs the 'distributed' extra)",
    )


def scheduler_address(args) -> str | None:
    """The cluster ``--scheduler`` names: its address, or ``None`` for a LocalCluster."""
    return None if args.scheduler == "local" else args.scheduler


def results_dir(p: argparse.ArgumentParser, what: str) -> None:
    """``--results``: where a command looks for runs."""
    p.add_argument("--results", default="results", help=f"{what} (default: results/)")


def select_records(df, args, case=None):
    """Records of the jobs the ``--cases/--backends/--modes`` globs (or ``case``) select."""
    from harness import report

    jobs = df[["case", "backend", "mode"]].drop_duplicates()
    keep = report.select(jobs, case or args.cases, args.backends, args.modes)
    return df.merge(keep, on=["case", "backend", "mode"])


def exit_code(verdicts) -> int:
    """The exit code of ``run`` and ``report --check``: :func:`harness.check.exit_code`."""
    from harness import check

    return check.exit_code(verdicts)


def check_out(out: str) -> None:
    """Make sure ``--out`` can hold the run (a directory this process can
    write in) before any job runs, else a :class:`results.ResultsError`
    naming it: a file there, or a read-only directory, used to surface as a
    traceback once the run began."""
    import tempfile

    p = Path(out)
    if p.exists() and not p.is_dir():
        raise results.ResultsError(f"--out {out}: is a file, not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as e:
        raise results.ResultsError(f"--out {out}: cannot write there: {e.strerror or e}") from None
