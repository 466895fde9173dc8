"""``check FILE``: a cases file's programs against their oracles on every sweep size, and a tolerance."""

from __future__ import annotations

import cases

NAME = "check"


def add_parser(sub) -> None:
    chk = sub.add_parser(
        NAME,
        help="check a cases file: program vs oracle on every sweep size, the float32-vs-float64 error, a tolerance",
    )
    chk.add_argument("file", help="a Python file with CASES (or dynshape.case calls)")
    chk.add_argument("--cases", help="only these of its cases (comma-separated globs)")


def main(args) -> int:
    """``dynshape check FILE``: :func:`cases.program_check.check` (``dynshape.check``) on the file's cases; exit 1 if any is refused."""
    from cases import packs, program_check

    found = packs.load_file(args.file)
    names = cases.match_globs([c.name for c in found], args.cases, "case")
    got = program_check.check([c for c in found if c.name in names])
    print(got)
    return 0 if got.ok else 1
