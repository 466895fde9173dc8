"""Results as pandas: the flat record frame and the tables built on it.

:func:`flat` turns the records (``results.load``) into one row per record with
scalar columns; :func:`summary`, :func:`per_shape`, :func:`conformance_matrix`
and :func:`history` are groupby/merge views of it (``harness.report``
re-exports them). Every view keeps runs and machines apart: a job is
``(run_id, machine, case, backend, mode)``, and ratios to torch eager use the
eager job of the same run on the same machine.
"""

from __future__ import annotations

import pandas as pd

from .results import STATUS_ORDER, flat

#: the dtype of a flat frame's ``status``: ordered, best first
STATUS = pd.CategoricalDtype(STATUS_ORDER, ordered=True)
JOB = ["case", "backend", "mode"]
RUN = ["run_id", "machine"]
BASELINE = "torch_eager"


def _jobs(df: pd.DataFrame) -> list[str]:
    """A job's keys: :data:`RUN`, :data:`JOB`, and ``env`` where some record ran in a
    release's environment (``harness run --versions``: one job per release)."""
    return RUN + JOB + releases(df)


def releases(df: pd.DataFrame) -> list[str]:
    """``["env"]`` when some record of ``df`` ran in a release's environment, else ``[]``."""
    from backends.envs import release

    return ["env"] if "env" in df.columns and df["env"].map(release).notna().any() else []


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """The per-job summary, computed here once for every output (Markdown,
    CSV, HTML, ``compare``, ``history``): one row per job (``run_id``,
    ``machine``, case, backend, mode) with the columns of
    :data:`harness.columns.COLUMNS` (``expected`` apart: :func:`jobs` judges)
    and ``commit``, ``profile``, ``timestamp``, ``compile_time_s``.

    ``status`` is the worst record's; ``shapes``, ``compiles`` (the last
    cumulative count, cached phase included), ``stages`` and ``compile_time``
    come from the first process; ``novel_sweep_s`` is ``prepare_s`` plus the
    first calls, the median over processes (``run --processes``) with
    ``novel_sweep_min_s``/``_max_s``; ``cached_median_s`` the median over shapes
    of the cached medians, with ``cached_q25_s``/``_q75_s`` the median over
    shapes of each shape's quartiles; ``pad_s``, ``h2d_s``, ``d2h_s`` (where
    records carry them) the median per call and ``end_to_end_s`` the cached
    call plus them; ``why`` the reason given for the first compile after the
    first shape; ``message`` the mode's label (``Backend.mode_notes``) and the
    first failure's message; ``*_vs_eager`` divide by torch eager of the same
    run, machine and case (same mode where it ran): >1 is slower."""
    from . import columns

    df = flat(df)
    keys = _jobs(df)
    g = df.groupby(keys, dropna=False, observed=True, sort=True)
    out = g.agg(
        status=("status", "max"),
        commit=("commit", "first"),
        profile=("profile", "first"),
        timestamp=("timestamp", "min"),
        startup_s=("startup_s", "first"),
        prepare_s=("prepare_s", "first"),
        max_abs_err=("max_abs_err", "max"),
        max_rel_err=("max_rel_err", "max"),
    ).reset_index()
    first = df[df["process"] == 0]
    novel = df[df["novel"].fillna(False)]
    p0 = first[first["novel"].fillna(False)]
    counts = pd.DataFrame(
        {
            "shapes": p0.groupby(keys, dropna=False)["shape_index"].nunique(),
            "compiles": first.groupby(keys, dropna=False)["compiles"].last(),
            "stages": _last_dict(first, keys, "compile_stages").map(_stages),
            "compile_time": _last_dict(first, keys, "compile_times").map(_times),
            "compile_time_s": _last_dict(first, keys, "compile_times").map(lambda d: float(sum(d.values())) if d else None),
        }
    )
    per_proc = (
        novel.groupby(keys + ["process"], dropna=False, sort=False)
        .agg(calls=("latency_s", "sum"), timed=("latency_s", "count"), prepare=("prepare_s", "first"))
        .reset_index()
    )
    per_proc["sweep"] = per_proc["calls"].where(per_proc["timed"] > 0) + per_proc["prepare"].fillna(0.0)
    sweep = per_proc.groupby(keys, dropna=False)["sweep"].agg(
        novel_sweep_s="median", novel_sweep_min_s="min", novel_sweep_max_s="max", processes="count"
    )
    cached = df[(df["novel"] == False) & (df["status"] == "pass")]  # noqa: E712
    quart = _quartiles(cached)
    cstat = (
        quart.groupby([cached[k] for k in keys], dropna=False)
        .median()
        .rename(columns={"med": "cached_median_s", "q25": "cached_q25_s", "q75": "cached_q75_s"})
    )
    parts = [counts, sweep, cstat]
    copies = [c for c in ("pad_s", "h2d_s", "d2h_s") if c in df.columns and df[c].notna().any()]
    if copies:
        parts.append(df.groupby(keys, dropna=False)[copies].median())
    out = out.join(pd.concat(parts, axis=1), on=keys)
    if copies:
        out["end_to_end_s"] = out["cached_median_s"] + out[copies].fillna(0.0).sum(axis=1)
    out["shapes"] = out["shapes"].fillna(0).astype("Int64")
    out["compiles"] = out["compiles"].astype("Int64")
    out["processes"] = out["processes"].fillna(0).astype("Int64")
    out["compiles_per_shape"] = (out["compiles"] / out["shapes"].replace(0, pd.NA)).astype("Float64")
    out["why"] = _why(df, keys).reindex(pd.MultiIndex.from_frame(out[keys])).fillna("").to_numpy()
    out["message"] = _messages(df, keys, out)
    if "env" in keys:  # the release each row ran on (harness.columns.RUN_COLUMNS)
        from backends.envs import release_label

        out["version"] = out["env"].map(release_label)
    for col in columns.COLUMNS:
        if col.agg is not None:
            vals = df.groupby(keys, dropna=False, observed=True)[list(df.columns)].apply(col.agg).rename(col.name)
            out = out.join(vals, on=keys)
    out = relative(out)
    return out[order(out.columns)]


