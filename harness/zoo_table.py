"""The model zoo's pass-rate table: per (backend, mode), how many architectures
got how far, from a run's records (:func:`harness.results.load`).

A job (case, backend, mode) is one architecture on one path. Its fate is read
off its records: the worst status (:class:`harness.results.Status`), the first
failure (its message, diagnosis and the ``stage`` it was recorded in), the
cumulative compile count per stage. The columns, each a count of architectures
(zoo cases: names starting ``zoo_``):

``archs``
    jobs that ran (not skipped by the profile or unsupported by the mode's dims);
``exported``
    those not stopped at capture (a failure recorded in a capture stage: :data:`PHASES`);
``lowered``
    those not stopped by a missing lowering or implementation either;
``ran``
    those that produced an output on every shape (no error, crash, timeout, oom);
``oracle_equal``
    those whose every output matched the float64 oracle;
``compiled_once``
    jobs that compiled once (:func:`harness.sweep.compiled_once`, the leaderboard's too);
``per_size``
    jobs where some stage compiled on every novel shape (at least two shapes);
``crash``
    jobs where our own engines crashed (status ``crash``: a bug of ours, not the system's);
``first_x`` / ``cached_x``
    the geometric mean over oracle-equal architectures of the first-call
    (summed over the novel shapes) and the cached (median) latency, as a ratio
    to torch_eager's on the same case and mode, from the same run where it ran there
    (timings of two runs differ with the machine's load: run the baseline beside the
    backend for ratios to lean on), else from another run (any mode when that is missing).

Runs recorded before records carried ``stage`` read as stopped at ``run`` (an error) or
not attempted (a refusal).
"""

from __future__ import annotations

from typing import Any

from . import leaderboard, messages, sweep
from .results import Status

PREFIX = "zoo_"
COLUMNS = (
    "archs",
    "exported",
    "lowered",
    "ran",
    "oracle_equal",
    "compiled_once",
    "per_size",
    "crash",
    "first_x",
    "cached_x",
)
#: the compile stage a failure was recorded in (``Program.counting``, a refusal's own) ->
#: the table's phase; any other stage, or none (the call), is ``run``
PHASES = {
    "export": "export",
    "onnx_export": "export",
    "trace": "export",
    "lowering": "lowering",
    "aoti": "lowering",
    "compile_model": "lowering",
    "relax_build": "lowering",
    "iree_compile": "lowering",
}


def _worst(statuses) -> str:
    return Status.worst(statuses).value


def stage_of(status: str, stage: str | None) -> str | None:
    """Where a job stopped: ``export``, ``lowering``, ``run`` (no output), ``oracle``
    (a mismatch), ``idle`` (refused outside every stage: the mode's dims rule it out,
    not an attempt), or ``None`` (it passed, or only recompiled), from its worst status
    and the ``stage`` its failure was recorded in."""
    st = Status(status)
    if st in (Status.PASS, Status.RECOMPILED):
        return None
    if st is Status.MISMATCH:
        return "oracle"
    if stage:
        return PHASES.get(stage, "run")
    if st is Status.UNSUPPORTED:
        return "idle"
    return "run" if st.no_output or st is Status.OUT_OF_RANGE else None


def complete(g) -> bool:
    """Whether one run's records of a job (a frame) end it: its cached phase was
    measured, or a failure stopped it. A run killed mid-sweep is neither."""
    return bool((g["novel"].map(lambda v: v is False)).any() or (~g["status"].isin(("pass", "recompiled"))).any())


def latest_complete(df):
    """Of ``df``'s records, for each job (case, backend, mode, env), those of the newest run
    that completed it (:func:`complete`), or of the newest run when none did: reruns of a
    job after a fix, or with a longer timeout, replace its earlier attempt instead of
    mixing with it, and a rerun cut short does not hide the attempt that finished."""
    if not len(df):
        return df
    keys = ["case", "backend", "mode", "env"]
    keep = []
    for _, g in df.groupby(keys, sort=False, dropna=False):
        runs = sorted(g.groupby("run_id", sort=False), key=lambda rg: str(rg[1]["timestamp"].max()))
        done = [rg for rg in runs if complete(rg[1])]
        keep.append((done or runs)[-1][1])
    import pandas as pd

    return pd.concat(keep)


