"""``history``: compiles (per shape) and latency by commit, from runs and asv results."""

from __future__ import annotations

import sys

from . import common

NAME = "history"


def add_parser(sub) -> None:
    """``history``: compiles and latency by commit."""
    his = sub.add_parser(NAME, help="compiles (per shape) and latency by commit, from runs and asv results")
    his.add_argument("paths", nargs="*", help="JSONL files or directories (default: every run in --results)")
    his.add_argument("--since", metavar="REV", help="only runs and asv results at REV and the commits after it")
    common.results_dir(his, "where runs (and asv/, asv's results) are")
    his.add_argument("--asv", metavar="DIR", help="asv's results directory (default: RESULTS/asv)")
    his.add_argument("--csv", help="also write the table as CSV")
    his.add_argument(
        "--rows", action="store_true", help="per backend and mode: jobs passed, compiled once, compiles, by commit, with changes"
    )
    common.selection(his)


def main(args) -> int:
    from harness import history, report

    df = history.history(args.paths, args.results, since=args.since, asv_dir=args.asv)
    df = report.select(df, args.cases, args.backends, args.modes)
    if args.rows:
        from harness import row_history

        df = row_history.rows(df)
        print(row_history.markdown(df))
    else:
        print(history.markdown(df))
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"\nhistory CSV: {args.csv}", file=sys.stderr)
    return 0
