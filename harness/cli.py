"""Command line: ``python -m harness COMMAND`` (also ``dynshape COMMAND``).

Benchmark and check dynamic-shape programs: `list` the catalogue, `run` jobs,
then `report`, `compare`, `history`, `merge` and `zoo-table` their records;
`zoo-probe` the model zoo's architectures;
`check` a cases file; `minify` a failing job to a script; `packs install` a case pack.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import cases
from harness import results

from .commands import COMMANDS
from .commands.common import EXIT_INTERRUPTED, EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE

#: set (to anything) to see the warnings meant for backend authors (:class:`harness.zygote_policy.LateImportWarning`)
AUTHOR_WARNINGS = "DYNSHAPE_AUTHOR_WARNINGS"

__all__ = ["EXIT_INTERRUPTED", "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_USAGE", "main", "parser"]


def parser() -> argparse.ArgumentParser:
    """Every verb's parser, from :data:`harness.commands.COMMANDS`."""
    p = argparse.ArgumentParser(prog="dynshape", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return p


def main(argv=None) -> int:
    """Parse ``argv``, run the verb; a usage error in our input is one ``dynshape:`` line and exit 2."""
    args = parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        if not os.environ.get(AUTHOR_WARNINGS):
            # a backend's undeclared import is its author's to fix (the tests see it), not the user's
            from .zygote_policy import LateImportWarning

            warnings.simplefilter("ignore", LateImportWarning)
        try:
            return COMMANDS[args.command].main(args)
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


if __name__ == "__main__":
    sys.exit(main())