def jobs(df) -> list[dict[str, Any]]:
    """One dict per zoo job of ``df`` (records, :func:`harness.results.load`'s frame), from
    its newest complete run (:func:`latest_complete`). The per-job figures are the report's
    (:func:`harness.frames.summary`: status, novel shapes, the novel sweep, the cached
    call), the one per-job frame every output reads; this adds where the job stopped
    (:func:`stage_of`), its first failure's message and diagnosis, whether it compiled
    once (:func:`harness.sweep.compiled_once`), its largest stage count and the shapes
    that compiled."""
    from . import frames

    out: list[dict[str, Any]] = []
    zoo = latest_complete(df[df["case"].astype(str).str.startswith(PREFIX)])
    if not len(zoo):
        return out
    summary = {(r["case"], r["backend"], r["mode"]): r for r in frames.summary(zoo).to_dict("records")}
    for (case, backend, mode), g in zoo.groupby(["case", "backend", "mode"], sort=True):
        row = summary[(case, backend, mode)]
        status = str(row["status"])
        bad = [
            r for r in g.to_dict("records") if str(r["status"]) != "pass" and isinstance(r.get("message"), str) and r["message"]
        ]
        first = bad[0] if bad else {}
        novel = g[g["novel"].map(lambda v: v is True)]
        stages = [v for d in g["compile_stages"] if isinstance(d, dict) for v in d.values()]
        deltas = [d for d in novel.sort_values("shape_index")["compile_delta"]]
        out.append(
            {
                "case": case,
                "backend": backend,
                "mode": mode,
                "run_id": str(g["run_id"].iloc[0]) if "run_id" in g else None,
                "status": status,
                "stage": stage_of(status, _stage(first.get("stage"))),
                "message": first.get("message"),
                "diagnosis": first.get("diagnosis") if isinstance(first.get("diagnosis"), dict) else None,
                "once": sweep.compiled_once(g.to_dict("records")),
                "max_stage": max(stages, default=0),
                "shapes": int(row["shapes"]),
                "compiled_shapes": sum(1 for d in deltas if isinstance(d, dict) and sum(d.values()) > 0),
                "first_s": _num(row.get("novel_sweep_s")),
                "cached_s": _num(row.get("cached_median_s")),
            }
        )
    return out


def _stage(v) -> str | None:
    return v if isinstance(v, str) and v else None


def compiled_once(j: dict[str, Any]) -> bool:
    """Job ``j`` (:func:`jobs`) compiled once (:func:`harness.sweep.compiled_once`)."""
    return bool(j["once"])


def per_size(j: dict[str, Any]) -> bool:
    """Job ``j`` compiled on every novel shape of a sweep of at least two."""
    return j["shapes"] >= 2 and j["compiled_shapes"] == j["shapes"]


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def table(df, baseline: str = "torch_eager"):
    """The pass-rate table (:data:`COLUMNS`), one row per (backend, mode) of ``df``'s zoo jobs."""
    import pandas as pd

    js = jobs(df)
    # latency ratios pair a job with the baseline's run beside it in the same run (same load)
    # where there is one; else the same case and mode from another run, else any mode
    base_jobs = [j for j in js if j["backend"] == baseline and j["stage"] is None]
    same_run = {
        (j["case"], j["mode"], j["run_id"]): j
        for _, run in df[df["backend"] == baseline].groupby("run_id", sort=False)
        for j in jobs(run)  # every run of the baseline, not only its newest
        if j["stage"] is None
    }
    eager = {(j["case"], j["mode"]): j for j in base_jobs}
    eager_any = {j["case"]: j for j in base_jobs}
    rows = {}
    for key in sorted({(j["backend"], j["mode"]) for j in js}):
        mine = [j for j in js if (j["backend"], j["mode"]) == key and j["status"] != "skipped" and j["stage"] != "idle"]
        failed = {s: sum(1 for j in mine if j["stage"] == s) for s in ("export", "lowering", "run", "oracle")}
        equal = [j for j in mine if j["stage"] is None]
        ratios: dict[str, list[float]] = {"first_s": [], "cached_s": []}
        for j in equal:
            base = (
                same_run.get((j["case"], j["mode"], j["run_id"])) or eager.get((j["case"], j["mode"])) or eager_any.get(j["case"])
            )
            for col in ratios:
                if base and j[col] and base[col]:
                    ratios[col].append(j[col] / base[col])
        exported = len(mine) - failed["export"]
        lowered = exported - failed["lowering"]
        ran = lowered - failed["run"]
        rows[key] = {
            "archs": len(mine),
            "exported": exported,
            "lowered": lowered,
            "ran": ran,
            "oracle_equal": len(equal),
            "compiled_once": sum(1 for j in equal if compiled_once(j)),
            "per_size": sum(1 for j in mine if per_size(j)),
            "crash": sum(1 for j in mine if j["status"] == Status.CRASH),
            "first_x": leaderboard.geomean_iqr(ratios["first_s"])[0],
            "cached_x": leaderboard.geomean_iqr(ratios["cached_s"])[0],
        }
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    frame.index = pd.MultiIndex.from_tuples(list(rows), names=["backend", "mode"]) if rows else frame.index
    return frame


