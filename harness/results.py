"""Results: one JSON object per measured call, appended to ``results/<run-id>.jsonl``.

Every record carries ``schema``; :func:`load` reads the versions it knows and
refuses others by name.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path

from . import run_file
from .run_file import SCHEMA as SCHEMA
from .run_file import SharedWriter as SharedWriter  # the writers, re-exported where records are
from .run_file import Writer as Writer
from .status import Status as Status  # the one status type, re-exported where records are

#: the schemas this harness reads: 1 and 2 lack the newer fields, which load as
#: ``None``, as do the fields a line of schema 3 leaves out (:mod:`harness.run_file`)
READABLE = (1, 2, 3)

#: every status's value, worst first (derived from :class:`Status`, for pandas and messages)
STATUSES = tuple(s.value for s in Status)
SEVERITY = STATUSES
#: status order, best first: ``df["status"].max()`` of a flat frame is the worst
STATUS_ORDER = list(reversed(STATUSES))
_INTS = ("shape_index", "compiles", "cached_repeats", "process", "new_compiles")

#: fields every record has (``None`` where they do not apply: a run file leaves
#: those out, :func:`read_records` puts them back, :mod:`harness.run_file`). Timing rule,
#: the same for every backend: ``startup_s`` is the worker's start (interpreter,
#: framework import, helper processes: ``Backend.startup``; for a worker forked
#: from the fork server, from the fork on: ``machine["worker_start"]``); ``prepare_s`` the
#: work before the first call (``Backend.prepare``: export, lowering, tracing
#: done ahead); ``latency_s`` of a novel record the first call on that shape
#: (compiles included). ``compile_delta`` is the per-stage compile count of
#: this call (novel: the first call, and for shape 0 also ``prepare``; cached:
#: the whole cached phase of the shape), ``compile_reasons`` what the system
#: said about them, ``compile_times`` the job's cumulative seconds per stage.
FIELDS = (
    "schema",
    "run_id",
    "commit",
    "dirty",
    "machine",
    "timestamp",
    "versions",
    "profile",
    "case",
    "backend",
    "mode",
    "env",
    "shape_index",
    "sizes",
    "shapes",
    "novel",
    "startup_s",
    "prepare_s",
    "compiles",
    "compile_stages",
    "compile_delta",
    "compile_times",
    "compile_time_s",
    "compile_reasons",
    "guards",
    "latency_s",
    "cached_latency_s",
    "cached_iqr_s",
    "cached_repeats",
    "call_breakdown",
    "pad_s",
    "h2d_s",
    "d2h_s",
    "end_to_end_s",
    "work_delta",
    "work_times",
    "max_abs_err",
    "max_rel_err",
    "ok",
    "status",
    "message",
    "process",
    "cached_samples_s",
    "node",
    "cached_check_every",
    "stage",
    "diagnosis",
    "narrowed",
    "cases",
    "fingerprint",
    "reused_from",
    "started",
)
#: ``cases``: a record of planned jobs that did not run (``unsupported``/``skipped``)
#: stands for every case listed, each a job of its backend, mode and reason
#: (:func:`read_records` gives one record per case): the quick profile plans
#: ~40,000 such jobs, which one record each made a run file of 45 MB.
#: ``stage``: where a failure happened, recorded where it happened (the compile stage of
#: ``Program.counting`` the exception left, or the stage a refusal names; ``None`` for a
#: failure outside every stage: the call). ``diagnosis``: the system's own account of a
#: refusal, parsed (torch.export's broken guards, inferred ranges, suggested ``Dim``
#: fixes: :class:`engines.torch_export_diagnosis.Diagnosis`), with ``words``, the line
#: reports show. ``narrowed``: the range the job ran under where the system narrowed the
#: case's declared one (``{"declared": {dim: [lo, hi]}, "ran": {...}, "why": words}``).
#: ``message`` holds the system's message whole (reports show its first lines).
#: ``process``: which fresh worker of the job measured the record (0, then
#: 1… for ``harness run --processes N``, which repeats the novel phase);
#: ``cached_samples_s`` the raw per-repeat seconds behind ``cached_latency_s``;
#: ``cached_check_every`` k: every k-th cached call's output (each sample's last) was checked
#: against the oracle; ``node`` the host whose worker ran the job (a Dask worker's, with
#: ``--scheduler``), ``None`` where it is the run's own machine.
#: ``latency_s``/``cached_latency_s`` time the call on inputs already in the
#: backend's native form (padded, on the device) to outputs on the device;
#: ``pad_s`` (host padding, ``None`` where the mode pads nothing on the host),
#: ``h2d_s`` (host → native copy) and ``d2h_s`` (native → host copy and the
#: slice back to the live sizes) are timed apart (medians in a cached record),
#: ``end_to_end_s`` is their sum with the call. ``work_delta``/``work_times``:
#: per-shape work that is not a compile (``Backend.work_counters``), this
#: call's counts and the job's cumulative seconds per stage.


#: what each known field of a record may hold besides ``None`` (a field this
#: table does not name is not checked: newer harnesses add fields)
_NUM = (int, float)
TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(
        (
            "run_id",
            "commit",
            "timestamp",
            "profile",
            "env",
            "message",
            "node",
            "stage",
            "fingerprint",
            "reused_from",
            "started",
        ),
        (str,),
    ),
    **dict.fromkeys(("dirty", "novel", "ok"), (bool,)),
    **dict.fromkeys(
        (
            "machine",
            "versions",
            "sizes",
            "compile_stages",
            "compile_delta",
            "compile_times",
            "call_breakdown",
            "diagnosis",
            "narrowed",
        ),
        (dict,),
    ),
    **dict.fromkeys(("shapes", "compile_reasons", "guards", "cached_samples_s", "cases"), (list,)),
    **dict.fromkeys(
        (
            "startup_s",
            "prepare_s",
            "compile_time_s",
            "latency_s",
            "cached_latency_s",
            "cached_iqr_s",
            "max_abs_err",
            "max_rel_err",
        ),
        _NUM,
    ),
    **dict.fromkeys(_INTS, (int,)),
}
#: the statuses of a planned job that needed no worker (:attr:`Status.idle`)
IDLE_STATUSES = tuple(s.value for s in Status if s.idle)
#: fields a record cannot do without: what identifies its job and says how it ended
REQUIRED = ("run_id", "case", "backend", "mode", "status")


class ResultsError(ValueError):
    pass


class ResultsWarning(UserWarning):
    """A line of a results file was skipped (torn by an interrupted write, or corrupt)."""


def record(**fields) -> dict:
    """A record with every field present, in a stable order."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ResultsError(f"unknown record fields: {sorted(unknown)}")
    if fields.get("status") is not None and fields["status"] not in STATUSES:
        raise ResultsError(f"unknown status {fields['status']!r}; valid: {', '.join(STATUSES)}")
    out = {k: fields.get(k) for k in FIELDS}
    if out["status"] is not None:
        out["status"] = Status(out["status"]).value  # a plain string in the record, whichever was given
    out["schema"] = SCHEMA
    return out


