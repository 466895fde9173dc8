"""``zoo-probe``: enumerate and probe the model zoo into ``cases/zoo.json``, here or
one task per architecture on a Dask cluster (:mod:`harness.zoo_cluster`)."""

from __future__ import annotations

import sys

from . import common

NAME = "zoo-probe"


def add_parser(sub) -> None:
    from cases import zoo

    p = sub.add_parser(NAME, help="probe the model zoo's architectures into cases/zoo.json (here, or on a Dask cluster)")
    zoo.add_probe_args(p)
    common.scheduler(p, "probe each architecture as a task")
    p.add_argument("--jobs", type=int, default=2, help="workers of the LocalCluster --scheduler starts (default 2)")


def main(args) -> int:
    from cases import zoo

    try:
        if args.scheduler:
            from harness import zoo_cluster

            with zoo_cluster.Pool(common.scheduler_address(args), args.jobs) as pool:
                zoo.probe(args.families or None, budget_s=args.budget, retry=args.retry, only=args.only, pool=pool)
        else:
            zoo.probe(args.families or None, budget_s=args.budget, retry=args.retry, only=args.only)
    except ValueError as e:  # ProbeError, or harness.results.ResultsError: no scheduler at the address
        print(f"dynshape: zoo-probe: {e}", file=sys.stderr)
        return common.EXIT_USAGE
    return common.EXIT_OK
