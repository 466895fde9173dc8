"""The model zoo's pass rates of our two reference paths, tracked by asv across commits.

``ZooGoals.setup_cache`` runs the issue's goal rows (:data:`harness.zoo_table.GOALS`:
StableHLO bounded beside torch.export bounded, its denominator; lazy unbounded beside
torch eager unbounded) on a sample of the zoo, as ``harness run --profile zoo`` runs them,
and reads the goal lines off the records (:func:`harness.zoo_table.goals`):

- ``track_held``: the share (percent) of the sample's architectures the denominator row
  carried that the path held (StableHLO: oracle-equal, every stage compiled once; lazy:
  oracle-equal, no recompile per novel size);
- ``track_carried``: how many the denominator carried (what the share is of);
- ``track_wrong``: wrong results or run-time errors of modules the path built (the goal: 0).

The run is incremental (:mod:`harness.incremental`) into a directory kept across commits,
``DYNSHAPE_ASV_ZOO_OUT`` (default ``~/.cache/dynshape/asv-zoo``): a job whose case, backend,
engine code, versions and settings are unchanged since a recorded run is taken from it, so
a commit that touches ``engines/lazy`` reruns only the lazy jobs, and one that touches
neither engine reruns nothing. The sample is :func:`sample` (``per_library`` architectures
of each library, spread over its sorted names) or the globs of ``DYNSHAPE_ASV_ZOO``
(``'zoo_*'``: the whole zoo, hours the first time, minutes on a commit that leaves both
engines alone).
"""

import fnmatch
import os

from harness.profiles import ZOO_PREFIX

#: architectures of each library in the default sample
PER_LIBRARY = 3
#: the settings of every zoo job here: fixed, so that fingerprints (which hash them) match across commits
REPEATS, WARMUP, TIMEOUT_S = 3, 1, 240.0
PATHS = ("lazy", "stablehlo_xla")


def sample(names: list[str], per_library: int = PER_LIBRARY) -> list[str]:
    """``per_library`` zoo cases of each library of :data:`harness.zoo_table.LIBRARY_ORDER`,
    evenly spaced over the library's sorted names (the same every commit, while the zoo is)."""
    from harness.zoo_table import LIBRARY_ORDER, library_of

    by_lib: dict[str, list[str]] = {}
    for n in sorted(names):
        if n.startswith(ZOO_PREFIX):
            by_lib.setdefault(library_of(n), []).append(n)
    out = []
    for lib in LIBRARY_ORDER:
        got = by_lib.get(lib, [])
        k = min(per_library, len(got))
        out += [got[(i * len(got)) // k] for i in range(k)]
    return out


def selected() -> list[str]:
    """The zoo cases this run measures: ``DYNSHAPE_ASV_ZOO``'s globs, else :func:`sample`."""
    import cases

    names = [c.name for c in cases.catalogue() if c.name.startswith(ZOO_PREFIX)]
    globs = [g.strip() for g in os.environ.get("DYNSHAPE_ASV_ZOO", "").split(",") if g.strip()]
    if globs:
        return [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]
    return sample(names)


def out_dir() -> str:
    """Where the zoo runs accumulate (``DYNSHAPE_ASV_ZOO_OUT``)."""
    default = os.path.join(os.path.expanduser("~"), ".cache", "dynshape", "asv-zoo")
    return os.path.abspath(os.environ.get("DYNSHAPE_ASV_ZOO_OUT", default))


def goal_rows():
    """The (backend, mode) rows the goals need: each path and its denominator."""
    from harness.zoo_table import GOALS

    return [(b, m) for path, mode, base, base_mode, _ in GOALS for b, m in ((path, mode), (base, base_mode))]


def run_goals(names: list[str], out: str, jobs: int = 2) -> dict:
    """Run the goal rows on ``names`` into ``out`` (reusing unchanged jobs) and return
    ``{path: goal line}`` (:func:`harness.zoo_table.goals`) of this run's records."""
    from harness import incremental, results, runner, zoo_table

    os.makedirs(out, exist_ok=True)
    globs = ",".join(names)
    combos = [c for b, m in goal_rows() for c in runner.plan(globs, b, m, profile="zoo")]
    r = runner.Runner(out, profile="zoo", repeats=REPEATS, warmup=WARMUP, timeout_s=TIMEOUT_S, progress=False)
    left = incremental.apply(r, combos, say=lambda m: None)
    path = r.run(left, jobs=jobs) if left else r.path
    rows = zoo_table.goals(results.load([path]))
    return {row["path"]: dict(row, run=str(path), ran=len(left), planned=len(combos)) for row in rows}


class ZooGoals:
    """The goal lines of our two paths over the zoo sample, from one run per commit."""

    params = (list(PATHS),)
    param_names = ["path"]
    timeout = 600
    rounds = 1  # exact verdicts: a second process would only repeat them

    def setup_cache(self):
        return run_goals(selected(), out_dir(), jobs=int(os.environ.get("DYNSHAPE_ASV_JOBS", "0")) or 2)

    setup_cache.timeout = 6 * 3600  # the whole zoo's first run (DYNSHAPE_ASV_ZOO='zoo_*')

    def setup(self, goals, path):
        if goals.get(path) is None:
            raise NotImplementedError(f"no goal line for {path} in the zoo run")
        self.line = goals[path]

    def track_held(self, goals, path):
        return 100.0 * self.line["share"] if self.line["share"] is not None else float("nan")

    track_held.unit = "percent"

    def track_carried(self, goals, path):
        return self.line["carried"]

    track_carried.unit = "architectures"

    def track_wrong(self, goals, path):
        return len(self.line["wrong_or_run_error"])

    track_wrong.unit = "jobs"
