"""Compare two runs: compile deltas and latency ratios, with a verdict.

A run is named by a JSONL file, a directory, a run id in the results
directory, or a commit (prefix): the latest run recorded at that commit.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd

from . import frames, report, results, stats
from .columns import Column, missing


def resolve(name: str, results_dir: str = "results") -> Path:
    """The JSONL file that ``name`` designates (see module doc)."""
    p = Path(name)
    if p.is_file():
        return p
    if p.is_dir():
        latest = results.latest_run(p)
        if latest is None:
            raise results.ResultsError(f"no runs in {p}/")
        return latest
    by_id = Path(results_dir) / f"{name}.jsonl"
    if by_id.is_file():
        return by_id
    matches = []
    for f in Path(results_dir).glob("*.jsonl"):
        with open(f, encoding="utf-8") as fh:
            first = fh.readline()
        if first and f'"commit": "{name}' in first:
            matches.append(f)
    if matches:
        return max(matches, key=lambda f: (f.stat().st_mtime, f.name))
    raise results.ResultsError(
        f"{name!r} is neither a results file, a directory, a run id nor a commit with runs in {results_dir}/"
    )


class CompareError(results.ResultsError):
    """The runs are not comparable (``--force`` compares them anyway)."""


#: what must agree between two runs for their latencies to be comparable
SETTINGS = ("profile", "host", "cpu", "cores", "cores_usable", "cpu_quota", "threads", "worker_threads")


def settings(df: pd.DataFrame) -> dict[str, set]:
    """Per setting of :data:`SETTINGS`, the values the run's records carry."""
    machine = df["machine"].map(lambda m: m if isinstance(m, dict) else {})
    out = {"profile": set(df["profile"].dropna())}
    for k in SETTINGS[1:]:
        out[k] = {_hashable(m.get(k)) for m in machine if k in m}
    return out


def _hashable(v):
    return tuple(v.items()) if isinstance(v, dict) else v


