"""``report``: the summary of runs, its checks, and its other tables (families, per shape, HTML)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import common

NAME = "report"


def add_parser(sub) -> None:
    """``report``: the summary, its checks and its other tables."""
    rep = sub.add_parser(NAME, help="summarise runs (default: the latest)")
    rep.add_argument("paths", nargs="*", help="JSONL files or directories")
    common.results_dir(rep, "where the latest run is looked for")
    rep.add_argument("--csv", help="where the CSV goes (default: beside the first input, .report.csv)")
    common.selection(rep)
    rep.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a job contradicts cases/expectations.toml, recompiled, has no rule, or is "
        "missing: planned (the run's .plan.json) but never ran, a shape or a cached phase "
        "without its records or samples, or (CI=true) its backend's environment absent",
    )
    rep.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="OUT.html",
        help="also write a self-contained HTML report with plots (default: beside the first run, .report.html)",
    )
    rep.add_argument(
        "--families",
        action="store_true",
        help="instead of the summary: backend/mode × case family, how many jobs compile "
        "none/once/per bucket/per shape (Markdown; CSV with --csv)",
    )
    rep.add_argument(
        "--per-shape",
        metavar="CASE",
        help="instead of the summary: one row per job and novel shape of CASE (Markdown; CSV with --csv)",
    )


def main(args) -> int:
    from harness import check, executors, leaderboard, report, results

    files = results.run_files(args.paths, args.results)
    df = results.load(files)
    dups = results.duplicates(df)
    if dups:  # a report would mix the attempts in its medians: say so, and --check fails
        print(
            f"dynshape: warning: {len(dups)} (job, shape, phase) keys have more than one record (an attempt "
            f"kept beside its retry?), e.g. {dups[0]}",
            file=sys.stderr,
        )
    if args.html is not None:
        from harness import html_report as html

        page = Path(args.html) if args.html else files[0].with_suffix(".report.html")

        df = common.select_records(df, args)
        page.write_text(html.render(df, title=f"dynshape: {', '.join(f.stem for f in files)}"), encoding="utf-8")
        print(f"HTML report: {page}", file=sys.stderr)
    if args.families:
        table = report.family_table(common.select_records(df, args))
        print(table.to_markdown())
        if args.csv:
            table.to_csv(args.csv)
            print(f"\nfamily CSV: {args.csv}", file=sys.stderr)
        return 0
    if args.per_shape:
        table = report.per_shape(common.select_records(df, args, case=args.per_shape))
        print(report.per_shape_markdown(table))
        if args.csv:
            table.to_csv(args.csv, index=False)
            print(f"\nper-shape CSV: {args.csv}", file=sys.stderr)
        return 0
    summary = report.summary(df)
    verdicts = check.verdicts(df, files, by=report.job_by(summary), warn=args.check)
    summary = report.annotate(summary, df, judged=verdicts)
    summary = report.select(summary, args.cases, args.backends, args.modes)
    board = leaderboard.leaderboard(common.select_records(df, args), summary)
    print(leaderboard.markdown(board) + "\n")
    if by_executor := executors.markdown(board):
        print("Our StableHLO module, bounded against unbounded, per executor:\n\n" + by_executor + "\n")
    print(report.markdown(summary))
    csv = Path(args.csv) if args.csv else files[0].with_suffix(".report.csv")
    report.csv_frame(summary).to_csv(csv, index=False)
    print(f"\nreport CSV: {csv}", file=sys.stderr)
    if args.check and dups:
        common.exit_code(verdicts)
        print(f"dynshape: --check fails: {len(dups)} duplicated record keys", file=sys.stderr)
        return common.EXIT_UNEXPECTED
    return common.exit_code(verdicts) if args.check else common.EXIT_OK
