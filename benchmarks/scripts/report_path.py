"""Benchmark: what ``harness run`` does after its last job, stage by stage, on a run file.

    .venv/bin/python -m benchmarks.scripts.report_path RUN.jsonl [--stages] [--whole] [--clock cpu] [--profile OUT]

The stages of ``harness.commands.run._reported`` (read the records, summarise,
judge every planned job, the CSV, the HTML page), each timed once, in seconds,
and the run file's size. ``--stages`` also splits the HTML page into its parts;
``--whole`` times ``_reported`` itself (it writes the CSV and the page beside the
run; its screenful goes to stderr), ``--profile OUT`` cProfiles it into OUT. A quick run's
file (``make run``'s, in ``results/``) is the workload issue 47 sizes: ~43,000
planned jobs, ~570 of them run. Run it as a file
(``python benchmarks/scripts/report_path.py``) from outside the tree to time the
installed harness instead of this one (before/after a change). ``--clock cpu``:
the process's CPU time (``time.process_time``), steadier on a loaded machine.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import sys
import time
from pathlib import Path


def _stages(path: Path, split: bool, clock) -> dict[str, float]:
    from harness import check, frames, html_report, leaderboard, report, results

    out: dict[str, float] = {}

    def timed(name, fn):
        t = clock()
        value = fn()
        out[name] = round(clock() - t, 2)
        return value

    df = timed("load", lambda: results.load([path]))
    summary = timed("summary", lambda: report.summary(df))
    verdicts = timed("verdicts", lambda: check.verdicts(df, [path], by=report.job_by(summary), warn=False))
    summary = timed("annotate", lambda: report.annotate(summary, df, judged=verdicts))
    timed("csv", lambda: report.csv_frame(summary).to_csv(os.devnull, index=False))
    # the summary goes along where render takes it (what `run` does since issue 47)
    given = {"summarised": summary} if "summarised" in inspect.signature(html_report.render).parameters else {}
    timed("html", lambda: html_report.render(df, judged=verdicts, **given))
    if split:
        flat = timed("html: flat", lambda: frames.flat(df))
        jobs = timed("html: jobs", lambda: frames.jobs(flat, judged=verdicts))
        timed("html: per_shape", lambda: frames.per_shape(flat))
        timed("html: leaderboard", lambda: leaderboard.leaderboard(flat, jobs))
        timed("html: matrix", lambda: html_report.matrix_html(jobs))
        timed("html: family table", lambda: frames.family_table(flat))
        timed("html: history", lambda: frames.history(flat))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run's JSONL (e.g. the latest in results/)")
    ap.add_argument("--stages", action="store_true", help="also time the HTML page's parts")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--whole", action="store_true", help="also time `_reported` itself")
    ap.add_argument("--profile", metavar="OUT", help="cProfile `_reported` into OUT")
    args = ap.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    import harness
    from harness.commands import run

    got = {"harness": str(Path(harness.__file__).parent), "clock": args.clock, "file_mb": args.run.stat().st_size / 1e6}
    got["stages_s"] = _stages(args.run, args.stages, clock)
    if not (args.whole or args.profile):
        print(json.dumps(got, indent=1))
        return 0
    with contextlib.redirect_stdout(sys.stderr):
        t = clock()
        if args.profile:
            import cProfile

            cProfile.runctx("run._reported(args.run)", globals(), {"run": run, "args": args}, args.profile)
        else:
            run._reported(args.run)
        got["reported_s"] = round(clock() - t, 2)
    print(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
