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

from .results import STATUS_ORDER, flat  # noqa: F401 (the flat frame is the loader's)

#: the dtype of a flat frame's ``status``: ordered, best first
STATUS = pd.CategoricalDtype(STATUS_ORDER, ordered=True)
JOB = ["case", "backend", "mode"]
RUN = ["run_id", "machine"]
BASELINE = "torch_eager"


def _jobs(df: pd.DataFrame) -> list[str]:
    return RUN + JOB


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job: ``status`` (the worst record), ``shapes``,
    ``compiles`` (the job's total), ``novel_sweep_s`` (``prepare_s`` plus
    the first calls; the median over processes with ``--processes``),
    ``cached_median_s`` (median over shapes of the cached medians),
    ``novel_vs_eager``/``cached_vs_eager`` (torch eager of the same run,
    machine and case; the same mode where it ran)."""
    df = flat(df)
    keys = _jobs(df)
    g = df.groupby(keys, dropna=False, observed=True, sort=True)
    out = g.agg(status=("status", "max"), commit=("commit", "first"), profile=("profile", "first"),
                timestamp=("timestamp", "min")).reset_index()
    novel = df[df["novel"].fillna(False)]
    per_proc = (novel.groupby(keys + ["process"], dropna=False, sort=False)
                .agg(calls=("latency_s", "sum"), timed=("latency_s", "count"), prepare=("prepare_s", "first"),
                     shapes=("shape_index", "nunique"), compiles=("compiles", "last")).reset_index())
    per_proc["sweep"] = per_proc["calls"].where(per_proc["timed"] > 0) + per_proc["prepare"].fillna(0.0)
    first = per_proc[per_proc["process"] == 0].set_index(keys)[["shapes", "compiles"]]
    sweep = per_proc.groupby(keys, dropna=False)["sweep"].median().rename("novel_sweep_s")
    cached = df[(df["novel"] == False) & (df["status"] == "pass")]  # noqa: E712
    cmed = cached.groupby(keys, dropna=False)["cached_latency_s"].median().rename("cached_median_s")
    out = out.join(first, on=keys).join(sweep, on=keys).join(cmed, on=keys)
    out["shapes"] = out["shapes"].fillna(0).astype("Int64")
    out["compiles"] = out["compiles"].astype("Int64")
    out["compiles_per_shape"] = (out["compiles"] / out["shapes"].replace(0, pd.NA)).astype("Float64")
    return relative(out)


def relative(jobs: pd.DataFrame) -> pd.DataFrame:
    """Add ``novel_vs_eager`` and ``cached_vs_eager`` to a per-job frame:
    divide by torch eager of the same run, machine and case, in the same mode
    where eager ran it, else in any mode (>1: slower)."""
    cols = ["novel_sweep_s", "cached_median_s"]
    base = jobs[jobs["backend"] == BASELINE]
    on = [k for k in RUN if k in jobs.columns] + ["case"]
    same = base[on + ["mode"] + cols].drop_duplicates(on + ["mode"])
    anymode = base[on + cols].drop_duplicates(on)
    m = (jobs.merge(same, on=on + ["mode"], how="left", suffixes=("", "_eager"))
         .merge(anymode, on=on, how="left", suffixes=("", "_any")))
    for c, r in (("novel_sweep_s", "novel_vs_eager"), ("cached_median_s", "cached_vs_eager")):
        ref = m[f"{c}_eager"].fillna(m[f"{c}_any"]).astype("Float64")
        m[r] = (m[c].astype("Float64") / ref.where(ref > 0)).astype("Float64")
    return m.drop(columns=[f"{c}_{s}" for c in cols for s in ("eager", "any")])


def per_shape(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job and novel shape: ``size_<dim>``, ``first_call_s``
    (the first call; median over processes), ``new_compiles`` and per stage,
    the ``reason`` given, ``cached_s`` (the cached median) and ``status``
    (the worst of the shape's records)."""
    df = flat(df)
    keys = _jobs(df) + ["shape_index"]
    novel = df[df["novel"].fillna(False)]
    sizes = [c for c in df.columns if c.startswith("size_") and df[c].notna().any()]
    stages = [c for c in df.columns if c.startswith("new_compiles_") and novel[c].notna().any()]
    p0 = novel[novel["process"] == 0]
    first = p0.groupby(keys, dropna=False)[sizes + ["new_compiles"] + stages + ["reason"]].first()
    lat = novel.groupby(keys, dropna=False)["latency_s"].median().rename("first_call_s")
    cached = df[df["novel"] == False].groupby(keys, dropna=False)["cached_latency_s"].median()  # noqa: E712
    status = df[df["shape_index"].notna()].groupby(keys, dropna=False, observed=True)["status"].max()
    out = first.join(lat).join(cached.rename("cached_s")).join(status).reset_index()
    return out.sort_values(keys).reset_index(drop=True)