#: the issue's goals: (path, mode, the denominator's path and mode, what the denominator is)
GOALS = (
    ("stablehlo_xla", "bounded", "torch_export", "bounded", "exported by torch.export with dynamic dims"),
    ("lazy", "unbounded", "torch_eager", "unbounded", "run by torch eager"),
)
#: goals of opt-in paths (hours on the whole zoo; asv's zoo suite runs :data:`GOALS` only).
#: Every goal has a line only where its path ran: a run of the denominators alone has none
MEASURED_GOALS = (("stablehlo_iree", "unbounded", "torch_export", "bounded", "exported by torch.export with dynamic dims"),)
#: paths held when every stage compiled once (a module per program); the others when
#: nothing recompiled per novel size (a lazy trace may make a graph or two, not one per size)
ONE_MODULE = ("stablehlo_xla", "stablehlo_iree")


def goals(df) -> list[dict[str, Any]]:
    """Per reference path of :data:`GOALS` and :data:`MEASURED_GOALS` that ran in ``df``: of the
    architectures its denominator path carried
    (torch.export exported them: not stopped at capture; torch eager ran them oracle-equal),
    how many the path held -- StableHLO: oracle-equal with no stage compiled more than once;
    lazy: oracle-equal with no recompile per novel size -- the share, the ones it did not hold
    with their stage, and the wrong results or run-time errors of modules it built itself."""
    js = jobs(df)
    by = {(j["case"], j["backend"], j["mode"]): j for j in js}
    ran = {(j["backend"], j["mode"]) for j in js}
    out = []
    for path, mode, base, base_mode, what in (g for g in GOALS + MEASURED_GOALS if g[:2] in ran):
        carried = sorted(
            j["case"]
            for j in js
            if (j["backend"], j["mode"]) == (base, base_mode)
            and j["status"] != "skipped"
            and (j["stage"] is None or (base == "torch_export" and j["stage"] not in ("export", "idle")))
        )
        held, missed, wrong = [], {}, []
        for case in carried:
            j = by.get((case, path, mode))
            if j is None:
                missed[case] = "not run"
                continue
            once = compiled_once(j) if path in ONE_MODULE else not per_size(j)
            if j["stage"] is None and once:
                held.append(case)
            else:
                missed[case] = j["stage"] or (f"{j['max_stage']} compiles" if path in ONE_MODULE else "recompiled per size")
            if j["stage"] in ("oracle", "run"):
                wrong.append(case)
        out.append(
            {
                "path": path,
                "mode": mode,
                "of": what,
                "carried": len(carried),
                "held": len(held),
                "share": len(held) / len(carried) if carried else None,
                "missed": missed,
                "not_run": sum(1 for why in missed.values() if why == "not run"),
                "wrong_or_run_error": wrong,
            }
        )
    return out


