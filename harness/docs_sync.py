"""Docs that cannot drift: the counts and tables the docs quote, generated.

A generated block in a Markdown page sits between ``<!-- generated: NAME -->``
and ``<!-- end generated -->``; :data:`GENERATORS` makes each NAME's text from
the catalogue, the registry or a recorded run. ``python -m harness.docs_sync``
rewrites every block; ``--check`` (``make docs``, ``tests/test_docs.py``) fails
on a block that differs from what its generator gives now, naming the page and
the block, so a count the docs quote changes with the code or the test fails.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the pages that hold generated blocks
PAGES = ("README.md", "docs/index.md", "docs/gate.md", "docs/asv.md", "docs/report.md")
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


@functools.cache
def _plan_counts() -> dict[str, int]:
    """The catalogue's jobs by what becomes of them, on the whole matrix and in the quick profile."""
    import cases
    from harness import registry, runner

    catalogue = cases.catalogue(checked=False)
    backends = registry.backends()
    whole = runner.plan(profile=None)

    def runs(combo) -> bool:
        return combo.skip_reason() is None

    opt_in = [c for c in whole if c.backend.opt_in and c.backend.unsupported_reason(c.case, c.mode) is None]
    zoo = [c for c in catalogue if c.name.startswith("zoo_")]
    models = [c for c in catalogue if "model" in c.tags]
    return {
        "cases": len(catalogue),
        "models": len(models),
        "zoo": len(zoo),
        "programs": len(catalogue) - len(models),
        "backends": len(backends),
        "plain_backends": len([b for b in backends.values() if not b.opt_in]),
        "modes": len(cases.MODES),
        "runnable": sum(map(runs, whole)),
        "opt_in": len(opt_in),
        "quick": sum(map(runs, runner.plan(profile="quick"))),
    }


def catalogue_counts() -> str:
    """The sentence of ``docs/gate.md`` that sizes the catalogue and the quick profile."""
    n = _plan_counts()
    return (
        f"The catalogue is {n['cases']:,} cases ({n['programs']} programs and {n['models']} models, "
        f"{n['zoo']} of them the generated zoo's) on {n['backends']} backends in up to {n['modes']} modes: "
        f"{n['runnable']:,} jobs run on the whole matrix here, besides {n['opt_in']:,} of the opt-in "
        f"backends'. The quick profile (`make run`, and the gate in `make test`) runs {n['quick']:,} of them.\n"
    )


def asv_grid() -> str:
    """The size of asv's every-combination grid (``benchmarks/suite.py``'s ``Compiles.params``)."""
    n = _plan_counts()
    cases = n["cases"] - n["zoo"]  # benchmarks/suite.py's CASES: the model zoo is followed by its own profile
    total = cases * n["plain_backends"] * n["modes"]
    return (
        f"every case × backend × mode but the model zoo's: {total:,} "
        f"({cases} cases × {n['plain_backends']} backends × {n['modes']} modes)\n"
    )


#: the recorded run the README's and docs/report.md's example tables come from:
#: ``harness run --cases gnn_edge_divide --full --jobs 2``, its records gzipped
EXAMPLE_RUN = ROOT / "docs" / "data" / "gnn_edge_divide.jsonl.gz"
#: the README's rows of it (backend, mode) and columns (headers of :mod:`harness.columns`)
README_ROWS = (
    ("torch_eager", "unbounded"),
    ("einx", "static"),
    ("einx_symbolic", "unbounded"),
    ("jax_jit", "static"),
    ("jax_export", "unbounded"),
    ("torch_compile", "static"),
    ("torch_compile", "unbounded"),
    ("lazy", "unbounded"),
    ("stablehlo_xla", "bounded"),
    ("torch_xla_lazy", "unbounded"),
)
README_COLUMNS = ("backend", "mode", "status", "expected", "compiles", "novel sweep", "cached call")


@functools.cache
def _example_summary():
    from harness import check, report, results

    if not EXAMPLE_RUN.exists():
        raise FileNotFoundError(f"{EXAMPLE_RUN.relative_to(ROOT)}: the example run is missing (record it: docs/report.md)")
    df = results.load([EXAMPLE_RUN])
    summary = report.summary(df)
    verdicts = check.verdicts(df, [EXAMPLE_RUN], by=report.job_by(summary), warn=False)
    return report.annotate(summary, df, judged=verdicts)


def einx_ratio() -> str:
    """The einx report's loop in one figure: einx's novel sweep against torch eager's, in the recorded run."""
    summary = _example_summary()
    row = summary[(summary["backend"] == "einx") & (summary["mode"] == "static")].iloc[0]
    return f"{row['compiles']:.0f} graph builds and {row['novel_vs_eager']:.0f}× torch eager's time\n"


def report_example() -> str:
    """docs/report.md's table: the recorded run's whole report, as ``harness report`` prints it."""
    from harness import report

    return report.markdown(_example_summary(), counters=False) + "\n"


def readme_example() -> str:
    """The README's table: :data:`README_ROWS` of the recorded run, in :data:`README_COLUMNS`."""
    from harness import columns, report

    summary = _example_summary()
    ran = summary[~summary["status"].isin(columns.IDLE)]
    picked = [ran[(ran["backend"] == b) & (ran["mode"] == m)] for b, m in README_ROWS]
    rows = [p for p in picked if len(p)]
    shown = {c.header: c for c in columns.shown(ran)}
    missing = [h for h in README_COLUMNS if h not in shown]
    if missing:
        raise ValueError(f"README example: no column {', '.join(missing)} in the report of {EXAMPLE_RUN.name}")
    import pandas as pd

    return report.table(pd.concat(rows), [shown[h] for h in README_COLUMNS]) + "\n"


#: block name -> the function that makes its text
GENERATORS: dict[str, Callable[[], str]] = {
    "catalogue-counts": catalogue_counts,
    "asv-grid": asv_grid,
    "readme-example": readme_example,
    "einx-ratio": einx_ratio,
    "report-example": report_example,
}


def blocks(text: str) -> list[tuple[str, str]]:
    """``(name, body)`` of each generated block of a page."""
    return [(m["name"], m["body"]) for m in BLOCK.finditer(text)]


def regenerate(text: str, where: str, made: dict[str, str] | None = None) -> str:
    """``text`` with each block's body made anew; an unknown block name raises naming ``where``."""
    made = {} if made is None else made

    def fill(m: re.Match) -> str:
        name = m["name"]
        if name not in GENERATORS:
            raise ValueError(f"{where}: unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        if name not in made:
            made[name] = GENERATORS[name]()
        return m.group(1) + made[name] + m.group(4)

    return BLOCK.sub(fill, text)


def drift(root: Path = ROOT) -> list[str]:
    """Each ``page: block`` whose text differs from what its generator gives now."""
    out: list[str] = []
    made: dict[str, str] = {}
    for page in PAGES:
        text = (root / page).read_text(encoding="utf-8")
        new = regenerate(text, page, made)
        out += [f"{page}: {a[0]}" for a, b in zip(blocks(text), blocks(new), strict=True) if a != b]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.docs_sync", description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 when a generated block is out of date (write nothing)")
    args = p.parse_args(argv)
    if args.check:
        stale = drift()
        for s in stale:
            print(f"docs_sync: out of date: {s} (run `python -m harness.docs_sync`)", file=sys.stderr)
        return 1 if stale else 0
    made: dict[str, str] = {}
    for page in PAGES:
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, page, made)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"docs_sync: rewrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
