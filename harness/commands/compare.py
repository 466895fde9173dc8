"""``compare``: two runs, or the releases of one run (``--by version``)."""

from __future__ import annotations

import sys

from . import common

NAME = "compare"


def add_parser(sub) -> None:
    """``compare``: two runs, or the releases of one run (``--by version``)."""
    cmp = sub.add_parser(
        NAME,
        help="compare two runs (files, directories, run ids or commits), or with --by version the releases of one run",
    )
    cmp.add_argument("a", nargs="?", help="run A (with --by version: the run; default the latest)")
    cmp.add_argument("b", nargs="?", help="run B (not with --by version)")
    cmp.add_argument(
        "--by",
        choices=("run", "version"),
        default="run",
        help="run: B against A (default); version: per system, each release of one `run --versions` "
        "run against the one before it",
    )
    cmp.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on a regression (by run it always does; by version only with --check)",
    )
    common.results_dir(cmp, "where run ids and commits are looked up")
    cmp.add_argument(
        "--max-slowdown",
        type=common.in_range("max_slowdown", float),
        default=1.5,
        help="B/A latency ratio above which a significant change counts as a regression (default 1.5)",
    )
    cmp.add_argument("--force", action="store_true", help="compare runs of different profiles, machines or thread settings")


def main(args) -> int:
    from harness import check, compare, results

    if args.by == "version":
        return _compare_versions(args)
    if args.a is None or args.b is None:
        print("dynshape: compare needs two runs A and B (or --by version and one run)", file=sys.stderr)
        return common.EXIT_USAGE
    a, b = compare.resolve(args.a, args.results), compare.resolve(args.b, args.results)
    da, db = results.load([a]), results.load([b])
    df = compare.compare(da, db, args.max_slowdown, force=args.force)
    print(f"A: {a}\nB: {b}\n")
    print(compare.markdown(df))
    gaps = check.compare_gaps(da, db, a, b)  # jobs in one run only, holes: never dropped silently
    if gaps.lines:
        print("\nNot compared:\n" + "\n".join(f"- {line}" for line in gaps.lines))
    bad = df[df["regression"]] if len(df) else df
    if len(bad) or gaps.failures:
        print(
            f"\n{len(bad)} regression(s): significant and beyond {args.max_slowdown}×, or in compile counts "
            f"or status; {gaps.failures} job(s) missing from B or with holes in B",
            file=sys.stderr,
        )
        return 1
    return 0


def _compare_versions(args) -> int:
    from harness import compare, results

    if args.b is not None:
        print(f"dynshape: compare --by version reads one run, not two (drop {args.b!r})", file=sys.stderr)
        return common.EXIT_USAGE
    path = compare.resolve(args.a, args.results) if args.a else results.run_files(None, args.results)[0]
    df = results.load([path])
    changes = compare.by_version(df, args.max_slowdown)
    print(f"run: {path}\n")
    print(compare.versions_markdown(df, changes))
    bad = changes[changes["regression"]] if len(changes) else changes
    if len(bad):
        print(
            f"\n{len(bad)} regression(s) from one release to the next: in status or compile counts, or "
            f"significant and beyond {args.max_slowdown}×",
            file=sys.stderr,
        )
    return common.EXIT_UNEXPECTED if args.check and len(bad) else common.EXIT_OK
