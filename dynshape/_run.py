"""``dynshape.run`` and ``dynshape.report``: jobs in worker processes, as
``harness run`` runs them, and their rows as a DataFrame."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cases import models_base, packs, weights
from cases.model import Case, CaseError

from ._case import ORIGINS

#: the per-shape frame's leading columns (then ``size_<dim>``, the rest)
COLUMNS = [
    "case",
    "backend",
    "mode",
    "shape",
    "compiles",
    "new_compiles",
    "status",
    "first_call_s",
    "cached_s",
    "reason",
    "message",
]


def run(
    selected: Case | str | Iterable[Case | str],
    backends: str | Iterable[str] | None = None,
    modes: str | Iterable[str] | None = None,
    profile: str = "full",
    out: str | os.PathLike = "results",
    repeats: int = 3,
    warmup: int = 1,
    jobs: int = 1,
    timeout_s: float | None = None,
    progress: bool = True,
):
    """Run each case on the backends and modes (names or globs, default all)
    in worker processes, as ``harness run`` does, and return a
    ``pandas.DataFrame``: one row per job and shape (:func:`shapes`), a job
    that did not run one row with its status and reason. The records go to
    ``out/<run_id>.jsonl`` (``df.attrs["records"]``).

    The defaults are not the command line's: the ``full`` profile (a user's
    case's whole sweep; ``harness run`` runs ``quick``), 3 repeats after 1
    warm-up call (``harness run``: 7 after 2), for a quicker answer.

    Cases are :func:`dynshape.case` results (their defining file is loaded by
    the workers, of every environment), in-tree or pack case names, or paths of
    cases files. Called while a worker loads that file, it stops the load
    (:class:`cases.packs.StopLoading`): a script need not guard it.
    """
    if packs.loading():
        raise packs.StopLoading
    from harness import results, runner

    given = [selected] if isinstance(selected, (Case, str, os.PathLike)) else list(selected)
    names, files = _sources(given)
    with _files_env(files), _weights_env(out):
        for item in given:
            if isinstance(item, Case):
                models_base.publish_weights(item)  # every worker, of every environment, runs these weights
        combos = runner.plan(",".join(names), _globs(backends), _globs(modes))
        if not combos:
            raise CaseError(f"nothing to run: no case of {names} has the modes {modes!r}")
        r = runner.Runner(out, profile=profile, repeats=repeats, warmup=warmup, timeout_s=timeout_s, progress=progress)
        path = r.run(combos, jobs=jobs)
    frame = shapes(results.load([path]))
    frame.attrs["records"] = str(path)
    return frame


def _globs(v) -> str | None:
    return v if v is None or isinstance(v, str) else ",".join(v)


def _sources(given: list) -> tuple[list[str], list[str]]:
    """The case names to plan and the cases files the workers load: a case's
    defining file (given to this process as made, not loaded again), else the
    case pickled by value (cloudpickle: a notebook's case, main environment only)."""
    names: list[str] = []
    files: list[str] = []
    by_file: dict[str, list[Case]] = {}
    for item in given:
        if isinstance(item, Case):
            names.append(item.name)
            origin = ORIGINS.get(item.name)
            if origin and os.path.isfile(origin):
                by_file.setdefault(origin, []).append(item)
            else:
                files.append(_pickled(item))
        elif isinstance(item, os.PathLike) or (isinstance(item, str) and item.endswith(".py")):
            files.append(str(item))
            names += [c.name for c in packs.load_file(item)]
        else:
            names.append(str(item))
    for origin, made in by_file.items():
        packs.add_made(origin, made)
        files.append(origin)
    return names, files


def _pickled(item: Case) -> str:
    try:
        import cloudpickle
    except ImportError:
        raise CaseError(
            f"case {item.name!r}: made outside a file (a notebook?) and cloudpickle is not installed: "
            "define it in a .py file and pass that file"
        ) from None
    target = Path(tempfile.gettempdir()) / f"dynshape-case-{item.name}-{os.getpid()}.pkl"
    with open(target, "wb") as f:
        cloudpickle.dump((item,), f)
    packs.provide(target, (item,))
    return str(target)


@contextlib.contextmanager
def _files_env(files: list[str]):
    """:data:`cases.packs.FILES_ENV` naming ``files`` while the run plans and starts its workers."""
    before = os.environ.get(packs.FILES_ENV)
    packs.use(*files)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(packs.FILES_ENV, None)
        else:
            os.environ[packs.FILES_ENV] = before


@contextlib.contextmanager
def _weights_env(out):
    """Shared weights under ``out/.cache/weights`` unless ``$DYNSHAPE_WEIGHTS_DIR`` says where."""
    if os.environ.get(weights.ENV):
        yield
        return
    os.environ[weights.ENV] = str(Path(out).resolve() / ".cache" / "weights")
    try:
        yield
    finally:
        os.environ.pop(weights.ENV, None)


def shapes(df):
    """One row per job and novel shape of a run's records (:func:`harness.results.load`):
    :data:`COLUMNS` -- ``shape`` as ``"b=2, s=8"``, ``compiles`` the job's count
    after that shape's first call, ``new_compiles`` that call's, ``reason``
    the one the system gave for it, ``message`` the first failure's -- then
    ``size_<dim>`` and the other columns of :func:`harness.frames.per_shape`.
    A job with no shape (``unsupported``, ``skipped``) is one row with its status
    and message."""
    import pandas as pd

    from harness import frames, results

    flat = results.flat(df)
    keys = ["run_id", "machine", "case", "backend", "mode"]
    per = frames.per_shape(flat)
    novel = flat[flat["novel"].fillna(False) & (flat["process"] == 0)]
    first = novel.groupby(keys + ["shape_index"], dropna=False)[["compiles", "sizes"]].first()
    bad = flat[flat["status"] != "pass"]
    msg = bad.groupby(keys + ["shape_index"], dropna=False)["message"].first().rename("message")
    per = per.join(first, on=keys + ["shape_index"]).join(msg, on=keys + ["shape_index"])
    per["shape"] = per["sizes"].map(lambda s: ", ".join(f"{k}={v}" for k, v in s.items()) if isinstance(s, dict) else "")
    unshaped = flat[flat["shape_index"].isna()]
    unshaped = unshaped[~unshaped.set_index(keys).index.isin(per.set_index(keys).index)]
    rows = unshaped[keys + ["status", "message"]].assign(shape="", shape_index=pd.NA)
    out = pd.concat([per.drop(columns=["sizes"]), rows], ignore_index=True) if len(rows) else per.drop(columns=["sizes"])
    lead = [c for c in COLUMNS if c in out.columns]
    return out[lead + [c for c in out.columns if c not in lead]].reset_index(drop=True)


def records(df):
    """The records behind a frame of :func:`run` (``df.attrs["records"]``), or ``df`` itself."""
    from harness import results

    path = getattr(df, "attrs", {}).get("records")
    return results.load([path]) if path else df


def report(df, html: str | os.PathLike | None = None) -> str:
    """The run's summary table (one row per job, ``harness report``'s columns)
    as Markdown, for a frame of :func:`run` or records; with ``html``, the HTML
    report written there too. Returns the Markdown."""
    from harness import html_report
    from harness import report as rep

    recs = records(df)
    text = rep.markdown(rep.summary(recs))
    if html is not None:
        Path(html).write_text(html_report.render(recs), encoding="utf-8")
    return text
