"""History across commits: the harness's runs and asv's results, per job and commit.

``harness history [RUNS…|--since REV]`` reads every run in ``results/`` (or
the runs given, or those recorded at REV and the commits after it) and asv's
result files (``results/asv/<machine>/<commit>-<env>.json``, written by
``asv run`` from ``benchmarks/suite.py``), and tabulates per case ×
backend × mode and commit: compiles (per shape, from the harness), latency
(novel sweep, cached call) and, from asv, compile time.
"""

from __future__ import annotations

import ast
import itertools
import json
import subprocess
from pathlib import Path

import pandas as pd

from . import frames, results, run_file

#: asv benchmark (the last two parts of its name) → history column
ASV_METRICS = {
    "Catalogue.time_novel_sweep": "novel_sweep_s",
    "CachedCall.time_cached_call": "cached_median_s",
    "Compiles.track_compiles": "compiles",
    "Compiles.track_compile_time": "compile_time_s",
}
COLUMNS = [
    "machine",
    "case",
    "backend",
    "mode",
    "env",
    "commit",
    "timestamp",
    "source",
    "run_id",
    "status",
    "compiles",
    "compiles_by_shape",
    "compile_time_s",
    "novel_sweep_s",
    "cached_median_s",
]


def commits_since(rev: str, root: str | Path = ".") -> list[str]:
    """``rev`` and every commit after it up to HEAD (full hashes)."""

    def git(*args) -> list[str]:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if out.returncode:
            raise results.ResultsError(f"git {' '.join(args)}: {out.stderr.strip() or 'failed'}")
        return out.stdout.split()

    return git("rev-parse", "--verify", f"{rev}^{{commit}}") + git("rev-list", f"{rev}..HEAD")


def _first_commit(path: Path) -> str | None:
    """The commit of a run file's first record (past the lines defining shared values: harness.run_file)."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                obj = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                return None
            if isinstance(obj, dict) and run_file.definitions(obj) is None:
                return obj.get("commit")
    return None


def run_paths(paths=None, results_dir: str | Path = "results", commits: list[str] | None = None) -> list[Path]:
    """The runs given (files or directories), else every run in ``results_dir``;
    with ``commits``, only runs recorded at one of them."""
    files = results.run_files(paths) if paths else sorted(Path(results_dir).glob("*.jsonl"))
    if commits is None:
        return files
    wanted = set(commits)
    keep = []
    for f in files:
        if _first_commit(f) in wanted:
            keep.append(f)
    return keep


def asv_frame(asv_dir: str | Path = "results/asv", commits: list[str] | None = None) -> pd.DataFrame:
    """asv's results of the catalogue suite: one row per machine, commit and
    job, with the metrics of :data:`ASV_METRICS` (``None``: skipped or failed)."""
    rows = []
    for path in sorted(Path(asv_dir).glob("*/*.json")):
        if path.name == "machine.json" or not (path.parent / "machine.json").is_file():
            continue  # only a machine's result files (not a published site's)
        data = json.loads(path.read_text(encoding="utf-8"))
        commit = data.get("commit_hash")
        if not commit or (commits is not None and not any(c.startswith(commit) or commit.startswith(c) for c in commits)):
            continue
        cols = data.get("result_columns", ["result", "params"])
        when = pd.to_datetime(data.get("date"), unit="ms", utc=True) if data.get("date") else pd.NaT
        machine = (data.get("params") or {}).get("machine", path.parent.name)
        release = _releases_of(data.get("requirements") or {})
        for name, row in data.get("results", {}).items():
            metric = ASV_METRICS.get(".".join(name.split(".")[-2:]))
            if metric is None:
                continue
            entry = dict(zip(cols, row, strict=False))
            params = [[ast.literal_eval(p) for p in axis] for axis in entry.get("params") or []]
            values = entry.get("result") or []
            for (case, backend, mode), v in zip(itertools.product(*params), values, strict=False):
                ok = v is not None and v == v  # None: skipped; NaN: failed
                rows.append(
                    {
                        "machine": machine,
                        "case": case,
                        "backend": backend,
                        "mode": mode,
                        "env": release(backend),
                        "commit": commit,
                        "timestamp": when,
                        metric: float(v) if ok else None,
                    }
                )
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.DataFrame(rows)
    keys = ["machine", "case", "backend", "mode", "env", "commit"]
    out = df.groupby(keys, dropna=False).first().reset_index()  # first non-null metric of each row
    out["source"] = "asv"
    return out.reindex(columns=COLUMNS)


def _releases_of(requirements: dict):
    """``backend name → release environment`` for an asv result file of the
    ``dynshape`` environment type (harness/asv_env.py), whose ``requirements`` are
    its matrix entry (``{"torch": "2.9.1", "jax": "0.10.2"}``): the release of the
    backend's system; ``None`` for another environment or a backend of no system."""
    from backends import envs

    from . import registry

    if not requirements:
        return lambda backend: None
    backends = registry.backends()

    def of(backend: str):
        b = backends.get(backend)
        system = envs.system_of(b.env, tuple(b.requires)) if b is not None else None
        if system is None or system not in requirements:
            return None
        try:
            return envs.version_env(system, str(requirements[system]))
        except envs.EnvError:
            return None

    return of


def history(
    paths=None,
    results_dir: str | Path = "results",
    since: str | None = None,
    asv_dir: str | Path | None = None,
    root: str | Path = ".",
) -> pd.DataFrame:
    """Harness runs and asv results by commit, per job, oldest first (see
    module doc); ``since`` is resolved in the git repository at ``root``."""
    commits = commits_since(since, root) if since else None
    files = run_paths(paths, results_dir, commits)
    parts = []
    if files:
        h = frames.history(results.load(files)).assign(source="harness")
        parts.append(h.reindex(columns=COLUMNS))
    asv_dir = Path(results_dir) / "asv" if asv_dir is None else Path(asv_dir)
    if asv_dir.is_dir():
        parts.append(asv_frame(asv_dir, commits))
    parts = [p for p in parts if len(p)]
    if not parts:
        raise results.ResultsError(
            f"no runs{' since ' + since if since else ''} in {results_dir}/ and no asv results in {asv_dir}/"
        )
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["machine", "case", "backend", "mode", "env", "timestamp", "source"]).reset_index(drop=True)


def markdown(df: pd.DataFrame) -> str:
    """The history as a Markdown table, one row per job, commit and source."""
    from . import report
    from .columns import Column

    shown = df.assign(
        commit=df["commit"].map(lambda v: str(v)[:10]),
        timestamp=df["timestamp"].map(
            lambda v: v.strftime("%Y-%m-%d %H:%M") if hasattr(v, "strftime") and not pd.isna(v) else None
        ),
        compiles_by_shape=df["compiles_by_shape"].map(lambda v: ",".join(map(str, v)) if isinstance(v, tuple) else None),
    )
    cols = [
        Column("machine", "machine"),
        report.BY_NAME["case"],
        report.BY_NAME["backend"],
        report.BY_NAME["mode"],
        # the release a row ran on, where some ran in a release's environment (--versions, asv's matrix)
        *([Column("env", "env")] if "env" in df.columns and df["env"].notna().any() else []),
        Column("commit", "commit"),
        Column("timestamp", "date"),
        Column("source", "source"),
        Column("status", "status"),
        Column("compiles", "compiles", "count"),
        Column("compiles_by_shape", "per shape"),
        Column("compile_time_s", "compile time", "seconds"),
        Column("novel_sweep_s", "novel sweep", "seconds"),
        Column("cached_median_s", "cached call", "seconds"),
    ]
    return report.table(shown, cols)
