"""Command line: ``python -m harness {list,run,report,compare,history,merge}`` (also ``dynshape``).

(Over 500 lines: one function per verb with its argument checks; the verbs move
to modules of their own when the next one is added.)
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import cases
from harness import limits, results, stats
from harness.runner import DEFAULT_REPEATS, DEFAULT_WARMUP

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


def _in_range(name: str, kind=int):
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


def _memory(text: str):
    try:
        return limits.parse(text)
    except limits.LimitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _selection(p: argparse.ArgumentParser) -> None:
    """``--cases/--backends/--modes``: the jobs a command looks at (every command that selects jobs)."""
    for what in ("cases", "backends", "modes"):
        p.add_argument(f"--{what}", help=f"only these {what} (comma-separated globs; default: all)")


def _results(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--results", default="results", help=f"{what} (default: results/)")


def _list_args(sub) -> None:
    """``list``: the catalogue."""
    ls = sub.add_parser(
        "list",
        help="cases × backends × modes and their availability",
        description="Cases × backends × modes and their availability. Modes: static (a program per shape), "
        "unbounded (symbolic dims), bounded (dims up to a maximum), bucketed (power-of-two buckets: "
        "our XLA executors compile the `?` module per bucket; the per-shape compilers pad inputs "
        "on the host with each input's neutral pad and slice the output back, backends/padding.py).",
    )
    ls.add_argument("--json", action="store_true", help="machine-readable output")


def _run_args(sub) -> None:
    """``run``: which jobs, the profile, timing, isolation and where they run."""
    run = sub.add_parser("run", help="run jobs; print a summary, write the HTML report and the CSV")
    _selection(run)
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
    run.add_argument("--jobs", type=_in_range("jobs"), default=1, help="workers at a time, 1-64 (timings are cleaner with 1)")
    run.add_argument(
        "--repeats",
        type=_in_range("repeats"),
        default=DEFAULT_REPEATS,
        help="timed repeats per shape in the cached phase (1-10000)",
    )
    run.add_argument(
        "--warmup",
        type=_in_range("warmup"),
        default=DEFAULT_WARMUP,
        help="warm-up calls per shape before the cached phase (0-1000)",
    )
    run.add_argument("--timeout", type=_in_range("timeout", float), help="seconds per job (default: the backend's)")
    run.add_argument(
        "--max-memory",
        type=_memory,
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
        type=_in_range("threads"),
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
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        nargs="?",
        const="local",
        help="run each job's worker on a Dask distributed cluster at ADDRESS (tcp://host:8786); "
        "without an address, on a LocalCluster (needs the 'distributed' extra)",
    )
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


def _report_args(sub) -> None:
    """``report``: the summary, its checks and its other tables."""
    rep = sub.add_parser("report", help="summarise runs (default: the latest)")
    rep.add_argument("paths", nargs="*", help="JSONL files or directories")
    _results(rep, "where the latest run is looked for")
    rep.add_argument("--csv", help="where the CSV goes (default: beside the first input, .report.csv)")
    _selection(rep)
    rep.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a job contradicts cases/expectations.toml, recompiled, has no rule, or is "
        "missing: planned (the run's .plan.json) but never ran, a shape or a cached phase "
        "without its records or samples, or (CI=true) its backend's environment absent",
    )
    rep.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML report with plots")
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


def _history_args(sub) -> None:
    """``history``: compiles and latency by commit."""
    his = sub.add_parser("history", help="compiles (per shape) and latency by commit, from runs and asv results")
    his.add_argument("paths", nargs="*", help="JSONL files or directories (default: every run in --results)")
    his.add_argument("--since", metavar="REV", help="only runs and asv results at REV and the commits after it")
    _results(his, "where runs (and asv/, asv's results) are")
    his.add_argument("--asv", metavar="DIR", help="asv's results directory (default: RESULTS/asv)")
    his.add_argument("--csv", help="also write the table as CSV")
    his.add_argument(
        "--rows", action="store_true", help="per backend and mode: jobs passed, compiled once, compiles, by commit, with changes"
    )
    _selection(his)


def _packs_args(sub) -> None:
    """``packs install``: a case pack into every environment."""
    pk = sub.add_parser("packs", help="case packs: install one into every environment a backend runs in")
    pk_sub = pk.add_subparsers(dest="packs_command", required=True)
    pki = pk_sub.add_parser(
        "install",
        help="install the case pack at PATH (its pyproject.toml) into every "
        "environment (.venv, .venv-xla), as an editable install, no build step",
    )
    pki.add_argument("path", help="the pack's directory")


def _merge_args(sub) -> None:
    """``merge``: shards into one run."""
    mrg = sub.add_parser("merge", help="join runs (e.g. shards from several machines) into one run file")
    mrg.add_argument("paths", nargs="+", help="JSONL files or directories")
    mrg.add_argument("--out", required=True, help="the merged JSONL file (must not exist)")
    mrg.add_argument("--run-id", help="the merged run's id (default: a new one)")
    mrg.add_argument("--force", action="store_true", help="merge runs of different commits or profiles")


def _compare_args(sub) -> None:
    """``compare``: two runs, or the releases of one run (``--by version``)."""
    cmp = sub.add_parser(
        "compare",
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
    _results(cmp, "where run ids and commits are looked up")
    cmp.add_argument(
        "--max-slowdown",
        type=_in_range("max_slowdown", float),
        default=1.5,
        help="B/A latency ratio above which a significant change counts as a regression (default 1.5)",
    )
    cmp.add_argument("--force", action="store_true", help="compare runs of different profiles, machines or thread settings")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dynshape", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for add in (
        _list_args,
        _run_args,
        _report_args,
        _history_args,
        _packs_args,
        _merge_args,
        _compare_args,
        _zoo_parser,
        _check_parser,
    ):
        add(sub)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return {
                "list": _list,
                "run": _run,
                "report": _report,
                "compare": _compare,
                "history": _history,
                "merge": _merge,
                "packs": _packs,
                "zoo-table": _zoo_table,
                "check": _check_cases,
            }[args.command](args)
        except cases.CaseError as e:
            print(f"dynshape: {e}", file=sys.stderr)
            return EXIT_USAGE
        except Exception as e:
            from . import expectations, registry

            if isinstance(e, (registry.RegistryError, results.ResultsError, expectations.ExpectationError)):
                print(f"dynshape: {e}", file=sys.stderr)
                return EXIT_USAGE
            raise


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Results warnings as one ``dynshape: warning:`` line; others as Python prints them."""
    if issubclass(category, results.ResultsWarning):
        print(f"dynshape: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _list(args) -> int:
    from . import registry, runner

    backends = registry.backends()
    catalogue = cases.catalogue()
    avail = {name: b.available() for name, b in backends.items()}
    if args.json:
        print(
            json.dumps(
                {
                    "cases": [
                        {
                            "name": c.name,
                            "tags": list(c.tags),
                            "dims": {d.name: d.as_json() for d in c.dims},
                            "forms": list(c.forms),
                            "modes": list(c.modes),
                            "unavailable": c.unavailable() if hasattr(c, "unavailable") else None,
                        }
                        for c in catalogue
                    ],
                    "backends": [
                        {
                            "name": n,
                            "modes": list(b.modes),
                            "forms": list(b.forms),
                            "env": b.env,
                            "available": avail[n][0],
                            "reason": avail[n][1],
                            "mode_notes": dict(b.mode_notes),
                            "counters": {s: {"source": c.source, "event": c.event} for s, c in b.counters.items()},
                        }
                        for n, b in backends.items()
                    ],
                },
                indent=2,
            )
        )
        return 0
    print("backends:")
    for n, b in backends.items():
        ok, why = avail[n]
        print(
            f"  {n:<20} env={b.env:<5} forms={','.join(b.forms):<12} modes={','.join(b.modes):<25} "
            f"{'available' if ok else 'unavailable: ' + why}"
        )
        for mode, note in b.mode_notes.items():
            print(f"  {'':<20} {mode}: {note}")
    print("\ncases × backends × modes:")
    from . import pack_envs

    family = cases.families()

    def label(case, name):
        """The backend's name, saying so when the case's pack is missing from its environment."""
        pack = family.get(case, "")
        why = pack_envs.missing_reason(pack[5:] if pack.startswith("pack:") else None, backends[name].env)
        return f"{name} (pack {pack[5:]!r} not installed in env {backends[name].env})" if why else name

    for c in catalogue:
        dims = ", ".join(
            f"{d.name}={d.size}" if not d.dynamic else f"{d.name}:{d.kind}" + (f"≤{d.max}" if d.max else "") for d in c.dims
        )
        print(f"  {c.name} ({dims}) tags={','.join(c.tags)}")
        unavailable = c.unavailable() if hasattr(c, "unavailable") else None
        if unavailable:  # a model case whose library is missing here
            print(f"    unavailable: {unavailable}")
            continue
        for m in c.modes:
            runs = [
                label(c.name, n)
                for n, b in backends.items()
                if b.unsupported_reason(c, m) is None and avail[n][0] and runner.Combo(c, b, m).case_libraries_missing() is None
            ]
            print(f"    {m:<10} {', '.join(runs) or '–'}")
    from cases import zoo

    if zoo.skipped():  # enumerated but not cases: listed, never dropped silently
        print(f"\nmodel zoo: {len(zoo.skipped())} enumerated architectures left out; `harness zoo-table --skipped` says why")
    return 0


def _run(args) -> int:
    from . import check, releases, report, resume, runner

    if args.resume:
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
            return EXIT_USAGE
        r, combos = resume.resume(
            args.out, args.resume, progress=not args.no_progress, fork_server=False if args.no_fork_server else None
        )
        print(f"run {r.run_id}: resuming, {len(combos)} jobs missing or incomplete → {r.path}", file=sys.stderr)
    else:
        _check_out(args.out)
        args.cases = _cases_from(args.cases_from, args.cases)
        combos = runner.plan(args.cases, args.backends, args.modes, profile=args.profile, whole=args.whole_matrix)
        if args.versions:
            from backends import envs

            try:
                combos = releases.with_versions(combos, envs.parse_versions(args.versions))
            except envs.EnvError as e:
                print(f"dynshape: {e}", file=sys.stderr)
                return EXIT_USAGE
        if not combos:
            print("dynshape: nothing to run: no case has the selected modes", file=sys.stderr)
            return EXIT_USAGE
        if args.shard:
            from . import shards

            i, n = shards.parse(args.shard)
            combos = shards.select(combos, i, n)
            print(f"shard {i}/{n}: {len(combos)} jobs", file=sys.stderr)
            if not combos:
                print(f"dynshape: shard {i}/{n} of the selection is empty", file=sys.stderr)
                return EXIT_USAGE
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
    combos = _packs_missing(combos)
    from . import expectations

    # a typo'd rule must stop the run before its jobs, not after them (the report judges by these rules)
    expectations.load()
    if not args.resume:
        from . import incremental

        combos = incremental.apply(r, combos, fresh=args.fresh, say=lambda m: print(m, file=sys.stderr))
    try:
        if args.scheduler and not combos:
            path = r.path  # every job was taken from an earlier run: no cluster to start
        elif args.scheduler:
            from . import cluster

            path = cluster.run(r, combos, None if args.scheduler == "local" else args.scheduler, jobs=args.jobs)
        else:
            path = r.run(combos, jobs=args.jobs)
    except KeyboardInterrupt:
        print(
            f"\ndynshape: interrupted; every record written is kept in {r.path}; finish the run with\n"
            f"  dynshape run --resume {r.run_id} --out {args.out}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    try:
        df = results.load([path])
        summary = report.summary(df)
        verdicts = check.verdicts(df, [path], by=report.job_by(summary))
        summary = report.annotate(summary, df, judged=verdicts)
        csv = path.with_suffix(".report.csv")
        report.csv_frame(summary).to_csv(csv, index=False)
        page = path.with_suffix(".report.html")
        from . import html_report

        page.write_text(html_report.render(df, title=f"dynshape: {path.stem}", judged=verdicts), encoding="utf-8")
    except KeyboardInterrupt:  # the run is complete: only its report was cut short
        print(
            f"\ndynshape: interrupted while reporting; the run is complete in {path}; its report:\n  dynshape report {path}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    # a screenful, whatever the run's size: the table is `dynshape report`'s
    print(report.run_summary(summary, verdicts, str(path), {"HTML report": page, "report CSV": csv, "records": path}))
    return _unexpected(verdicts)


def _check_parser(sub) -> None:
    chk = sub.add_parser(
        "check",
        help="check a cases file: program vs oracle on every sweep size, the float32-vs-float64 error, a tolerance",
    )
    chk.add_argument("file", help="a Python file with CASES (or dynshape.case calls)")
    chk.add_argument("--cases", help="only these of its cases (comma-separated globs)")


def _check_cases(args) -> int:
    """``dynshape check FILE``: :func:`dynshape.check` on the file's cases; exit 1 if any is refused."""
    import dynshape
    from cases import packs

    found = packs.load_file(args.file)
    names = cases.match_globs([c.name for c in found], args.cases, "case")
    got = dynshape.check([c for c in found if c.name in names])
    print(got)
    return 0 if got.ok else 1


def _cases_from(files, case_globs):
    """Load the ``--cases-from`` files here and name them for the workers
    (``cases.packs.use``); the case globs: as given, else the files' cases."""
    if not files:
        return case_globs
    from cases import models_base, packs

    packs.use(*files)
    found = [c for f in files for c in packs.load_file(f)]
    for c in found:
        models_base.publish_weights(c)  # a module the file builds: every worker runs these weights, not its own draw
    return case_globs or ",".join(c.name for c in found)


def _packs_missing(combos):
    """Each job whose case comes from a pack its backend's environment lacks,
    planned as skipped saying so (and one line on stderr per pack and
    environment), before any job runs: it used to fail with ``unknown case``."""
    import dataclasses

    from . import pack_envs

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


def _packs(args) -> int:
    from . import pack_envs

    for env, seen in pack_envs.install(args.path).items():
        print(f"env {env}: packs {', '.join(seen)}")
    return EXIT_OK


def _check_out(out: str) -> None:
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


def _unexpected(verdicts) -> int:
    """The exit code of ``run`` and ``report --check``: :func:`harness.check.exit_code`."""
    from . import check

    return check.exit_code(verdicts)


def _report(args) -> int:
    from . import check, leaderboard, report, results

    files = results.run_files(args.paths, args.results)
    df = results.load(files)
    dups = results.duplicates(df)
    if dups:  # a report would mix the attempts in its medians: say so, and --check fails
        print(
            f"dynshape: warning: {len(dups)} (job, shape, phase) keys have more than one record (an attempt "
            f"kept beside its retry?), e.g. {dups[0]}",
            file=sys.stderr,
        )
    if args.html:
        from . import html_report as html

        df = _select_records(df, args)
        Path(args.html).write_text(html.render(df, title=f"dynshape: {', '.join(f.stem for f in files)}"), encoding="utf-8")
        print(f"HTML report: {args.html}", file=sys.stderr)
    if args.families:
        table = report.family_table(_select_records(df, args))
        print(table.to_markdown())
        if args.csv:
            table.to_csv(args.csv)
            print(f"\nfamily CSV: {args.csv}", file=sys.stderr)
        return 0
    if args.per_shape:
        table = report.per_shape(_select_records(df, args, case=args.per_shape))
        print(report.per_shape_markdown(table))
        if args.csv:
            table.to_csv(args.csv, index=False)
            print(f"\nper-shape CSV: {args.csv}", file=sys.stderr)
        return 0
    summary = report.summary(df)
    verdicts = check.verdicts(df, files, by=report.job_by(summary), warn=args.check)
    summary = report.annotate(summary, df, judged=verdicts)
    summary = report.select(summary, args.cases, args.backends, args.modes)
    print(leaderboard.markdown(leaderboard.leaderboard(_select_records(df, args), summary)) + "\n")
    print(report.markdown(summary))
    csv = Path(args.csv) if args.csv else files[0].with_suffix(".report.csv")
    report.csv_frame(summary).to_csv(csv, index=False)
    print(f"\nreport CSV: {csv}", file=sys.stderr)
    if args.check and dups:
        _unexpected(verdicts)
        print(f"dynshape: --check fails: {len(dups)} duplicated record keys", file=sys.stderr)
        return EXIT_UNEXPECTED
    return _unexpected(verdicts) if args.check else EXIT_OK


# -- the model zoo's pass-rate table (harness/zoo_table.py): one self-contained block
def _zoo_parser(sub) -> None:
    zt = sub.add_parser("zoo-table", help="the model zoo's pass rates per backend and mode, and its failure classes (Markdown)")
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
        type=_in_range("jobs"),
        nargs="?",
        const=2,
        metavar="JOBS",
        help="also the wall time per backend and mode (at --jobs JOBS, default 2)",
    )


def _zoo_table(args) -> int:
    from . import zoo_table

    if args.skipped:
        from cases import zoo

        print(zoo_table.skipped_markdown(zoo.skipped()))
        return EXIT_OK
    df = results.load(results.run_files(args.paths, args.results))
    print(zoo_table.markdown(zoo_table.table(df)))
    print("\n" + zoo_table.goals_markdown(zoo_table.goals(df)))
    if args.failures:
        print("\n" + zoo_table.failures_markdown(zoo_table.failures(df)))
    if args.by_library:
        from . import zoo_reports

        print("\n" + zoo_reports.by_library_markdown(df))
    if args.cost:
        from . import row_cost

        print("\n" + row_cost.markdown(row_cost.costs(df), jobs=args.cost))
    return EXIT_OK


def _history(args) -> int:
    from . import history, report

    df = history.history(args.paths, args.results, since=args.since, asv_dir=args.asv)
    df = report.select(df, args.cases, args.backends, args.modes)
    if args.rows:
        from . import row_history

        df = row_history.rows(df)
    print(row_history.markdown(df) if args.rows else history.markdown(df))
    if args.csv:
        df.to_csv(args.csv, index=False)
        print(f"\nhistory CSV: {args.csv}", file=sys.stderr)
    return 0


def _merge(args) -> int:
    from . import shards

    out, n = shards.merge(args.paths, args.out, run_id=args.run_id, force=args.force)
    print(f"merged {n} records into {out}", file=sys.stderr)
    return 0


def _select_records(df, args, case=None):
    """Records of the jobs the ``--cases/--backends/--modes`` globs (or ``case``) select."""
    from . import report

    jobs = df[["case", "backend", "mode"]].drop_duplicates()
    keep = report.select(jobs, case or args.cases, args.backends, args.modes)
    return df.merge(keep, on=["case", "backend", "mode"])


def _compare(args) -> int:
    from . import check, compare, results

    if args.by == "version":
        return _compare_versions(args)
    if args.a is None or args.b is None:
        print("dynshape: compare needs two runs A and B (or --by version and one run)", file=sys.stderr)
        return EXIT_USAGE
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
    from . import compare, results

    if args.b is not None:
        print(f"dynshape: compare --by version reads one run, not two (drop {args.b!r})", file=sys.stderr)
        return EXIT_USAGE
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
    return EXIT_UNEXPECTED if args.check and len(bad) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
