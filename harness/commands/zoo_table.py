"""``zoo-table``: the model zoo's pass rates per backend and mode, and its failure classes."""

from __future__ import annotations

from harness import results

from . import common

NAME = "zoo-table"


def add_parser(sub) -> None:
    zt = sub.add_parser(NAME, help="the model zoo's pass rates per backend and mode, and its failure classes (Markdown)")
    zt.add_argument("paths", nargs="*", help="JSONL files or directories (default: the latest run)")
    zt.add_argument("--results", default="results", help="where the latest run is looked for")
    zt.add_argument("--failures", action="store_true", help="also the failure classes: per path and stage, message and cases")
    zt.add_argument("--skipped", action="store_true", help="only the enumerated architectures the zoo leaves out, and why")
    zt.add_argument(
        "--by-library",
        action="store_true",
        help="also the table and the leaderboard per library (transformers, … diffusers) and overall",
    )
    zt.add_argument(
        "--cost",
        type=common.in_range("jobs"),
        nargs="?",
        const=2,
        metavar="JOBS",
        help="also the wall time per backend and mode (at --jobs JOBS, default 2)",
    )


def main(args) -> int:
    from harness import zoo_table

    if args.skipped:
        from cases import zoo

        print(zoo_table.skipped_markdown(zoo.skipped()))
        return common.EXIT_OK
    df = results.load(results.run_files(args.paths, args.results))
    print(zoo_table.markdown(zoo_table.table(df)))
    print("\n" + zoo_table.goals_markdown(zoo_table.goals(df)))
    from harness import zoo_versus

    head_to_head = zoo_versus.markdown(zoo_versus.versus(df))
    if head_to_head:
        print("\n" + head_to_head)
    if args.failures:
        print("\n" + zoo_table.failures_markdown(zoo_table.failures(df)))
    if args.by_library:
        from harness import zoo_reports

        print("\n" + zoo_reports.by_library_markdown(df))
    if args.cost:
        from harness import row_cost

        print("\n" + row_cost.markdown(row_cost.costs(df), jobs=args.cost))
    return common.EXIT_OK