def run_files(paths: Iterable[str | os.PathLike] | None = None, default_dir: str | os.PathLike = "results") -> list[Path]:
    """Expand files and directories to JSONL files; none given: the latest run in ``default_dir``."""
    paths = list(paths or [])
    if not paths:
        latest = latest_run(default_dir)
        if latest is None:
            raise ResultsError(f"no runs in {default_dir}/ (run `python -m harness run` first)")
        return [latest]
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise ResultsError(f"no results files (*.jsonl) in directory {p}")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise ResultsError(f"no such results file or directory: {p}")
    return out


def latest_run(directory: str | os.PathLike = "results") -> Path | None:
    files = sorted(Path(directory).glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))
    return files[-1] if files else None


def read_records(path: str | os.PathLike) -> list[dict]:
    """The records of one JSONL file.

    A line that is not a JSON object (the torn last line of a killed run, or
    a corrupt one) is skipped with a :class:`ResultsWarning` naming the file
    and line; a record of a schema this harness cannot read raises
    :class:`ResultsError` naming the version.
    """
    out = []
    blocks: dict[str, object] = {}  # the file's shared values by id (harness.run_file)
    unknown: set[str] = set()  # ids no line defined
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open  # a run kept compressed (docs/data/)
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                at = e.msg + (" column" if e.msg.endswith(" at") else " at column")
                warnings.warn(
                    ResultsWarning(
                        f"{path}:{n}: skipped a line that is not JSON ({at} {e.colno}; "
                        "a run killed mid-write leaves a torn last line)"
                    ),
                    stacklevel=2,
                )
                continue
            if not isinstance(rec, dict):
                warnings.warn(
                    ResultsWarning(
                        f"{path}:{n}: skipped a line that is not a record (a JSON {type(rec).__name__}, not an object)"
                    ),
                    stacklevel=2,
                )
                continue
            schema = rec.get("schema")
            if not isinstance(schema, int) or isinstance(schema, bool):
                warnings.warn(
                    ResultsWarning(f"{path}:{n}: skipped an object with no schema version (schema: {schema!r}): not a record"),
                    stacklevel=2,
                )
                continue
            if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
                raise ResultsError(
                    f"{path}:{n}: schema {schema} is newer than this harness reads "
                    f"(up to {SCHEMA}): update dynshape to read this file"
                )
            if schema not in READABLE:
                raise ResultsError(
                    f"{path}:{n}: schema {schema!r} is not supported (this harness reads {', '.join(map(str, READABLE))})"
                )
            defined = run_file.definitions(rec)
            if defined is not None:
                blocks.update(defined)
                continue
            rec, lost = run_file.whole(rec, FIELDS, blocks)
            if set(lost) - unknown:  # once per value: every record after names it too
                unknown.update(lost)
                warnings.warn(ResultsWarning(f"{path}:{n}: no line of the file defines {', '.join(lost)}"), stacklevel=2)
            ones = _expanded(rec, f"{path}:{n}")
            if ones:  # a group's records differ in their case (each a string) and message alone: one check
                check_record(ones[0], f"{path}:{n}")
            out += ones
    return out


