"""``run``: plan the jobs, run them (here, or on a Dask cluster), then print a
screenful and write the HTML report and the CSV beside the records."""

from __future__ import annotations

import sys

import cases
from harness import limits, results, stats
from harness.runner import DEFAULT_REPEATS, DEFAULT_WARMUP

from . import common

NAME = "run"


def add_parser(sub) -> None:
    """Which jobs, the profile, timing, isolation and where they run."""
    run = sub.add_parser(NAME, help="run jobs; print a summary, write the HTML report and the CSV")
    common.selection(run)
    run.add_argument(
        "--cases-from",
        action="append",
        metavar="FILE",
        help="a Python file whose CASES (or dynshape.case calls) add cases, no install; repeatable "
        "(without --cases, only the files' cases run)",
    )
    prof = run.add_mutually_exclusive_group()
    prof.add_argument("--quick", dest="profile", action="store_const", const="quick", help="short sweeps (the default profile)")
    prof.add_argument("--full", dest="profile", action="store_const", const="full", help="each case's whole sweep")
    # the generated model zoo (cases/zoo*.py): only its cases, each on its whole sweep (harness/profiles.py)
    prof.add_argument("--profile", dest="profile", choices=cases.PROFILES, help="a profile by name (zoo: the model zoo's cases)")
    run.add_argument(
        "--whole-matrix",
        action="store_true",
        help="also the jobs the quick profile leaves out to fit its budget (harness/profiles.py; "
        "the report lists them under 'Not run')",
    )
    run.set_defaults(profile="quick")
    run.add_argument("--out", default="results", help="directory for the run's JSONL (default: results/)")
    run.add_argument(
        "--jobs", type=common.in_range("jobs"), default=1, help="workers at a time, 1-64 (timings are cleaner with 1)"
    )
    run.add_argument(
        "--repeats",
        type=common.in_range("repeats"),
        default=DEFAULT_REPEATS,
        help="timed repeats per shape in the cached phase (1-10000)",
    )
    run.add_argument(
        "--warmup",
        type=common.in_range("warmup"),
        default=DEFAULT_WARMUP,
        help="warm-up calls per shape before the cached phase (0-1000)",
    )
    run.add_argument("--timeout", type=common.in_range("timeout", float), help="seconds per job (default: the backend's)")
    run.add_argument(
        "--max-memory",
        type=common.memory,
        default=limits.default_bytes(),
        metavar="SIZE",
        help=f"memory each job may allocate once its backend has started (forked or spawned alike): 8G, 512M, 50%% (of the machine) or 0 for no limit; past "
        f"it the job is recorded as oom (default: {limits.DEFAULT_FRACTION * 100:.0f}%% of this machine, "
        f"{limits.fmt(limits.default_bytes())})",
    )
    run.add_argument(
        "--fresh",
        action="store_true",
        help="run every job, even those whose case, backend, engine code, versions and settings are unchanged "
        "since a run in --out (by default those are taken from it: harness/incremental.py)",
    )
    run.add_argument(
        "--resume", metavar="RUN_ID", help="finish an interrupted run: run its missing and incomplete jobs, appending to it"
    )
    run.add_argument(
        "--threads",
        type=common.in_range("threads"),
        default=1,
        help="threads per worker for torch, BLAS and XLA alike (default 1, steadier timings; 0: the frameworks' defaults)",
    )
    run.add_argument("--trace", metavar="DIR", help="set TORCH_TRACE per job to DIR/<job> (dynamo/inductor logs for tlparse)")
    run.add_argument("--warm-cache", action="store_true", help="keep on-disk compile caches between runs")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--no-fork-server",
        action="store_true",
        help="spawn every worker as a new interpreter instead of forking it from the environment's "
        "fork server, which imported torch, numpy and jax once (also: DYNSHAPE_FORK_SERVER=0)",
    )
    run.add_argument(
        "--shard", metavar="i/n", help="run only shard i of n of the selected jobs (every n-th by id; `merge` joins the shards)"
    )
    common.scheduler(run, "run each job's worker")
    run.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="repeat each job's novel phase in N fresh workers, keeping every sample "
        f"(compare needs {stats.MIN_SAMPLES} to call a novel-sweep change significant)",
    )

    run.add_argument(
        "--versions",
        action="append",
        default=[],
        metavar="SYSTEM=V1,V2",
        help="run each backend of SYSTEM (torch: needs torch only; jax: needs jax) once per release, in that "
        "release's environment (backends/envs.py: torch 2.9.1, 2.13.0; jax 0.10.2, 0.12.0.1); repeatable; "
        "then `compare --by version RUN`",
    )


def main(args) -> int:
    if args.resume:
        planned = _resumed(args)
    else:
        planned = _planned(args)
    if isinstance(planned, int):
        return planned
    r, combos = planned
    combos = packs_missing(combos)
    from harness import expectations

    # a typo'd rule must stop the run before its jobs, not after them (the report judges by these rules)
    expectations.load()
    if not args.resume:
        from harness import incremental

        combos = incremental.apply(r, combos, fresh=args.fresh, say=lambda m: print(m, file=sys.stderr))
    try:
        if args.scheduler and not combos:
            path = r.path  # every job was taken from an earlier run: no cluster to start
        elif args.scheduler:
            from harness import cluster

            path = cluster.run(r, combos, common.scheduler_address(args), jobs=args.jobs)
        else:
            path = r.run(combos, jobs=args.jobs)
    except KeyboardInterrupt:
        print(
            f"\ndynshape: interrupted; every record written is kept in {r.path}; finish the run with\n"
            f"  dynshape run --resume {r.run_id} --out {args.out}",
            file=sys.stderr,
        )
        return common.EXIT_INTERRUPTED
    return _reported(path)