def goals_markdown(rows: list[dict[str, Any]]) -> str:
    """:func:`goals` as Markdown: one line per path, then what it missed by stage."""
    lines = ["| path | mode | of the architectures | held | share | mismatches or run-time errors |", "|---|---|---|---|---|---|"]
    for r in rows:
        share = f"{r['share']:.0%}" if r["share"] is not None else "-"
        run = r["carried"] - r.get("not_run", 0)
        if r.get("not_run") and run:  # a sample of the zoo (a shard): its share too
            share += f"; {r['held'] / run:.0%} of the {run} run ({r['not_run']} not run)"
        lines.append(
            f"| {r['path']} | {r['mode']} | {r['carried']} {r['of']} | {r['held']} | {share} | {len(r['wrong_or_run_error'])} |"
        )
    for r in rows:
        if r["missed"]:
            by_stage: dict[str, list[str]] = {}
            for case, stage in sorted(r["missed"].items()):
                by_stage.setdefault(stage, []).append(case)
            parts = "; ".join(f"{stage}: {', '.join(cs)}" for stage, cs in sorted(by_stage.items()))
            lines.append(f"\n{r['path']} {r['mode']} did not hold: {parts}")
    return "\n".join(lines)


def failures(df) -> list[dict[str, Any]]:
    """The zoo's failure classes: per (backend, mode, stage) and message class (its
    :func:`harness.messages.headline`, the system's diagnosis in words where it gave one,
    classed by :func:`harness.messages.failure_class`), the count and the cases."""
    classes: dict[tuple, dict[str, Any]] = {}
    for j in jobs(df):
        if j["stage"] in (None, "idle"):
            continue
        msg = messages.headline(j["message"] or j["status"], j.get("diagnosis"))
        cls = messages.failure_class(msg, j["case"])
        c = classes.setdefault((j["backend"], j["mode"], j["stage"], cls), {"n": 0, "cases": [], "example": msg[:300]})
        c["n"] += 1
        c["cases"].append(j["case"])
    return [{"backend": b, "mode": m, "stage": s, "class": k, **v} for (b, m, s, k), v in sorted(classes.items())]


def markdown(frame) -> str:
    """The table as Markdown: counts as ``n``, ratios as ``1.23x`` (``-`` where none)."""
    head = "| backend | mode | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for (backend, mode), row in frame.iterrows():
        cells = [
            f"{row[c]:.2f}x"
            if c.endswith("_x") and row[c] == row[c] and row[c] is not None
            else ("-" if c.endswith("_x") else str(int(row[c])))
            for c in COLUMNS
        ]
        lines.append(f"| {backend} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| backend | mode | stage | n | class | cases |", "|---|---|---|---|---|---|"]
    for r in rows:
        cases = ", ".join(r["cases"][:6]) + (f" (+{len(r['cases']) - 6})" if len(r["cases"]) > 6 else "")
        lines.append(f"| {r['backend']} | {r['mode']} | {r['stage']} | {r['n']} | {r['class'].replace('|', '/')} | {cases} |")
    return "\n".join(lines)


def skipped_markdown(skipped: dict[str, str]) -> str:
    """The architectures the zoo enumerated but left out (:func:`cases.zoo.skipped`), with why."""
    lines = ["| architecture | why it is not a case |", "|---|---|"]
    lines += [f"| {name} | {why.replace('|', '/')} |" for name, why in sorted(skipped.items())]
    return "\n".join(lines)


#: the zoo's libraries, in the order the reports list them (``cases.zoo.LIBRARIES``' names)
LIBRARY_ORDER = ("transformers", "torchvision", "timm", "torch_geometric", "diffusers")


def library_of(case: str) -> str:
    """The model library of zoo case ``case`` (from the probed table, ``cases/zoo.json``), or ``other``."""
    from cases import zoo

    libraries = dict(zoo.LIBRARIES)
    for family, entries in zoo.table().items():
        if case in entries:
            return libraries.get(family, "other")
    return "other"


def by_library(df) -> dict[str, Any]:
    """``df``'s zoo records split by library (:data:`LIBRARY_ORDER`, then any other),
    then ``all`` of them: each part gives the zoo table and the leaderboard of one library."""
    zoo = df[df["case"].astype(str).str.startswith(PREFIX)]
    lib = zoo["case"].map(library_of)
    names = [n for n in LIBRARY_ORDER if (lib == n).any()] + sorted(set(lib) - set(LIBRARY_ORDER))
    return {**{n: zoo[lib == n] for n in names}, "all": zoo}