def _expanded(rec: dict, where: str) -> list[dict]:
    """A record as the records it stands for: one per case of its ``cases`` (a group of jobs not run)."""
    group = rec.get("cases")
    if group is None:
        return [rec]
    if not isinstance(group, list) or not all(isinstance(c, str) for c in group) or rec.get("status") not in IDLE_STATUSES:
        raise ResultsError(f"{where}: field 'cases' must list case names of jobs not run (unsupported or skipped)")
    message = rec.get("message")
    if isinstance(message, str) and CASE_MARK in message:
        return [dict(rec, case=c, cases=None, message=message.replace(CASE_MARK, c)) for c in group]
    return [dict(rec, case=c, cases=None) for c in group]


def idle_groups(records: Iterable[dict]) -> list[dict]:
    """Records of jobs not run, one per (backend, mode, env, status, message) with its
    ``cases`` listed: what a run file keeps of them (:func:`read_records` expands it)."""
    groups: dict[tuple, dict] = {}
    for rec in records:
        message = rec.get("message")
        if isinstance(message, str) and rec["case"] in message:  # "... and zoo_x cannot pad": one reason for all
            message = message.replace(rec["case"], CASE_MARK)
        key = (rec["backend"], rec["mode"], rec.get("env"), rec["status"], message)
        if key in groups:
            groups[key]["cases"].append(rec["case"])
        else:
            groups[key] = dict(rec, case=None, cases=[rec["case"]], message=message)
    return list(groups.values())


#: in a group's message, where each case's name goes back (:func:`idle_groups`)
CASE_MARK = "<case>"


def check_record(rec: dict, where: str) -> None:
    """Refuse a record that lacks a :data:`REQUIRED` field or holds a value of
    the wrong type (:data:`TYPES`): a :class:`ResultsError` naming ``where``
    and the field, before a report mixes it in."""
    for k in REQUIRED:
        if not isinstance(rec.get(k), str):
            what = "missing" if rec.get(k) is None else f"{rec[k]!r} is {_a(rec[k])}, not a string"
            raise ResultsError(f"{where}: field {k!r} {what}: not a record of a run")
    if rec["status"] not in STATUSES:
        raise ResultsError(f"{where}: field 'status' {rec['status']!r} is not one of {', '.join(STATUSES)}")
    for k, want in TYPES.items():
        v = rec.get(k)
        if v is None or (isinstance(v, float) and v != v):  # NaN: a missing value written through pandas
            continue
        if isinstance(v, float) and int in want and v.is_integer():  # an int column pandas wrote as 3.0
            continue
        if not isinstance(v, want) or (isinstance(v, bool) and bool not in want):
            names = " or ".join("number" if t is float else t.__name__ for t in want if not (t is int and float in want))
            raise ResultsError(f"{where}: field {k!r} is {v!r} ({_a(v)}), expected {names}")


def _a(v) -> str:
    """``"an int"``, ``"a str"``: the type of ``v`` with its article."""
    name = type(v).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def load(paths: Iterable[str | os.PathLike] | None = None, default_dir="results", flatten: bool = False):
    """Records of the given runs (files or directories; default: the latest run) as a DataFrame
    (``flatten``: in the analysis form of :func:`flat`).

    Raises :class:`ResultsError` when the files hold no record at all.
    """
    files = run_files(paths, default_dir)
    recs = [r for p in files for r in read_records(p)]
    if not recs:
        raise ResultsError(
            f"no records in {', '.join(map(str, files))} (an empty run: was it interrupted before its first job finished?)"
        )
    df = _pd().DataFrame.from_records(recs, columns=list(FIELDS))
    return flat(df) if flatten else df