def order(have) -> list[str]:
    """The report's column order: :data:`harness.columns.COLUMNS`, the run's keys
    (``run_id``, ``machine``), then the columns only the CSV keeps."""
    from . import columns

    first = [c.name for c in columns.COLUMNS if c.name in have]
    keys = [c for c in RUN if c in have]
    return first + keys + [c for c in have if c not in first and c not in keys]


def _last_dict(df: pd.DataFrame, keys: list[str], col: str) -> pd.Series:
    """Per job, the last record's ``col`` that is a dict (``None`` where none is)."""
    has = df[df[col].map(lambda v: isinstance(v, dict))]
    return has.groupby(keys, dropna=False)[col].agg(lambda v: v.iloc[-1])


def _stages(stages) -> str:
    return " ".join(f"{k}={v}" for k, v in stages.items()) if isinstance(stages, dict) else ""


def _times(times) -> str:
    from .columns import fmt_seconds

    return " ".join(f"{k}={fmt_seconds(v)}" for k, v in times.items()) if isinstance(times, dict) else ""


def _quartiles(cached: pd.DataFrame) -> pd.DataFrame:
    """Per cached record: ``med``, ``q25``, ``q75`` of its raw samples
    (``cached_samples_s``), or its median ± half its IQR where it has none."""
    import numpy as np

    def q(r):
        s = r["cached_samples_s"]
        if isinstance(s, list) and s:
            return np.percentile(np.asarray(s, dtype=float), [25, 75])
        iqr = r["cached_iqr_s"] if r["cached_iqr_s"] is not None and r["cached_iqr_s"] == r["cached_iqr_s"] else None
        m = r["cached_latency_s"]
        return (m - iqr / 2, m + iqr / 2) if iqr is not None else (None, None)

    qs = [q(r) for r in cached[["cached_samples_s", "cached_iqr_s", "cached_latency_s"]].to_dict("records")]
    return pd.DataFrame(
        {
            "med": cached["cached_latency_s"].astype(float),
            "q25": pd.to_numeric(pd.Series([a for a, _ in qs], index=cached.index), errors="coerce"),
            "q75": pd.to_numeric(pd.Series([b for _, b in qs], index=cached.index), errors="coerce"),
        }
    )