def jobs(df: pd.DataFrame, rules=None) -> pd.DataFrame:
    """:func:`summary` with ``expected`` (the gate's verdict against
    ``cases/expectations.toml``), ``outcome`` (pass, fail, xfail, xpass,
    norule, idle) and ``why`` (the first compile reason after shape 0)."""
    from . import expectations

    df = flat(df)
    rules = expectations.load() if rules is None else rules
    keys = _jobs(df)
    s = summary(df)

    def judge(g: pd.DataFrame) -> pd.Series:
        rec = g.assign(status=g["status"].astype(object),
                       novel=g["novel"].astype(object).where(g["novel"].notna(), None)).to_dict("records")
        name = g.name if isinstance(g.name, tuple) else (g.name,)
        key = dict(zip(keys, name))
        v = expectations.verdict(rec, expectations.lookup(rules, key["case"], key["backend"], key["mode"]))
        return pd.Series({"expected": v.note, "outcome": v.outcome})

    verdicts = df.groupby(keys, dropna=False, sort=False, observed=True)[list(df.columns)].apply(judge)
    shapes = per_shape(df)
    later = shapes[(shapes["new_compiles"] > 0) & (shapes["shape_index"] > 0)]
    first = later.groupby(keys, dropna=False).first()
    why = ("shape " + first["shape_index"].astype(str) + ": " + first["reason"].fillna("(no reason given)")).rename("why")
    out = s.join(verdicts, on=keys).merge(why.reset_index(), on=keys, how="left")
    out["why"] = out["why"].fillna("")
    return out


def conformance_matrix(df: pd.DataFrame, value: str = "status", rules=None) -> pd.DataFrame:
    """Cases × ``backend/mode``: each job's ``status`` (or ``value``: any
    column of :func:`jobs`, e.g. ``expected``, ``outcome``, ``why``); with
    several runs or machines, the rows are ``(run_id, machine, case)``."""
    j = jobs(df, rules)
    j["job"] = j["backend"] + "/" + j["mode"]
    index = ["case"] if j[RUN].drop_duplicates().shape[0] == 1 else RUN + ["case"]
    return j.pivot_table(index=index, columns="job", values=value, aggfunc="first", observed=True)


def history(df: pd.DataFrame) -> pd.DataFrame:
    """Per job (``machine``, case, backend, mode) and commit, oldest first:
    ``compiles``, ``compiles_by_shape`` (novel compiles of each shape, as a
    tuple), ``novel_sweep_s`` and ``cached_median_s`` of the latest run at
    that commit, with the commit's first ``timestamp``."""
    df = flat(df)
    s = summary(df)
    shapes = per_shape(df)
    by_shape = (shapes.groupby(_jobs(df), dropna=False)["new_compiles"]
                .agg(lambda v: tuple(int(x) for x in v.fillna(0))).rename("compiles_by_shape"))
    s = s.join(by_shape, on=_jobs(df))
    s = s.sort_values("timestamp")
    keys = ["machine"] + JOB + ["commit"]
    latest = s.groupby(keys, dropna=False).tail(1).set_index(keys)
    since = s.groupby(keys, dropna=False)["timestamp"].min()
    out = latest.assign(timestamp=since)[["timestamp", "run_id", "status", "compiles", "compiles_by_shape",
                                          "novel_sweep_s", "cached_median_s"]].reset_index()
    return out.sort_values(["machine"] + JOB + ["timestamp"]).reset_index(drop=True)


#: a job's compile pattern over its novel sweep, from fewest compiles to most
PATTERNS = ("none", "once", "per bucket", "mixed", "per shape")


def compile_patterns(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job of :func:`summary` with ``pattern``: ``none`` (no
    compile), ``once`` (compiles on the first novel shape only), ``per shape``
    (on every novel shape, two or more), ``per bucket`` (a ``bucketed`` job
    that compiled again on some later shapes but not all), ``mixed`` (any
    other job), from the new compiles shape by shape of its first process;
    ``recompiled_shapes`` counts the later shapes that compiled. Only a job
    whose every record passed gets a pattern; the others keep their status."""
    df = flat(df)
    keys = _jobs(df)
    s = summary(df)
    shapes = per_shape(df)
    shapes["compiled"] = shapes["new_compiles"].fillna(0) > 0
    first = shapes["shape_index"] == shapes.groupby(keys, dropna=False)["shape_index"].transform("min")
    shapes["later"] = shapes["compiled"] & ~first
    g = shapes.groupby(keys, dropna=False)
    per_job = pd.DataFrame({"any_compiled": g["compiled"].any(), "all_compiled": g["compiled"].all(),
                            "recompiled_shapes": g["later"].sum().astype("Int64"),
                            "novel_shapes": g["shape_index"].nunique()}).reset_index()
    out = s.merge(per_job, on=keys, how="left")
    later = out["recompiled_shapes"].fillna(0) > 0
    pattern = pd.Series("mixed", index=out.index, dtype=object)
    pattern[~out["any_compiled"].fillna(False).astype(bool)] = "none"
    pattern[out["any_compiled"].fillna(False).astype(bool) & ~later] = "once"
    pattern[later & (out["mode"] == "bucketed") & ~out["all_compiled"].fillna(False).astype(bool)] = "per bucket"
    pattern[later & out["all_compiled"].fillna(False).astype(bool) & (out["novel_shapes"] >= 2)] = "per shape"
    out["pattern"] = pattern.where(out["status"] == "pass", out["status"].astype(object))
    return out.drop(columns=["any_compiled", "all_compiled", "novel_shapes"])


def family_table(df: pd.DataFrame, families: dict[str, str] | None = None) -> pd.DataFrame:
    """``backend/mode`` × family: how many of the family's jobs follow each
    compile pattern (:func:`compile_patterns`), e.g. ``once 6, per shape 1``;
    a job that did not pass counts under its status, and a row whose every
    job was ``unsupported`` (a mode no case offers) is left out. ``families`` maps case
    names to families (default: :func:`cases.families`, the module that
    defines each case); a case it does not name is its own family."""
    if families is None:
        import cases

        families = cases.families()
    p = compile_patterns(df)
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