#: what one record stands for: a job's shape and phase (or the job itself,
#: ``shape_index`` null) in one run, in one environment (one per release with
#: ``run --versions``), on one machine, in one fresh worker
RECORD_KEY = ("run_id", "case", "backend", "mode", "env", "host", "process", "shape_index", "novel")


def duplicates(df) -> list[str]:
    """Each :data:`RECORD_KEY` held by more than one record of ``df`` (the
    frame :func:`load` gives), described as ``run case[backend-mode] shape i
    novel|cached on host ×n``: an attempt kept beside its retry, or a run
    appended to twice, whose latency columns would mix the attempts."""
    if not len(df):
        return []
    keys = (
        _pd()
        .DataFrame(
            {
                "run_id": df["run_id"],
                "case": df["case"],
                "backend": df["backend"],
                "mode": df["mode"],
                "env": df["env"] if "env" in df.columns else None,
                "host": df["machine"].map(lambda m: m.get("host") if isinstance(m, dict) else None),
                "process": df["process"].map(lambda v: 0 if v is None or v != v else int(v)),
                "shape_index": df["shape_index"].map(lambda v: None if v is None or v != v else int(v)),
                "novel": df["novel"].map(lambda v: None if v is None or v != v else bool(v)),
            }
        )
        .astype(object)
    )
    from backends.envs import release

    dup = keys[keys.duplicated(keep=False)]
    out = []
    for key, n in dup.value_counts(dropna=False, sort=False).items():
        k = dict(zip(RECORD_KEY, key, strict=False))
        what = "the job" if k["shape_index"] is None else f"shape {k['shape_index']} {'novel' if k['novel'] else 'cached'}"
        proc = f" process {k['process']}" if k["process"] else ""
        env = f"@{k['env']}" if release(k["env"]) else ""
        out.append(f"{k['run_id']} {k['case']}[{k['backend']}-{k['mode']}{env}] {what}{proc} on {k['host']} ×{n}")
    return out


def _pd():
    import pandas as pd

    return pd


def _dicts(series):
    """A column of dicts as a frame of their keys (missing: NA)."""
    rows = [v if isinstance(v, dict) else {} for v in series]
    return _pd().DataFrame(rows, index=series.index)


def flat(df):
    """One row per record with scalar columns: ``size_<dim>`` (from ``sizes``),
    ``compiles_<stage>`` (cumulative, from ``compile_stages``),
    ``new_compiles`` and ``new_compiles_<stage>`` (this call's, from
    ``compile_delta``), ``machine`` (the host name) with ``machine_cpu``,
    ``machine_cores``, ``machine_threads``, ``reason`` (the first compile
    reason); ``status`` an ordered categorical (pass < … < crashed),
    integers nullable (``Int64``), ``timestamp`` a UTC datetime. Idempotent."""
    if df.attrs.get("flat"):
        return df
    out = df.copy()
    pd = _pd()
    sizes = _dicts(out["sizes"]).add_prefix("size_")
    stages = _dicts(out["compile_stages"]).add_prefix("compiles_")
    delta = _dicts(out["compile_delta"])
    new = delta.add_prefix("new_compiles_")
    machine = _dicts(out["machine"])
    counted = out["compile_delta"].map(lambda v: isinstance(v, dict))
    out["new_compiles"] = delta.sum(axis=1) if len(delta.columns) else 0
    out["new_compiles"] = out["new_compiles"].where(counted)
    out["machine_cpu"] = machine.get("cpu")
    out["machine_cores"] = machine.get("cores")
    out["machine_threads"] = machine.get("threads")
    out["machine"] = machine.get("host", pd.Series(index=out.index, dtype=object)).fillna("?")
    out["reason"] = out["compile_reasons"].map(lambda v: v[0] if isinstance(v, list) and v else None)
    out = pd.concat([out, sizes.astype("Int64"), stages.astype("Int64"), new.astype("Int64")], axis=1)
    for col in _INTS + ("machine_cores", "machine_threads"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    out["status"] = out["status"].astype(pd.CategoricalDtype(STATUS_ORDER, ordered=True))
    out["timestamp"] = pd.to_datetime(out["timestamp"], utc=True, format="ISO8601")
    out["novel"] = out["novel"].astype("boolean")
    out["process"] = out["process"].fillna(0)
    out.attrs["flat"] = True
    return out
