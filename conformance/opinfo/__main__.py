"""``python -m conformance.opinfo``: PyTorch's OpInfo through our two reference paths.

python -m conformance.opinfo run [--paths lazy,stablehlo] [--entries GLOB] [--limit 3] [--dtype float32] [--jobs 2]
                               [--stablehlo-modes bounded,unbounded,interpreter]
python -m conformance.opinfo table [--paths ...] [--failures] [--pin]
python -m conformance.opinfo pin [--update] [--targets]   (writes tests/opinfo/pinned.tsv and
                               pinned_targets.tsv from the last run; --update re-pins only the entries
                               that run swept; --targets writes pinned_targets.tsv alone)
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path

from . import pin as pin_mod
from .sweep import DTYPES, PATHS, Options, stablehlo_modes, sweep
from .table import crosstab, entries, failures, in_distribution, load, markdown, rate, totals

OUT = Path("results/opinfo")


def _usage(msg: str):
    """Bad input: one line naming the flag or file at fault, exit 2."""
    print(f"opinfo: {msg}", file=sys.stderr)
    return SystemExit(2)


def _paths(text: str) -> list[str]:
    paths = [p for p in text.split(",") if p]
    bad = [p for p in paths if p not in PATHS]
    if bad:
        raise _usage(f"--paths: unknown path {bad[0]!r} (want {', '.join(PATHS)})")
    return paths


def _pinned_rows() -> dict[str, list[dict]]:
    """The pinned table as a run's rows, per path (its family from op_db; no message: the
    pin keeps verdicts and routes alone)."""
    from .samples import entry_name, family, op_db

    fams = {entry_name(o): family(o) for o in op_db()}
    out: dict[str, list[dict]] = {p: [] for p in PATHS}
    for (entry, path), (verdict, route) in pin_mod.read(pin_mod.PIN).items():
        out.setdefault(path, []).append(
            {"entry": entry, "verdict": verdict, "family": fams.get(entry, "other"), "route": route, "message": "", "refusal": ""}
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.opinfo", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="sweep op_db through the paths")
    r.add_argument("--paths", default="lazy,stablehlo")
    r.add_argument("--entries", default="*", help="fnmatch pattern(s) over entry names, comma-separated")
    r.add_argument("--limit", type=int, default=3, help="samples per entry (default 3)")
    r.add_argument("--dtype", choices=DTYPES, default="float32", help="the samples' dtype (default float32)")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument(
        "--stablehlo-modes",
        default="bounded,unbounded",
        help="the StableHLO path's modes: bounded, unbounded, interpreter (default bounded,unbounded)",
    )
    r.add_argument("--out", type=Path, default=OUT)
    t = sub.add_parser("table", help="the tables of the last run, by family")
    t.add_argument("--paths", default="lazy,stablehlo")
    t.add_argument("--out", type=Path, default=OUT)
    t.add_argument("--failures", action="store_true", help="list every entry that does not pass")
    t.add_argument("--against", help="a path to compare each path with, entry by entry (make_fx: torch's own tracer)")
    t.add_argument(
        "--pin",
        action="store_true",
        help="the tables of the pinned table (tests/opinfo/pinned.tsv, what make test checks) instead of a run's rows",
    )
    p = sub.add_parser("pin", help="write the pinned table from the last run")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--write", type=Path, default=pin_mod.PIN)
    p.add_argument("--update", action="store_true", help="re-pin only the entries of the run in --out")
    p.add_argument("--targets", action="store_true", help="write only pinned_targets.tsv (updating it)")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        from .samples import entry_name, family, op_db

        if a.limit < 1 or a.jobs < 1:
            raise _usage("--limit and --jobs take a whole number >= 1")
        try:
            modes = stablehlo_modes(a.stablehlo_modes)
        except ValueError as e:
            raise _usage(f"{e}") from None
        paths = _paths(a.paths)
        db = op_db()
        pats = a.entries.split(",")
        names = [entry_name(o) for o in db if any(fnmatch.fnmatchcase(entry_name(o), q) for q in pats)]
        if not names:
            raise _usage(f"--entries {a.entries!r} matches no op_db entry")
        fams = {entry_name(o): family(o) for o in db}
        t0 = time.monotonic()
        sweep(paths, names, fams, a.out, Options(a.limit, a.dtype, modes), a.jobs)
        print(f"{len(names)} entries in {time.monotonic() - t0:.0f} s -> {a.out}/", file=sys.stderr)
    if a.cmd in ("run", "table"):
        pinned = _pinned_rows() if getattr(a, "pin", False) else None
        for path in _paths(a.paths):
            f = a.out / f"{path}.jsonl"
            if pinned is not None:
                rows = pinned[path]
            elif not f.exists():
                raise _usage(f"{f}: no rows (run `python -m conformance.opinfo run --paths {path}` first)")
            else:
                rows = load(f)
            worst = entries(rows)
            print(markdown(path, worst) + "\n")
            passed, den = rate(totals(worst), path)
            print(f"{path}: {passed}/{den} entries pass ({100 * passed / max(den, 1):.1f}%); {dict(totals(worst))}")
            judged = in_distribution(rows)
            if judged:
                print(f"  of them in distribution, not by value (random draws): {len(judged)} ({', '.join(judged)})")
            print()
            if getattr(a, "failures", False):
                print(failures(worst) + "\n")
            if getattr(a, "against", None) and a.against != path:
                other = entries(load(a.out / f"{_paths(a.against)[0]}.jsonl"))
                for k, names in crosstab(worst, other).items():
                    shown = ", ".join(names[:12]) + (" …" if len(names) > 12 else "")
                    print(f"{path} vs {a.against}: {k}: {len(names)}" + (f" ({shown})" if k != "both pass" else ""))
                print()
    if a.cmd == "pin":
        if not a.targets:
            n = pin_mod.write(a.out, a.write, update=a.update)
            print(f"pinned {n} rows -> {a.write}")
        dest = a.write.with_name(pin_mod.TARGETS.name)
        n = pin_mod.write_targets(a.out, dest, update=a.update or a.targets)
        print(f"pinned the lowering targets of {n} entries -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
