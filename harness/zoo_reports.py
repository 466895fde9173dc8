"""The zoo per library: ``harness zoo-table --by-library``.

For each library of the zoo (transformers, torchvision, timm,
torch_geometric, diffusers) and then for all of them: the zoo's pass-rate
table (:func:`harness.zoo_table.table`) and the leaderboard
(:func:`harness.leaderboard.leaderboard`) over that library's architectures,
each job from its newest complete run (:func:`harness.zoo_table.latest_complete`:
a job rerun after a fix counts once).
"""

from __future__ import annotations

from . import leaderboard, zoo_table


def by_library_markdown(df) -> str:
    """One section per library of ``df``'s zoo jobs, then ``all``: the zoo table and the leaderboard."""
    parts = []
    for library, part in zoo_table.by_library(df).items():
        if not len(part):
            continue
        latest = zoo_table.latest_complete(part)
        archs = latest["case"].nunique()
        parts.append(
            f"### {library} ({archs} architectures)\n\n"
            + zoo_table.markdown(zoo_table.table(latest))
            + "\n\n"
            + leaderboard.markdown(leaderboard.leaderboard(latest))
        )
    return "\n\n".join(parts) if parts else "(no zoo job in these runs)"
