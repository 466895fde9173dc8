"""Case packs: an installed distribution adds cases (and its own expectations)
through the ``dynshape.cases`` entry-point group, and ``harness run`` and the
gate run them, in worker processes, without this repository knowing them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cases
from cases import packs
from harness import expectations, results

ROOT = Path(__file__).resolve().parent.parent

PACK = """
import numpy as np
from cases.model import Case, Input, unbounded

EXPECTATIONS = "rules.toml"


def _torch():
    def double_then_shift(x):
        return x * 2 + 1
    return double_then_shift


def _jax():
    def double_then_shift(x):
        return x * 2 + 1
    return double_then_shift


CASES = (
    Case(name="pack_double", tags=("pack",), dims=(unbounded("n", min=1),), inputs=(Input("x", ("n",)),),
         sweep=tuple({"n": n} for n in (5, 6, 7)), oracle=lambda x: x * 2.0 + 1.0, out_shape=("n",),
         torch_fn=_torch, jax_fn=_jax),
)
"""

RULES = """
# the pack's own rule: torch_eager is stated here (pack cases only), the
# in-tree rules cover the rest
[[expect]]
case = "pack_*"
backend = "torch_eager"
per_shape = "{per_shape}"
"""


def _install(
    root: Path,
    module: str = "dynshape_pack_demo",
    body: str = PACK,
    per_shape: str = "0",
    entry: str | None = None,
    name: str = "demo",
) -> Path:
    """A pack 'installed' as a package plus a dist-info with its entry point (what pip leaves)."""
    pkg = root / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    (pkg / "rules.toml").write_text(RULES.format(per_shape=per_shape))
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[dynshape.cases]\n{name} = {entry or module}\n")
    return root


@pytest.fixture
def on_path(monkeypatch):
    """Put a directory on sys.path (and PYTHONPATH, for workers); forget cached packs before and after."""

    def forget() -> None:
        packs.packs.cache_clear()
        for name in [m for m in sys.modules if m.startswith("dynshape_pack")]:
            del sys.modules[name]

    def add(root: Path) -> None:
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
        forget()

    yield add
    forget()


def test_a_pack_adds_its_cases_and_scoped_rules(tmp_path, on_path):
    on_path(_install(tmp_path))
    names = [c.name for c in cases.catalogue()]
    assert "pack_double" in names and "gnn_edge_divide" in names
    rules = expectations.load()
    own = expectations.lookup(rules, "pack_double", "torch_eager", "static")
    assert own.source.endswith("rules.toml") and own.number == 1
    assert "rules.toml: rule #1" in own.describe()
    # the pack's glob "pack_*" never reaches the in-tree cases
    intree = expectations.lookup(rules, "gnn_edge_divide", "torch_eager", "static")
    assert intree.source is None


def test_a_pack_rule_that_names_no_case_of_its_own_is_refused(tmp_path, on_path):
    on_path(_install(tmp_path))
    (tmp_path / "dynshape_pack_demo" / "rules.toml").write_text('[[expect]]\ncase = "gnn_*"\nper_shape = "0"\n')
    with pytest.raises(
        expectations.ExpectationError,
        match=r"rules.toml: rule #1, key 'case': 'gnn_\*' matches no "
        r"case; valid: pack_double",
    ):
        expectations.load()


@pytest.mark.parametrize(
    "body,entry,message",
    [
        ("X = 1\n", None, r"module dynshape_pack_bad has no CASES"),
        ("CASES = (1, 2)\n", None, r"gives int, expected a sequence of cases.Case"),
        ("def make():\n    raise RuntimeError('no data')\n", "dynshape_pack_bad:make", r"raised RuntimeError: no data"),
        ("import not_a_module_here\n", None, r"cannot load: ModuleNotFoundError"),
        ("import sys\nsys.exit(3)\n", None, r"cannot load: it called sys.exit\(3\) on import"),
        ("def make():\n    raise SystemExit('bye')\n", "dynshape_pack_bad:make", r"called sys.exit\('bye'\)"),
        (
            PACK.replace('name="pack_double"', 'name="pk_glob[1]"'),
            None,
            r"cannot load: CaseError: case 'pk_glob\[1\]', field 'name': must be letters, digits",
        ),
    ],
)
def test_a_broken_pack_is_an_error_naming_its_entry_point(tmp_path, on_path, body, entry, message):
    on_path(_install(tmp_path, "dynshape_pack_bad", body, entry=entry, name="bad"))
    with pytest.raises(cases.CaseError, match=r"case pack 'bad' \(dynshape.cases entry point .*\): " + message):
        packs.packs()


def test_a_pack_exiting_on_import_is_a_usage_error_naming_it(tmp_path, on_path, capsys):
    """It used to end the harness with no message (SystemExit is no Exception)."""
    from harness import cli

    on_path(_install(tmp_path, "dynshape_pack_bad", "import sys\nsys.exit(0)\n", name="bad"))
    assert cli.main(["list"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        "dynshape: case pack 'bad' (dynshape.cases entry point 'dynshape_pack_bad'): cannot load: "
        "it called sys.exit(0) on import\n"
    )


def _run(args, env_root: Path, cwd: Path = ROOT, timeout: int = 600):
    env = dict(
        os.environ,
        DYNSHAPE_GATE_WHOLE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(env_root), os.environ.get("PYTHONPATH")])),
    )
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_harness_run_and_the_gate_run_an_out_of_tree_pack(tmp_path):
    root = _install(tmp_path / "site")
    out = tmp_path / "out"
    run = _run(
        [
            "-m",
            "harness",
            "run",
            "--cases",
            "pack_double",
            "--backends",
            "torch_eager,jax_jit",
            "--modes",
            "static,unbounded",
            "--out",
            str(out),
            "--repeats",
            "2",
            "--no-progress",
            "--whole-matrix",
        ],
        root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    recs = [r for f in out.glob("*.jsonl") for r in results.read_records(f)]
    assert {r["status"] for r in recs if r["backend"] == "jax_jit" and r["mode"] == "unbounded"} == {"unsupported"}
    recs = [r for r in recs if r["status"] != "unsupported"]
    jobs = {(r["backend"], r["mode"]) for r in recs}
    assert jobs == {("torch_eager", "static"), ("torch_eager", "unbounded"), ("jax_jit", "static")}
    assert {r["status"] for r in recs} == {"pass"} and {r["case"] for r in recs} == {"pack_double"}
    report = _run(["-m", "harness", "report", *map(str, out.glob("*.jsonl"))], root)
    assert "| pack_double | torch_eager | static | pass | = 0/shape |" in report.stdout, report.stdout + report.stderr

    gate = _run(
        [
            "-m",
            "pytest",
            "cases/test_conformance.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-k",
            "pack_double and torch_eager",
            "--dynshape-out",
            str(tmp_path / "gate"),
        ],
        root,
    )
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "2 passed" in gate.stdout


def test_the_gate_fails_a_pack_case_that_breaks_its_own_rule(tmp_path):
    """The pack's rule is what judges its case: state 1 compile per shape for
    torch_eager (which compiles nothing) and the gate fails, naming the rule."""
    root = _install(tmp_path / "site", per_shape="1")
    gate = _run(
        [
            "-m",
            "pytest",
            "cases/test_conformance.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-k",
            "pack_double and torch_eager and static",
            "--dynshape-out",
            "none",
        ],
        root,
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "rules.toml: rule #1" in gate.stdout


def test_every_backend_and_mode_has_a_default_rule_for_an_unseen_program():
    """A pack judged only by the in-tree rules gets a rule on every row (the
    torch_xla StableHLO rows had none: 48 'no rule' jobs)."""
    from harness import registry

    rules = expectations.load()
    missing = [
        (n, m)
        for n, b in registry.backends().items()
        for m in b.modes
        if expectations.lookup(rules, "unseen_program", n, m) is None
    ]
    assert missing == []


def _pack_source(root: Path) -> Path:
    """A pack as its author ships it: a pyproject.toml naming its entry point, and its module."""
    src = root / "demo-pack"
    (src / "dynshape_pack_demo").mkdir(parents=True)
    (src / "dynshape_pack_demo" / "__init__.py").write_text(textwrap.dedent(PACK))
    (src / "dynshape_pack_demo" / "rules.toml").write_text(RULES.format(per_shape="0"))
    (src / "pyproject.toml").write_text(
        '[project]\nname = "dynshape-pack-demo"\nversion = "0.2"\n\n'
        '[project.entry-points."dynshape.cases"]\ndemo = "dynshape_pack_demo"\n'
    )
    return src


def test_packs_install_puts_a_pack_in_every_environment_and_a_missing_one_is_named(tmp_path, monkeypatch, capsys):
    """``dynshape packs install PATH`` works without pip or wheel (what .venv-xla lacks): here into a bare
    venv standing for the xla environment. Before, a job of that environment is planned as skipped,
    naming the pack and the command; after, it is planned to run."""
    from backends import envs
    from harness import cli, pack_envs, registry, runner
    from harness.commands import run as run_command

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    src = _pack_source(tmp_path)
    monkeypatch.setattr(envs, "python_for", lambda env: python if env == "xla" else sys.executable)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    pack_envs.packs_in.cache_clear()
    assert pack_envs.missing_reason("demo", "xla") == (
        f"case pack 'demo' is not installed in env xla ({python}): install it into every environment with "
        "`dynshape packs install PATH`"
    )
    # this process has the pack installed, as the main environment would (not on PYTHONPATH, which
    # the other environment's workers would inherit)
    monkeypatch.syspath_prepend(str(_install(tmp_path / "site")))
    packs.packs.cache_clear()
    try:
        xla = next(b for b in registry.backends().values() if b.env == "xla" and "static" in b.modes)
        monkeypatch.setattr(type(xla), "available", lambda self: (True, ""))  # its env is the bare venv here
        combo = runner.Combo(cases.get("pack_double"), xla, "static")
        if combo.skip_reason() is not None:
            pytest.skip(f"{xla.name} cannot run here: {combo.skip_reason()}")
        (skipped,) = run_command.packs_missing([combo])
        assert skipped.skip_reason() == ("skipped", pack_envs.missing_reason("demo", "xla"))
        assert capsys.readouterr().err == (
            f"dynshape: warning: {pack_envs.missing_reason('demo', 'xla')}; its jobs there are skipped\n"
        )
        assert cli.main(["list"]) == 0
        assert f"{xla.name} (pack 'demo' not installed in env xla)" in capsys.readouterr().out
        assert pack_envs.install(src, {"xla": python}) == {"xla": ["demo"]}
        assert pack_envs.missing_reason("demo", "xla") is None
        assert cli.main(["list"]) == 0
        assert "(pack 'demo' not installed" not in capsys.readouterr().out
        # the bare venv has no numpy to run the pack with: that it finds the pack's source is the point
        got = subprocess.run(
            [python, "-c", "import importlib.util as u; print(u.find_spec('dynshape_pack_demo').origin)"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert got.stdout.strip() == str(src / "dynshape_pack_demo" / "__init__.py"), got.stderr
        assert pack_envs.install(src, {"xla": python}) == {"xla": ["demo"]}  # again: replaced, not doubled
    finally:
        packs.packs.cache_clear()
        sys.modules.pop("dynshape_pack_demo", None)
        pack_envs.packs_in.cache_clear()


def test_packs_install_of_a_directory_that_is_no_pack_exits_2(tmp_path, capsys):
    from harness import cli

    assert cli.main(["packs", "install", str(tmp_path)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == (
        f'dynshape: {tmp_path}: no pyproject.toml (a case pack declares its [project.entry-points."dynshape.cases"])\n'
    )


@pytest.mark.slow
def test_a_pack_that_breaks_after_planning_fails_only_its_own_jobs(tmp_path, on_path):
    """The run plans with the pack loading; then its module goes missing and another pack whose
    module is missing is installed (as happened mid-run): the pack's own jobs fail, naming
    it, and every other job of the catalogue's selection runs."""
    from harness import runner

    site = _install(tmp_path / "site")
    on_path(site)
    combos = runner.plan("pack_double,gnn_edge_divide", "torch_eager", "static")
    assert {c.source for c in combos} == {"pack:demo", "gnn"}
    (site / "dynshape_pack_demo" / "__init__.py").write_text("import not_a_module_here\n")
    _install(site, "dynshape_pack_late", "import not_a_module_either\n", name="late")
    got: list[dict] = []
    runner.Runner(tmp_path / "out", profile="quick", repeats=1, warmup=1, progress=False).run(combos)
    for f in (tmp_path / "out").glob("*.jsonl"):
        got += results.read_records(f)
    by_case = {c: {r["status"] for r in got if r["case"] == c} for c in ("pack_double", "gnn_edge_divide")}
    assert by_case == {"pack_double": {"error"}, "gnn_edge_divide": {"pass"}}
    (bad,) = [r for r in got if r["case"] == "pack_double"]
    assert "case pack 'demo'" in bad["message"] and "ModuleNotFoundError" in bad["message"]