def _why(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per job, ``shape i: reason`` of the first compile after the job's first shape."""
    shapes = per_shape(df)
    later = shapes[
        (shapes["new_compiles"].fillna(0) > 0)
        & (shapes["shape_index"] > shapes.groupby(keys, dropna=False)["shape_index"].transform("min"))
    ]
    first = later.groupby(keys, dropna=False).first()
    return (
        "shape " + first["shape_index"].astype(str) + ": " + first["reason"].astype(object).fillna("(no reason given)")
    ).rename("why")


def _messages(df: pd.DataFrame, keys: list[str], out: pd.DataFrame) -> list[str]:
    """The mode's label (``Backend.mode_notes``), the range the system narrowed the job to
    and the first failure's message as tables show it (:func:`harness.messages.shown`: the
    system's diagnosis in words, then the message's first lines), per row of ``out``."""
    from .messages import narrowed_words, shown

    bad = df[(df["status"] != "pass") & df["message"].notna()]
    diag = bad["diagnosis"] if "diagnosis" in bad.columns else pd.Series(None, index=bad.index, dtype=object)
    # a quick run's ~43,000 jobs not run share a few hundred messages, and no diagnosis
    plain = {m: shown(m) for m in set(bad["message"][diag.map(lambda d: not isinstance(d, dict))])}
    told = pd.Series(
        [shown(m, d) if isinstance(d, dict) else plain[m] for m, d in zip(bad["message"], diag, strict=False)],
        index=bad.index,
        dtype=object,
    )
    first = told.groupby([bad[k] for k in keys], dropna=False, observed=True).first()
    msgs = first.reindex(pd.MultiIndex.from_frame(out[keys])).to_numpy()
    if "narrowed" in df.columns:
        nar = df[df["narrowed"].map(lambda v: isinstance(v, dict))]
        ran = nar.groupby(keys, dropna=False, observed=True)["narrowed"].first().map(narrowed_words)
        ran = ran.reindex(pd.MultiIndex.from_frame(out[keys])).to_numpy()
        msgs = [
            "; ".join(x for x in (r if isinstance(r, str) else "", m if isinstance(m, str) else "") if x)
            for r, m in zip(ran, msgs, strict=False)
        ]
    notes = {bm: mode_note(*bm) for bm in set(zip(out["backend"], out["mode"], strict=True))}
    labels = [notes[bm] for bm in zip(out["backend"], out["mode"], strict=True)]
    return ["; ".join(x for x in (label, m if isinstance(m, str) else "") if x) for label, m in zip(labels, msgs, strict=False)]


def mode_note(backend: str, mode: str) -> str:
    """The label a registered backend gives ``mode`` (``Backend.mode_notes``), if any."""
    b = _registered().get(backend)
    return b.mode_notes.get(mode, "") if b is not None else ""


def _registered() -> dict:
    try:
        from . import registry

        return registry.backends()
    except Exception:  # a report reads records; an unusable registry only loses the labels
        return {}


def relative(jobs: pd.DataFrame) -> pd.DataFrame:
    """Add ``novel_vs_eager`` and ``cached_vs_eager`` to a per-job frame:
    divide by torch eager of the same run, machine and case, in the same mode
    where eager ran it, else in any mode (>1: slower)."""
    cols = ["novel_sweep_s", "cached_median_s"]
    base = jobs[jobs["backend"] == BASELINE]
    on = [k for k in RUN if k in jobs.columns] + ["case"]
    # with releases (--versions): eager of the same release first, then of any
    own = ["env"] if "env" in jobs.columns else []
    tiers = [on + own + ["mode"], on + own] if own else []
    tiers += [on + ["mode"], on]
    m = jobs
    for i, keys in enumerate(tiers):
        ref = base[keys + cols].drop_duplicates(keys).rename(columns={c: f"{c}_{i}" for c in cols})
        m = m.merge(ref, on=keys, how="left")
    for c, r in (("novel_sweep_s", "novel_vs_eager"), ("cached_median_s", "cached_vs_eager")):
        ref = m[f"{c}_0"]
        for i in range(1, len(tiers)):
            ref = ref.fillna(m[f"{c}_{i}"])
        ref = ref.astype("Float64")
        m[r] = (m[c].astype("Float64") / ref.where(ref > 0)).astype("Float64")
    return m.drop(columns=[f"{c}_{i}" for c in cols for i in range(len(tiers))])


def per_shape(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job and novel shape: ``size_<dim>``, ``first_call_s``
    (the first call; median over processes, with ``first_call_min_s`` and
    ``first_call_max_s``), ``new_compiles`` and per stage, the ``reason``
    given, ``cached_s`` (the cached median, with ``cached_q25_s`` and
    ``cached_q75_s``) and ``status`` (the worst of the shape's records)."""
    df = flat(df)
    keys = _jobs(df) + ["shape_index"]
    novel = df[df["novel"].fillna(False)]
    sizes = [c for c in df.columns if c.startswith("size_") and df[c].notna().any()]
    stages = [c for c in df.columns if c.startswith("new_compiles_") and novel[c].notna().any()]
    p0 = novel[novel["process"] == 0]
    first = p0.groupby(keys, dropna=False)[sizes + ["new_compiles"] + stages + ["reason"]].first()
    lat = novel.groupby(keys, dropna=False)["latency_s"].agg(
        first_call_s="median", first_call_min_s="min", first_call_max_s="max"
    )
    cached = df[df["novel"] == False]  # noqa: E712
    quart = (
        _quartiles(cached)
        .groupby([cached[k] for k in keys], dropna=False)
        .median()
        .rename(columns={"med": "cached_s", "q25": "cached_q25_s", "q75": "cached_q75_s"})
    )
    status = df[df["shape_index"].notna()].groupby(keys, dropna=False, observed=True)["status"].max()
    out = first.join(lat).join(quart).join(status).reset_index()
    return out.sort_values(keys).reset_index(drop=True)


def _host(m):
    return m.get("host", "?") if isinstance(m, dict) else m


def _records(df: pd.DataFrame, keys: list[str]) -> dict[tuple, list[dict]]:
    """The records of ``df`` as :func:`harness.expectations.verdict` reads them (plain
    values: no categories, ``novel`` None where it is missing), by job (``keys``), in
    the order of each job's first record. The frame is made plain once, column by
    column: a ``to_dict`` per job took ~287 s over a quick run's 43,000 planned jobs."""
    groups = df.groupby(keys, sort=False, dropna=False, observed=True).indices
    names = list(df.columns)
    cols = []
    for c in names:
        v = df[c]
        if isinstance(v.dtype, pd.CategoricalDtype):
            v = v.astype(object)
        elif c == "novel":
            v = v.astype(object).where(v.notna(), None)
        cols.append(v.tolist())
    rows = [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]
    ordered = sorted(groups.items(), key=lambda kv: kv[1][0])
    return {k if isinstance(k, tuple) else (k,): [rows[i] for i in ix] for k, ix in ordered}


def verdicts(df: pd.DataFrame, rules=None, by=None, ci: bool | None = None, then=None) -> dict:
    """Each job's :class:`harness.expectations.Verdict` (the gate's own judgement, used by
    ``report``, ``check`` and :func:`jobs`), keyed by (case, backend, mode) plus the ``by``
    columns (default: ``run_id`` when ``df`` holds several runs; ``machine`` or ``host`` is
    each record's machine host). ``ci``: as :func:`harness.expectations.verdict`;
    ``then(records, verdict)``: a verdict amended from the job's records (``check``'s holes)."""
    from . import expectations

    rules = expectations.load() if rules is None else rules
    find = expectations.Finder(rules)
    by = (["run_id"] if df["run_id"].nunique() > 1 else []) if by is None else list(by)
    if "machine" in df:
        df = df.assign(**{k: df["machine"].map(_host) for k in ("machine", "host") if k in by})
    out = {}
    for k, recs in _records(df, JOB + by).items():
        v = expectations.verdict(recs, find(*k[:3]), ci=ci)
        out[k] = v if then is None else then(recs, v)
    return out


def jobs(df: pd.DataFrame, rules=None, judged: dict | None = None, summarised: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`summary` with ``expected`` (the gate's verdict against
    ``cases/expectations.toml``) and ``outcome`` (pass, fail, xfail, xpass,
    norule, idle). ``judged``: the verdicts already reached for a run of one
    machine (:func:`verdicts`, keyed by case, backend and mode), so
    that a run's HTML report does not judge every job a second time;
    ``summarised``: :func:`summary` of ``df``, where the caller has it."""
    df = flat(df)
    s = summary(df) if summarised is None else summarised
    one_run = s[RUN].drop_duplicates().shape[0] == 1
    given = judged if judged is not None and one_run and all(len(k) == 3 for k in judged) else {}
    got = [given.get(tuple(k)) for k in s[JOB].itertuples(index=False)]
    if None in got:  # none given, or given for other jobs
        again = verdicts(df, rules, by=RUN)
        got = [again[tuple(k)] for k in s[JOB + RUN].itertuples(index=False)]
    return s.assign(expected=[v.note for v in got if v], outcome=[v.outcome for v in got if v])


def conformance_matrix(df: pd.DataFrame, value: str = "status", rules=None) -> pd.DataFrame:
    """Cases × ``backend/mode``: each job's ``status`` (or ``value``: any
    column of :func:`jobs`, e.g. ``expected``, ``outcome``, ``why``); with
    several runs or machines, the rows are ``(run_id, machine, case)``."""
    j = jobs(df, rules)
    j["job"] = j["backend"] + "/" + j["mode"]
    index = ["case"] if j[RUN].drop_duplicates().shape[0] == 1 else RUN + ["case"]
    return j.pivot_table(index=index, columns="job", values=value, aggfunc="first", observed=True)


def history(df: pd.DataFrame) -> pd.DataFrame:
    """Per job (``machine``, case, backend, mode, and ``env`` where some record ran
    in a release's environment) and commit, oldest first:
    ``compiles``, ``compiles_by_shape`` (novel compiles of each shape, as a
    tuple), ``novel_sweep_s`` and ``cached_median_s`` of the latest run at
    that commit, with the commit's first ``timestamp``."""
    df = flat(df)
    s = summary(df)
    shapes = per_shape(df)
    by_shape = (
        shapes.groupby(_jobs(df), dropna=False)["new_compiles"]
        .agg(lambda v: tuple(int(x) for x in v.fillna(0)))
        .rename("compiles_by_shape")
    )
    s = s.join(by_shape, on=_jobs(df))
    s = s.sort_values("timestamp")
    # a run over releases (--versions) has one job per release: one row each, not the latest of them
    keys = ["machine"] + JOB + releases(df) + ["commit"]
    latest = s.groupby(keys, dropna=False).tail(1).set_index(keys)
    since = s.groupby(keys, dropna=False)["timestamp"].min()
    out = latest.assign(timestamp=since)[
        ["timestamp", "run_id", "status", "compiles", "compiles_by_shape", "compile_time_s", "novel_sweep_s", "cached_median_s"]
    ].reset_index()
    return out.sort_values(["machine"] + JOB + ["timestamp"]).reset_index(drop=True)


#: a job's compile pattern over its novel sweep, from fewest compiles to most
PATTERNS = ("none", "once", "per bucket", "mixed", "per shape")


def compile_patterns(
    df: pd.DataFrame, summarised: pd.DataFrame | None = None, shapes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per job of :func:`summary` with ``pattern``: ``none`` (no
    compile), ``once`` (compiles on the first novel shape only), ``per shape``
    (on every novel shape, two or more), ``per bucket`` (a ``bucketed`` job
    that compiled again on some later shapes but not all), ``mixed`` (any
    other job), from the new compiles shape by shape of its first process;
    ``recompiled_shapes`` counts the later shapes that compiled. Only a job
    whose every record passed gets a pattern; the others keep their status.
    ``summarised``, ``shapes``: :func:`summary` and :func:`per_shape` of ``df``, where the caller has them."""
    df = flat(df)
    keys = _jobs(df)
    s = summary(df) if summarised is None else summarised
    shapes = (per_shape(df) if shapes is None else shapes).copy()
    shapes["compiled"] = shapes["new_compiles"].fillna(0) > 0
    first = shapes["shape_index"] == shapes.groupby(keys, dropna=False)["shape_index"].transform("min")
    shapes["later"] = shapes["compiled"] & ~first
    g = shapes.groupby(keys, dropna=False)
    per_job = pd.DataFrame(
        {
            "any_compiled": g["compiled"].any(),
            "all_compiled": g["compiled"].all(),
            "recompiled_shapes": g["later"].sum().astype("Int64"),
            "novel_shapes": g["shape_index"].nunique(),
        }
    ).reset_index()
    out = s.merge(per_job, on=keys, how="left")
    later = out["recompiled_shapes"].fillna(0) > 0
    pattern = pd.Series("mixed", index=out.index, dtype=object)
    pattern[~out["any_compiled"].fillna(False).astype(bool)] = "none"
    pattern[out["any_compiled"].fillna(False).astype(bool) & ~later] = "once"
    pattern[later & (out["mode"] == "bucketed") & ~out["all_compiled"].fillna(False).astype(bool)] = "per bucket"
    pattern[later & out["all_compiled"].fillna(False).astype(bool) & (out["novel_shapes"] >= 2)] = "per shape"
    out["pattern"] = pattern.where(out["status"] == "pass", out["status"].astype(object))
    return out.drop(columns=["any_compiled", "all_compiled", "novel_shapes"])


def family_table(df: pd.DataFrame, families: dict[str, str] | None = None, **given) -> pd.DataFrame:
    """``backend/mode`` × family: how many of the family's jobs follow each
    compile pattern (:func:`compile_patterns`), e.g. ``once 6, per shape 1``;
    a job that did not pass counts under its status, and a row whose every
    job was ``unsupported`` (a mode no case offers) is left out. ``families`` maps case
    names to families (default: :func:`cases.families`, the module that
    defines each case); a case it does not name is its own family. ``given``: as
    :func:`compile_patterns` takes them."""
    if families is None:
        import cases

        families = cases.families()
    p = compile_patterns(df, **given)
    p["family"] = p["case"].map(lambda c: families.get(c, c))
    p["job"] = p["backend"] + "/" + p["mode"]
    offered = p.groupby("job")["pattern"].transform(lambda v: (v != "unsupported").any())
    p = p[offered]
    order = {k: i for i, k in enumerate(PATTERNS)}
    counts = p.groupby(["job", "family", "pattern"], observed=True).size().rename("n").reset_index()
    counts["rank"] = counts["pattern"].map(lambda k: order.get(k, len(order)))
    counts = counts.sort_values(["job", "family", "rank", "pattern"])
    counts["cell"] = counts["pattern"] + " " + counts["n"].astype(str)
    cells = counts.groupby(["job", "family"])["cell"].agg(", ".join).reset_index()
    present = set(p["family"])
    column_order = [f for f in dict.fromkeys(families.values()) if f in present]
    column_order += sorted(present - set(column_order))
    table = cells.pivot(index="job", columns="family", values="cell").reindex(columns=column_order)
    return table.fillna("–").rename_axis(index="backend/mode", columns=None)
