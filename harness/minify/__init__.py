"""``dynshape minify`` (registered in :data:`harness.commands.COMMANDS`): cut a failing job's program down to the smallest program
that fails the same way, written as a standalone script with its inputs.

    dynshape minify --case zoo_pyg_graphconv --backend iree --mode unbounded --out min/graphconv

A job (case, backend, mode) fails by a wrong result, an error (a refusal, a
compiler's error) or a compile after its first shape (:mod:`.failure`). The
case's torch program is exported as the backends export it and reduced over
the exported graph's nodes (:mod:`.graph`, :mod:`.search`): every candidate
program is run on the backend itself, so "fails the same way" is the
backend's own verdict. The result is ``<out>.py`` + ``<out>.npz``
(:mod:`.script`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .failure import WRONG_MARGIN, Failure, observe
from .graph import Cut, Source
from .search import Search

__all__ = ["Cut", "Failure", "Minified", "Source", "add_parser", "main", "minify"]

EXIT_OK, EXIT_USAGE, EXIT_NO_FAILURE = 0, 2, 3
#: ``--margin``'s range: below 1 a result within the case's tolerance would count as wrong
MARGIN_RANGE = (1.0, 1000.0)


class MinifyError(ValueError):
    """Bad input: names the culprit (one line, exit 2)."""


class Minified:
    """The result: ``source`` (the exported graph), ``cut`` (its smallest failing
    program), ``failure`` (the job's), ``ops``/``inputs`` (the program's size),
    ``margin`` (how far off the tolerance counted as wrong)."""

    def __init__(
        self, source: Source, cut: Cut, failure: Failure, sizes: list[dict[str, int]], tried: int, margin: float = WRONG_MARGIN
    ):
        self.source, self.cut, self.failure, self.sizes, self.tried = source, cut, failure, sizes, tried
        self.margin = margin
        inputs, body = source.slice(cut)
        self.inputs, self.body = inputs, body
        self.ops = source.ops(body)

    def program(self):
        return self.source.program(self.cut)

    def targets(self) -> list[str]:
        """The ops the program computes (``aten.scatter_add.default``, ...), in order."""
        return [str(self.source.nodes[n].target) for n in self.body if self.source.nodes[n].op == "call_function"]


def minify(
    case, backend, mode: str, sizes: list[dict[str, int]] | None = None, log=lambda s: None, margin: float = WRONG_MARGIN
) -> Minified:
    """Minify ``case`` on ``backend`` (a started backend object) in ``mode``; ``sizes``:
    the dynamic sizes each candidate runs at (default: the quick profile's); ``margin``:
    an output is wrong past this many times the case's tolerance (a precision loss
    smaller than the default's needs a smaller one)."""
    if mode not in case.modes:
        raise MinifyError(f"case {case.name!r} has no mode {mode!r} (it has {', '.join(case.modes)})")
    if mode not in backend.modes:
        raise MinifyError(f"backend {backend.name!r} offers no mode {mode!r} (it offers {', '.join(backend.modes)})")
    sizes = sizes or case.sizes_for("quick")
    failure = observe(case, backend, mode, sizes, margin)
    if failure is None:
        raise MinifyError(
            f"{case.name} on {backend.name} ({mode}) does not fail at {sizes} "
            f"(wrong: past {margin:g}x the tolerance): nothing to minify"
        )
    log(f"the job fails: {failure.kind}: {failure.detail}")
    source = Source(case, mode, sizes[0])
    if failure.kind != "recompile":
        sizes = sizes[:1] if failure.kind == "error" else sizes[:2]

    def fails(cut: Cut) -> bool:
        return failure.same(observe(source.reduced_case(cut), backend, mode, sizes, margin))

    search = Search(source, fails, log)
    cut = search.run(Cut(source.final_output()))
    return Minified(source, cut, failure, sizes, len(search.seen), margin)


#: the command's name (:data:`harness.commands.COMMANDS`)
NAME = "minify"


def add_parser(sub) -> None:
    """The ``minify`` subcommand's arguments."""
    p = sub.add_parser(NAME, help="cut a failing job's program down to the smallest that fails the same way")
    p.add_argument("--case", required=True, help="the job's case")
    p.add_argument("--backend", required=True, help="the job's backend")
    p.add_argument("--mode", required=True, help="the job's mode")
    p.add_argument(
        "--out", default=None, help="the script's path without suffix (default: results/minified/<case>-<backend>-<mode>)"
    )
    p.add_argument(
        "--margin",
        type=float,
        default=WRONG_MARGIN,
        help=f"an output is wrong past this many times the case's tolerance (default {WRONG_MARGIN:g}; "
        f"{MARGIN_RANGE[0]:g}-{MARGIN_RANGE[1]:g}: a smaller one minimises a precision loss)",
    )


def main(args: argparse.Namespace) -> int:
    import cases
    from harness import registry

    from . import script

    lo, hi = MARGIN_RANGE
    if not lo <= args.margin <= hi:
        print(f"dynshape: minify: --margin {args.margin:g} is out of range ({lo:g}-{hi:g})", file=sys.stderr)
        return EXIT_USAGE
    try:
        case = cases.get(args.case)
    except Exception as e:
        print(f"dynshape: minify: --case: {e}", file=sys.stderr)
        return EXIT_USAGE
    names = registry.names()
    if args.backend not in names:
        print(f"dynshape: minify: --backend {args.backend!r} is not a backend ({', '.join(names)})", file=sys.stderr)
        return EXIT_USAGE
    backend = registry.get(args.backend)
    ok, why = backend.available()
    if not ok:
        print(f"dynshape: minify: --backend {args.backend!r} is unavailable here: {why}", file=sys.stderr)
        return EXIT_USAGE
    backend.startup()
    try:
        result = minify(case, backend, args.mode, log=lambda s: print(s, file=sys.stderr), margin=args.margin)
    except MinifyError as e:
        print(f"dynshape: minify: {e}", file=sys.stderr)
        return EXIT_NO_FAILURE if "does not fail" in str(e) else EXIT_USAGE
    out = Path(args.out or f"results/minified/{case.name}-{backend.name}-{args.mode}")
    out.parent.mkdir(parents=True, exist_ok=True)
    margin = None if result.margin == WRONG_MARGIN else result.margin
    py, npz = script.write(out, result.source, result.cut, result.failure, backend.name, args.mode, result.sizes, margin)
    print(
        f"{case.name} on {backend.name} ({args.mode}): {result.failure.kind}, minimised to {result.ops} ops "
        f"({', '.join(result.targets())}) after {result.tried} candidates: {py} (+ {npz.name})"
    )
    return EXIT_OK