def _resumed(args):
    """``--resume``: the runner and the planned jobs still missing, or an exit code."""
    from harness import resume

    chosen = [
        f
        for f, v in (
            ("--cases", args.cases),
            ("--backends", args.backends),
            ("--modes", args.modes),
            ("--shard", args.shard),
            ("--scheduler", args.scheduler),
            ("--versions", args.versions),
            ("--fresh", args.fresh),
        )
        if v
    ]
    if chosen:
        print(f"dynshape: --resume runs the jobs the run planned; drop {', '.join(chosen)}", file=sys.stderr)
        return common.EXIT_USAGE
    r, combos = resume.resume(
        args.out, args.resume, progress=not args.no_progress, fork_server=False if args.no_fork_server else None
    )
    print(f"run {r.run_id}: resuming, {len(combos)} jobs missing or incomplete → {r.path}", file=sys.stderr)
    return r, combos


def _planned(args):
    """A new run: the runner and its jobs (selection, profile, releases, shard), or an exit code."""
    from harness import releases, runner

    common.check_out(args.out)
    args.cases = cases_from(args.cases_from, args.cases)
    combos = runner.plan(args.cases, args.backends, args.modes, profile=args.profile, whole=args.whole_matrix)
    if args.versions:
        from backends import envs

        try:
            combos = releases.with_versions(combos, envs.parse_versions(args.versions))
        except envs.EnvError as e:
            print(f"dynshape: {e}", file=sys.stderr)
            return common.EXIT_USAGE
    if not combos:
        print("dynshape: nothing to run: no case has the selected modes", file=sys.stderr)
        return common.EXIT_USAGE
    if args.shard:
        from harness import shards

        i, n = shards.parse(args.shard)
        combos = shards.select(combos, i, n)
        print(f"shard {i}/{n}: {len(combos)} jobs", file=sys.stderr)
        if not combos:
            print(f"dynshape: shard {i}/{n} of the selection is empty", file=sys.stderr)
            return common.EXIT_USAGE
    r = runner.Runner(
        args.out,
        profile=args.profile,
        repeats=args.repeats,
        warmup=args.warmup,
        timeout_s=args.timeout,
        warm_cache=args.warm_cache,
        progress=not args.no_progress,
        threads=args.threads or None,
        trace_dir=args.trace,
        max_memory=args.max_memory,
        processes=args.processes,
        fork_server=False if args.no_fork_server else None,
    )
    print(f"run {r.run_id}: {len(combos)} jobs, profile {args.profile} → {r.path}", file=sys.stderr)
    return r, combos


def _reported(path) -> int:
    """The finished run's CSV and HTML report, its screenful, and the exit code of its verdicts."""
    from harness import check, html_report, report

    try:
        df = results.load([path])
        summary = report.summary(df)
        verdicts = check.verdicts(df, [path], by=report.job_by(summary))
        summary = report.annotate(summary, df, judged=verdicts)
        csv = path.with_suffix(".report.csv")
        report.csv_frame(summary).to_csv(csv, index=False)
        page = path.with_suffix(".report.html")
        html = html_report.render(df, title=f"dynshape: {path.stem}", judged=verdicts, summarised=summary)
        page.write_text(html, encoding="utf-8")
    except KeyboardInterrupt:  # the run is complete: only its report was cut short
        print(
            f"\ndynshape: interrupted while reporting; the run is complete in {path}; its report:\n  dynshape report {path}",
            file=sys.stderr,
        )
        return common.EXIT_INTERRUPTED
    # a screenful, whatever the run's size: the table is `dynshape report`'s
    print(report.run_summary(summary, verdicts, str(path), {"HTML report": page, "report CSV": csv, "records": path}))
    return common.exit_code(verdicts)


def cases_from(files, case_globs):
    """Load the ``--cases-from`` files (:func:`cases.packs.use_files`); the case
    globs: as given, else the files' cases."""
    if not files:
        return case_globs
    from cases import packs

    return case_globs or ",".join(c.name for c in packs.use_files(*files))


def packs_missing(combos):
    """Each job whose case comes from a pack its backend's environment lacks,
    planned as skipped saying so (and one line on stderr per pack and
    environment), before any job runs: it used to fail with ``unknown case``."""
    import dataclasses

    from harness import pack_envs

    family = cases.families()
    out, said = [], set()
    for c in combos:
        pack = family.get(c.case.name, "")
        why = pack_envs.missing_reason(pack[5:] if pack.startswith("pack:") else None, c.env_name)
        if why and not c.skip_reason():
            if why not in said:
                said.add(why)
                print(f"dynshape: warning: {why}; its jobs there are skipped", file=sys.stderr)
            c = dataclasses.replace(c, left_out=why)
        out.append(c)
    return out
