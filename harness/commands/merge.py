"""``merge``: join runs (shards from several machines) into one run file."""

from __future__ import annotations

import sys

NAME = "merge"


def add_parser(sub) -> None:
    """``merge``: shards into one run."""
    mrg = sub.add_parser(NAME, help="join runs (e.g. shards from several machines) into one run file")
    mrg.add_argument("paths", nargs="+", help="JSONL files or directories")
    mrg.add_argument("--out", required=True, help="the merged JSONL file (must not exist)")
    mrg.add_argument("--run-id", help="the merged run's id (default: a new one)")
    mrg.add_argument("--force", action="store_true", help="merge runs of different commits or profiles")


def main(args) -> int:
    from harness import shards

    out, n = shards.merge(args.paths, args.out, run_id=args.run_id, force=args.force)
    print(f"merged {n} records into {out}", file=sys.stderr)
    return 0
