"""The command line's verbs, one module each (as asv's ``commands/``).

Each module has ``NAME``, ``add_parser(sub)`` (its arguments, on the
subparsers of :func:`harness.cli.parser`) and ``main(args) -> int`` (its exit
code); :data:`COMMANDS` is the one table that registers them, in ``--help``
order. A new verb is a new module and a line here.
"""

from __future__ import annotations

from harness import minify

from . import check, compare, history, merge, packs, report, run, zoo_probe, zoo_table
from . import list as list_

#: verb name -> its module, in the order ``--help`` lists them
COMMANDS = {m.NAME: m for m in (list_, run, report, compare, history, merge, zoo_table, zoo_probe, check, minify, packs)}