def differences(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """``setting: A … vs B …`` for every setting the two runs disagree on."""
    sa, sb = settings(a), settings(b)
    return [f"{k}: A {_show(sa[k])} vs B {_show(sb[k])}" for k in SETTINGS if sa[k] and sb[k] and sa[k] != sb[k]]


def _show(values: set) -> str:
    return ", ".join(sorted(map(str, values)))


def job_keys(df: pd.DataFrame) -> list[str]:
    """A job's keys within one run: case, backend, mode, and ``env`` where the run
    ran releases (``run --versions``: one job per release, never merged)."""
    return report.KEYS + frames.releases(df)


def samples(df: pd.DataFrame) -> pd.DataFrame:
    """Per job (:func:`job_keys`): ``novel`` (one novel-sweep total per process) and ``cached``
    (every raw cached sample of its passing shapes; the per-shape medians for
    records without raw samples) as lists."""
    f = results.flat(df)
    keys = job_keys(f)
    novel = f[f["novel"].fillna(False) & f["latency_s"].notna()]
    per = novel.groupby(keys + ["process"]).agg(calls=("latency_s", "sum"), prepare=("prepare_s", "first"))
    sweep = (per["calls"] + per["prepare"].fillna(0.0)).groupby(keys).agg(list).rename("novel")
    cached = f[(f["novel"] == False) & (f["status"] == "pass")]  # noqa: E712
    raw = cached["cached_samples_s"].where(
        cached["cached_samples_s"].map(lambda v: isinstance(v, list)), cached["cached_latency_s"].map(lambda v: [v])
    )
    pooled = raw.groupby([cached[k] for k in keys]).agg(lambda vs: [x for v in vs for x in v]).rename("cached")
    return pd.concat([sweep, pooled], axis=1)


def shape_compiles(df: pd.DataFrame) -> pd.Series:
    """Per job (:func:`job_keys`), the novel compiles of each shape of the first process, as a tuple."""
    p = report.per_shape(df)
    return p.groupby(job_keys(results.flat(df)))["new_compiles"].agg(lambda v: tuple(int(x) for x in v.fillna(0)))


#: a ratio further from 1 than this that the rank test calls noise is marked ``~``
VISIBLE = 1.1


def latency_mark(ratio, sa, sb, max_slowdown: float) -> str:
    """How a B/A latency ratio reads: ``+`` a significant slowdown beyond
    ``max_slowdown`` (a regression), ``-`` a significant speed-up beyond it,
    ``~`` a change of more than :data:`VISIBLE` within noise (the rank
    test cannot tell A from B), ``""`` a
    significant change inside the threshold or a change under
    :data:`VISIBLE` that noise explains, ``?`` too few samples to test
    (then the ratio alone decides: ``?+`` beyond the threshold)."""
    if ratio is None or _nan(ratio):
        return ""
    diff = stats.is_different(sa or [], sb or [])
    beyond = "+" if ratio > max_slowdown else "-" if ratio < 1 / max_slowdown else ""
    if diff is None:
        return "?" + beyond
    if not diff:
        return "~" if beyond or not 1 / VISIBLE <= ratio <= VISIBLE else ""
    return beyond


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _ratio(b, a):
    """``b / a``, or ``None`` where either is missing or ``a`` is 0."""
    return None if missing(a) or missing(b) or float(a) == 0 else float(b) / float(a)


def compare(a: pd.DataFrame, b: pd.DataFrame, max_slowdown: float = 1.5, force: bool = False) -> pd.DataFrame:
    """Per (case, backend, mode) in both runs: compiles (per shape) and
    latencies of A and B, the B/A ratios with their marks
    (:func:`latency_mark`), and ``verdict``: a regression is a status
    regression, more compiles on some shape, or a latency that is slower
    beyond ``max_slowdown`` *and* significantly so (asv's Mann-Whitney rule).
    Runs of different profiles, machines or thread settings raise
    :class:`CompareError` naming what differs, unless ``force``."""
    diffs = differences(a, b)
    if diffs and not force:
        raise CompareError("the runs are not comparable (--force compares them anyway): " + "; ".join(diffs))
    # a run over releases (--versions) has one job per release, keyed by its env: a
    # release of A meets the same release of B; a run without releases meets each
    ka, kb = job_keys(results.flat(a)), job_keys(results.flat(b))
    on = [k for k in ka if k in kb]
    sa = report.summary(a).join(shape_compiles(a).rename("by_shape"), on=ka)
    sb = report.summary(b).join(shape_compiles(b).rename("by_shape"), on=kb)
    smp_a, smp_b = samples(a), samples(b)
    m = sa.merge(sb, on=on, suffixes=("_a", "_b"))
    rows = []
    for _, r in m.iterrows():

        def get(smp, col, keys):
            key = tuple(r[k] for k in keys)
            return smp.at[key, col] if key in smp.index and isinstance(smp.at[key, col], list) else []

        novel = _ratio(r["novel_sweep_s_b"], r["novel_sweep_s_a"])
        cached = _ratio(r["cached_median_s_b"], r["cached_median_s_a"])
        novel_mark = latency_mark(novel, get(smp_a, "novel", ka), get(smp_b, "novel", kb), max_slowdown)
        cached_mark = latency_mark(cached, get(smp_a, "cached", ka), get(smp_b, "cached", kb), max_slowdown)
        ca, cb = r["compiles_a"], r["compiles_b"]
        delta = None if missing(ca) or missing(cb) else int(cb) - int(ca)
        shapes = _shape_changes(r["by_shape_a"], r["by_shape_b"])
        verdicts = []
        if r["status_a"] == "pass" and r["status_b"] != "pass":
            verdicts.append(f"status {r['status_a']}→{r['status_b']}")
        if any(x > y for x, y, _ in shapes) or (not shapes and delta is not None and delta > 0):
            verdicts.append("more compiles" + _where(shapes, lambda x, y: x > y))
        if novel_mark.endswith("+") or cached_mark.endswith("+"):
            verdicts.append("slower")
        regress = bool(verdicts)
        if not verdicts:
            if r["status_a"] != "pass" and r["status_b"] == "pass":  # a fix
                verdicts.append(f"status {r['status_a']}→{r['status_b']}")
            if any(x < y for x, y, _ in shapes) or (not shapes and delta is not None and delta < 0):
                verdicts.append("fewer compiles" + _where(shapes, lambda x, y: x < y))
            if novel_mark.endswith("-") or cached_mark.endswith("-"):
                verdicts.append("faster")
            if not verdicts and "~" in (novel_mark, cached_mark):
                verdicts.append("~")
        rows.append(
            {
                "case": r["case"],
                "backend": r["backend"],
                "mode": r["mode"],
                **({"env": r["env"]} if "env" in r else {}),
                "compiles_a": ca,
                "compiles_b": cb,
                "compile_delta": delta,
                "novel_a": r["novel_sweep_s_a"],
                "novel_b": r["novel_sweep_s_b"],
                "novel_ratio": novel,
                "novel_mark": novel_mark,
                "cached_a": r["cached_median_s_a"],
                "cached_b": r["cached_median_s_b"],
                "cached_ratio": cached,
                "cached_mark": cached_mark,
                # each median's dispersion, as the report shows it (harness.columns)
                **{
                    f"{k}_{side}_{end}": r[f"{col}_{end}_s_{side}"]
                    for k, col in (("novel", "novel_sweep"), ("cached", "cached"))
                    for side in "ab"
                    for end in (("min", "max") if k == "novel" else ("q25", "q75"))
                },
                "status_a": r["status_a"],
                "status_b": r["status_b"],
                "verdict": ", ".join(verdicts) or "ok",
                "regression": regress,
            }
        )
    return pd.DataFrame(rows)


def _shape_changes(a, b) -> list[tuple[int, int, int]]:
    """``(compiles in B, in A, shape)`` for every shape both runs measured."""
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        return []
    return [(y, x, i) for i, (x, y) in enumerate(zip(a, b, strict=False))]


def _where(shapes, pred) -> str:
    hit = [f"shape {i}: {x_a}→{x_b}" for x_b, x_a, i in shapes if pred(x_b, x_a)]
    return f" ({', '.join(hit[:3])}{', …' if len(hit) > 3 else ''})" if hit else ""


#: the comparison's columns, in the report's column model
COLUMNS = [
    report.BY_NAME["case"],
    report.BY_NAME["backend"],
    report.BY_NAME["mode"],
    Column("compiles_a", "compiles A", "count"),
    Column("compiles_b", "compiles B", "count"),
    Column("novel_a", "novel A", "seconds", spread=("novel_a_min", "novel_a_max")),
    Column("novel_b", "novel B", "seconds", spread=("novel_b_min", "novel_b_max")),
    Column("novel_show", "novel B/A"),
    Column("cached_a", "cached A", "seconds", spread=("cached_a_q25", "cached_a_q75")),
    Column("cached_b", "cached B", "seconds", spread=("cached_b_q25", "cached_b_q75")),
    Column("cached_show", "cached B/A"),
    Column("verdict", "verdict"),
]


def markdown(df: pd.DataFrame, lead: list[Column] | None = None) -> str:
    """The comparison as Markdown, ``lead`` columns first, and its legend."""
    if not len(df):
        return "(no (case, backend, mode) in both runs)"
    df = df.assign(
        **{
            f"{c}_show": [
                None if missing(v) else f"{v:.2f}× {m}".rstrip() for v, m in zip(df[f"{c}_ratio"], df[f"{c}_mark"], strict=False)
            ]
            for c in ("novel", "cached")
        }
    )
    legend = (
        "\n\nnovel: the novel sweep, median over processes (min–max); cached: the cached call, median "
        "over shapes (the typical shape's IQR).\nB/A marks: + slower beyond the threshold and significant (Mann-Whitney U, p < "
        f"{stats.P_THRESHOLD}, as asv), - faster likewise, ~ within noise, ? too few samples to test "
        f"(the ratio alone decides; `run --processes {stats.MIN_SAMPLES}` on both sides gives the novel sweep "
        f"the {stats.MIN_SAMPLES} samples a side the test needs)"
    )
    # the release of each row where a run ran several (--versions)
    env = [Column("env", "env")] if "env" in df.columns and df["env"].notna().any() else []
    return report.table(df, [*(lead or []), *env, *COLUMNS]) + legend


# -- across releases of a system (harness run --versions) --------------------


def by_version(df: pd.DataFrame, max_slowdown: float = 1.5) -> pd.DataFrame:
    """Per system, each release of one run (``run --versions``) against the one
    declared before it (``backends/envs.py``: oldest first): :func:`compare` of
    the two releases' records (same run: same machine and settings), with
    ``system``, ``from`` and ``to`` (the releases); regressions first, then the
    other changes, then the jobs that did not change. Empty when the records ran
    in no release's environment."""
    from backends import envs

    if not len(df) or "env" not in df.columns:
        return pd.DataFrame()
    ran = [e for e in envs.ENVS if envs.release(e) and (df["env"] == e).any()]
    parts = []
    for system in dict.fromkeys(envs.ENVS[e]["system"] for e in ran):
        steps = [e for e in ran if envs.ENVS[e]["system"] == system]
        for old, new in itertools.pairwise(steps):
            # one release a side: without env, the two releases' jobs meet (job_keys)
            a, b = (df[df["env"] == e].drop(columns="env") for e in (old, new))
            c = compare(a, b, max_slowdown, force=True)
            if len(c):
                parts.append(c.assign(system=system, **{"from": envs.ENVS[old]["version"], "to": envs.ENVS[new]["version"]}))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    out["changed"] = out["verdict"] != "ok"
    order = ["system", "from", "to"]
    out = out.sort_values(
        ["regression", "changed", *order, *report.KEYS], ascending=[False, False, True, True, True, True, True, True]
    )
    return out[order + [c for c in out.columns if c not in order]].reset_index(drop=True)


def version_table(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per system, one row per (case, backend, mode) of a ``run --versions`` run that
    some release offers and, per release, its status, compiles, novel sweep and
    cached call, written as the report writes them (``–``: none measured)."""
    from backends import envs

    from .columns import fmt_seconds

    s = report.summarise(df)
    if "env" not in s.columns:
        return {}
    s = s[s["env"].map(envs.release).notna()].copy()
    offered = s.groupby(report.KEYS)["status"].transform(lambda v: (v.astype(str) != "unsupported").any())
    s = s[offered.astype(bool)]
    s["status"] = s["status"].astype(str)
    s["compiles"] = s["compiles"].map(lambda v: "–" if missing(v) else str(int(v)))
    for c in ("novel_sweep_s", "cached_median_s"):
        s[c] = s[c].map(lambda v: "–" if missing(v) else fmt_seconds(float(v)))
    out = {}
    for system, g in s.groupby(s["env"].map(lambda e: envs.ENVS[e]["system"]), sort=False):
        parts = []
        for env in [e for e in envs.ENVS if (g["env"] == e).any()]:
            v = envs.ENVS[env]["version"]
            part = g[g["env"] == env].set_index(report.KEYS)[["status", "compiles", "novel_sweep_s", "cached_median_s"]]
            parts.append(part.rename(columns=lambda c, v=v: f"{c} {v}"))
        out[system] = pd.concat(parts, axis=1).fillna("–").reset_index()
    return out


def versions_markdown(df: pd.DataFrame, changes: pd.DataFrame) -> str:
    """``compare --by version``: per system, the version table, then what changed
    between each release and the one before (:func:`by_version`), regressions first."""
    from .columns import Column

    tables = version_table(df)
    if not tables:
        return "(no records ran in a release's environment: run with `harness run --versions SYSTEM=V1,V2`)"
    lines = []
    heads = {"novel_sweep_s": "novel", "cached_median_s": "cached"}
    for system, t in tables.items():
        cols = [report.BY_NAME[k] for k in report.KEYS]
        for c in t.columns[3:]:
            what, _, v = c.partition(" ")
            cols.append(Column(c, f"{heads.get(what, what)} {v}"))
        lines += [f"## {system}", "", report.table(t, cols), ""]
    lines.append("## What changed (each release against the one before; regressions first)")
    lines.append("")
    changed = changes[changes["changed"]] if len(changes) else changes
    if not len(changed):
        lines.append("(nothing: every job's status, compiles and latencies agree across the releases)")
    else:
        step = changed.assign(step=changed["system"] + " " + changed["from"] + " → " + changed["to"])
        lines.append(markdown(step, lead=[Column("step", "release")]))
    return "\n".join(lines)


def versions_html(df: pd.DataFrame, max_slowdown: float = 1.5) -> str:
    """The HTML report's section for a ``run --versions`` run: :func:`versions_markdown`'s
    tables as HTML (the command that prints them: ``compare --by version``)."""
    import html

    changes = by_version(df, max_slowdown)
    parts = []
    for system, t in version_table(df).items():
        parts += [f"<h3>{html.escape(system)}</h3>", t.to_html(classes="summary", index=False, na_rep="–")]
    changed = changes[changes["changed"]] if len(changes) else changes
    parts.append("<h3>What changed (each release against the one before; regressions first)</h3>")
    if len(changed):
        keep = ["system", "from", "to", *report.KEYS, "compiles_a", "compiles_b", "novel_ratio", "novel_mark"]
        keep += ["cached_ratio", "cached_mark", "status_a", "status_b", "verdict"]
        parts.append(changed[keep].to_html(classes="summary", index=False, na_rep="–", float_format=lambda v: f"{v:.2f}"))
    else:
        parts.append("<p>Nothing: every job's status, compiles and latencies agree across the releases.</p>")
    return "\n".join(parts) + "<p class=legend>The same tables in text: <code>dynshape compare --by version RUN</code>.</p>"
