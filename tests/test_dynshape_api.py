"""Your own model: ``import dynshape``, a cases file (``--cases-from``), the
``make_inputs`` hook, ``dynshape check``, the float64 oracle, shared weights
and the pytest plugin (issue 34)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dynshape
from cases import models_base, packs, weights
from cases.model import Case, CaseError, Input, Tolerance, unbounded
from harness import cli, results

ROOT = Path(__file__).resolve().parent.parent


def _clean_env(**extra) -> dict:
    """This environment without a path into the checkout (only the project's installed environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", packs.FILES_ENV)}
    return {**env, **extra}


# -- the API, from a script outside the checkout -------------------------------

SCRIPT = """
import dynshape
from torchvision.ops import MLP

model = MLP(16, [32, 8])
mlp = dynshape.case(model, inputs={"x": ("b", 16)}, sweep={"b": [2, 3]})
df = dynshape.run(mlp, backends="torch_eager,torch_export,lazy", modes="static,unbounded", progress=False)
import pandas
pandas.set_option("display.width", 200)
print(df[["backend", "mode", "shape", "compiles", "status"]].to_string())
"""


@pytest.mark.slow
def test_ten_line_script_outside_the_checkout(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT)
    assert len(SCRIPT.strip().splitlines()) <= 10
    got = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=600
    )
    assert got.returncode == 0, got.stderr[-3000:]
    rows = [line.split() for line in got.stdout.splitlines()[1:]]
    table = {(r[1], r[2], r[3]): (int(r[4]), r[5]) for r in rows}
    assert len(table) == 12, got.stdout
    assert table[("torch_export", "unbounded", "b=3")] == (1, "pass")  # one export for both shapes
    assert table[("torch_export", "static", "b=3")] == (2, "pass")  # one per shape
    assert table[("lazy", "unbounded", "b=3")] == (1, "pass")
    assert table[("torch_eager", "static", "b=2")] == (0, "pass")
    assert list((tmp_path / "results").glob("*.jsonl")), "the records go to ./results"


def test_case_infers_dims_and_out_shape():
    import torch

    c = dynshape.case(torch.nn.Linear(4, 3), inputs={"x": ("b", "s", 4)}, sweep={"b": [1, 2], "s": [5, 7]})
    assert c.name == "linear"
    assert c.out_shape == ("b", "s", 3)
    assert [d.name for d in c.dynamic_dims] == ["b", "s"]
    x = c.make_inputs({"b": 2, "s": 7}, seed=0)
    np.testing.assert_allclose(c.expected(x), c.torch_fn()(torch.from_numpy(x[0])).numpy(), atol=1e-6)
    with pytest.raises(CaseError, match="field 'dims': input 'x' uses dim 'd'"):
        dynshape.case(torch.nn.Linear(4, 3), inputs={"x": ("b", "d")}, sweep={"b": [1, 2]})


def test_jax_and_einx_programs_get_float64_oracles():
    import jax.numpy as jnp

    j = dynshape.case(lambda x: jnp.sin(x) * 2, name="sin2", framework="jax", inputs={"x": ("n",)}, sweep={"n": [3, 4]})
    x = j.make_inputs({"n": 4}, seed=0)
    assert j.expected(x).dtype == np.float64
    np.testing.assert_allclose(j.expected(x), np.sin(x[0].astype(np.float64)) * 2, rtol=1e-15)
    e = dynshape.case(dynshape.einx_call("sum", "b [n] d"), inputs={"x": ("b", "n", 3)}, sweep={"b": [2, 3], "n": [4, 5]})
    assert e.out_shape == ("b", 3)
    x = e.make_inputs({"b": 2, "n": 4}, seed=0)
    np.testing.assert_allclose(e.expected(x), x[0].astype(np.float64).sum(axis=1), rtol=1e-15)


def test_run_stops_a_loading_file():
    packs._collecting.append([])
    try:
        with pytest.raises(packs.StopLoading):
            dynshape.run("whatever")
    finally:
        packs._collecting.pop()


def test_a_case_made_without_a_file_travels_by_value(tmp_path):
    """A notebook's case (no ``__file__``): pickled with cloudpickle for the workers."""
    from dynshape import _run

    scope = {"dynshape": dynshape}
    exec('c = dynshape.case(lambda x: x + 1, name="nb_case", inputs={"x": ("n",)}, sweep={"n": [2, 3]})', scope)
    names, files = _run._sources([scope["c"]])
    assert names == ["nb_case"] and files[0].endswith(".pkl")
    del packs._FILES[str(Path(files[0]).resolve())]  # what a worker sees: only the file
    (back,) = packs.load_file(files[0])
    x = back.make_inputs({"n": 3}, seed=0)
    np.testing.assert_array_equal(back.torch_fn()(*map(__import__("torch").from_numpy, x)).numpy(), x[0] + 1)


# -- a cases file, its make_inputs hook, and bad files --------------------------

CASES_FILE = """
import os
import numpy as np
from cases.model import Case, Input, unbounded


def segment_inputs(sizes, rng):
    # a sorted batch vector with every segment non-empty: no generator name says that
    open(os.environ["DYNSHAPE_TEST_MARK"], "a").write(f"{sizes['n']} ")
    g, n = sizes["g"], sizes["n"]
    batch = np.sort(np.concatenate([np.arange(g), rng.integers(0, g, n - g)]))
    return [rng.standard_normal(n), batch]


def _torch():
    import torch

    def segment_sum(x, batch):
        return torch.zeros(int(batch.max()) + 1, dtype=x.dtype).index_add(0, batch, x)

    return segment_sum


def _oracle(x, batch):
    out = np.zeros(batch.max() + 1)
    np.add.at(out, batch, x)
    return out


CASES = (
    Case(name="file_segment_sum", tags=("file",), dims=(unbounded("g", min=1), unbounded("n", min=1)),
         inputs=(Input("x", ("n",)), Input("batch", ("n",), dtype="int64", gen="index", high="g")),
         sweep=({"g": 2, "n": 5}, {"g": 3, "n": 9}), quick=(0, 1), oracle=_oracle, out_shape=("g",), torch_fn=_torch,
         inputs_fn=segment_inputs, constraints=("n >= g",)),
)
"""


@pytest.mark.slow
def test_cases_from_runs_a_file_case_with_its_own_inputs(tmp_path):
    f = tmp_path / "my_cases.py"
    f.write_text(CASES_FILE)
    mark = tmp_path / "mark"
    out = tmp_path / "out"
    got = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--cases-from", str(f), "--backends", "torch_eager", "--modes", "unbounded"]
        + ["--out", str(out), "--no-progress", "--repeats", "1", "--warmup", "0"],
        cwd=tmp_path,
        env=_clean_env(DYNSHAPE_TEST_MARK=str(mark)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    recs = [r for p in out.glob("*.jsonl") for r in results.read_records(p)]
    assert recs, got.stderr[-2000:]
    assert {r["case"] for r in recs} == {"file_segment_sum"}
    assert {r["status"] for r in recs} == {"pass"}, [r["message"] for r in recs]
    assert {r["sizes"]["n"] for r in recs if r.get("sizes")} == {5, 9}
    # the worker drew both shapes' inputs from the file's hook (the parent's oracle check drew n=5 once)
    assert mark.read_text().split().count("9") >= 1


def test_make_inputs_hook_is_checked():
    def wrong(sizes, rng):
        return [np.zeros(sizes["n"] + 1)]

    c = Case(
        name="hooked", tags=(), dims=(unbounded("n"),), inputs=(Input("x", ("n",)),), sweep=({"n": 3},),
        oracle=lambda x: x, out_shape=("n",), quick=(0,), inputs_fn=lambda sizes, rng: [np.arange(sizes["n"])],
    )  # fmt: skip
    assert c.make_inputs({"n": 3}, seed=0)[0].tolist() == [0.0, 1.0, 2.0]
    assert c.make_inputs({"n": 3}, seed=0)[0].dtype == np.float32
    import dataclasses

    with pytest.raises(CaseError, match=r"field 'inputs_fn': input 'x' has shape \(4,\)"):
        dataclasses.replace(c, inputs_fn=wrong).make_inputs({"n": 3}, seed=0)
    with pytest.raises(CaseError, match=r"field 'constraints': sweep\[0\] .* breaks 'n >= 5'"):
        dataclasses.replace(c, constraints=("n >= 5",))


@pytest.mark.parametrize(
    "body, field",
    [
        ("X = 1\n", "field 'CASES': missing"),
        ("CASES = (1,)\n", "field 'CASES': gives int"),
        (
            "from cases.model import Case, Input, unbounded\nCASES = (Case(name='b', tags=(), dims=(unbounded('n'),),"
            " inputs=(Input('x', ('n',)),), sweep=(), oracle=abs, out_shape=('n',)),)\n",
            "case 'b', field 'sweep'",
        ),
        ("raise RuntimeError('boom')\n", "cannot load: RuntimeError: boom"),
    ],
)
def test_a_bad_cases_file_is_one_line_naming_file_and_field(tmp_path, capsys, body, field, monkeypatch):
    monkeypatch.setenv(packs.FILES_ENV, "")  # restored after: the run names its file there
    f = tmp_path / f"bad_{abs(hash(body))}.py"
    f.write_text(body)
    code = cli.main(["run", "--cases-from", str(f), "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert f"cases file {f}" in err and field in err, err


# -- dynshape check ---------------------------------------------------------------


def _square(**kw) -> Case:
    def torch_fn():
        return lambda x: x * x

    base = dict(
        name="square", tags=(), dims=(unbounded("n", min=1),), inputs=(Input("x", ("n",)),), sweep=({"n": 64}, {"n": 100}),
        quick=(0, 1), oracle=lambda x: x * x, out_shape=("n",), torch_fn=torch_fn,
    )  # fmt: skip
    return Case(**{**base, **kw})


def test_check_measures_and_proposes_the_tolerance():
    got = dynshape.check(_square())
    assert got.ok, str(got)
    (one,) = got.checks
    measured = max(a for _, a, _ in one.errors)
    assert 0 < measured < 1e-5  # float32 rounding of x*x
    assert measured * 10 <= one.proposed.atol < measured * 20  # 10x, rounded up to one digit


def test_check_refuses_an_oracle_that_ignores_its_inputs():
    got = dynshape.check(_square(oracle=lambda x: np.ones_like(x)))
    assert not got.ok
    assert any("ignores its inputs" in p for p in got.checks[0].problems), str(got)


def test_check_refuses_a_wide_tolerance_without_a_reason():
    assert not dynshape.check(_square(tolerance=Tolerance(0.0, 0.5))).ok
    assert "over 100x" in str(dynshape.check(_square(tolerance=Tolerance(0.0, 0.5))))
    assert dynshape.check(_square(tolerance=Tolerance(0.0, 0.5, reason="the device rounds differently"))).ok


def test_check_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(packs.FILES_ENV, "")  # restored after: the run names its file there
    f = tmp_path / "c.py"
    f.write_text(
        textwrap.dedent("""
        import dynshape
        CASES = (dynshape.case(lambda x: x * 3, name="triple", inputs={"x": ("n",)}, sweep={"n": [4, 6]}),
                 dynshape.case(lambda x: x * 3, name="lazy_oracle", inputs={"x": ("n",)}, sweep={"n": [4, 6]},
                               oracle=lambda x: x * 0))
        """)
    )
    assert cli.main(["check", str(f), "--cases", "triple"]) == 0
    assert "proposed: Tolerance" in capsys.readouterr().out
    assert cli.main(["check", str(f)]) == 1
    assert "refused:" in capsys.readouterr().out


# -- the float64 oracle and the weights -------------------------------------------


def test_the_oracle_holds_rmsnorm_at_float64():
    import torch

    from cases import libs
    from cases.models_base import Model, seeded

    libs.load("transformers")
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    def build():
        m = seeded(lambda: LlamaRMSNorm(64))
        m.weight.uniform_(0.5, 1.5)
        return m

    model = Model("rmsnorm_test", build, lambda m, x: m(x))
    x = np.random.default_rng(0).standard_normal((3, 64)) * 10
    w = model.float64().weight.numpy()
    exact = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    held = model.oracle(x)
    with torch.no_grad():
        plain = model.float64()(torch.from_numpy(x)).numpy()  # the model's own .to(float32) rounds
    assert np.abs(held - exact).max() < 1e-12
    assert np.abs(plain - exact).max() > 1e-8  # float32 rounding: what the oracle was before
    assert held.dtype == np.float64


USER_MODULE = """
import torch
import dynshape

# no seed: each process that loads this file draws its own weights
CASES = (dynshape.case(torch.nn.Linear(8, 4), name="user_linear", inputs={"x": ("b", 8)}, sweep={"b": [2, 3]}),)
"""

PROBE = """
import sys
from cases import models_base, packs, weights
if sys.argv[1] == "tree":
    from cases import models_vision
    print(weights.digest(models_vision.RESNET18.float32()))
else:
    (case,) = packs.load_file(sys.argv[1])
    print(weights.digest(models_base.model_of(case).float32()))
"""


@pytest.mark.slow
def test_weights_are_equal_across_environments(tmp_path):
    xla = ROOT / ".venv-xla" / "bin" / "python"
    if not xla.exists():
        pytest.skip("no .venv-xla (make xla-env)")
    from cases import models_vision

    cases_file = tmp_path / "user.py"
    cases_file.write_text(USER_MODULE)

    def digest(python, directory, what):
        env = _clean_env(DYNSHAPE_WEIGHTS_DIR=str(directory), PYTHONPATH=str(ROOT))
        got = subprocess.run([str(python), "-c", PROBE, what], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert got.returncode == 0, got.stderr[-2000:]
        return got.stdout.split()[-1]

    shared = tmp_path / "shared"
    os.environ[weights.ENV] = str(shared)
    try:
        models_base.ensure_weights(models_vision.model_resnet18)  # what the runner does before an xla job
        (user,) = packs.load_file(cases_file)
        models_base.publish_weights(user)  # what dynshape.run and --cases-from do
    finally:
        del os.environ[weights.ENV]
    assert (shared / "resnet18.pt").is_file() and (shared / "user_linear.pt").is_file()
    assert digest(sys.executable, shared, "tree") == digest(xla, shared, "tree")
    assert digest(sys.executable, shared, str(cases_file)) == digest(xla, shared, str(cases_file))
    # without the shared file each process has a model of its own draw
    assert digest(sys.executable, tmp_path / "none", str(cases_file)) != digest(xla, tmp_path / "none", str(cases_file))


# -- the pytest plugin --------------------------------------------------------------

USER_TESTS = """
import dynshape

DOUBLE = dynshape.case(lambda x: x * 2 + 1, name="double", inputs={"x": ("n",)}, sweep={"n": [3, 5, 8]})
SCALED = dynshape.case(lambda x: x * int(x.shape[0]), name="scaled", inputs={"x": ("n",)}, sweep={"n": [3, 5, 8]})


def test_compiles_once(dynshape_expect):
    dynshape_expect(DOUBLE, backends="lazy", modes="unbounded", per_shape="first")


def test_recompiles_per_shape(dynshape_expect):
    dynshape_expect(SCALED, backends="lazy", modes="unbounded", per_shape="first")
"""


@pytest.mark.slow
def test_pytest_plugin_in_a_user_project(tmp_path):
    (tmp_path / "test_mine.py").write_text(USER_TESTS)
    got = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = got.stdout
    assert "1 failed, 1 passed" in out, out[-3000:]
    assert "test_recompiles_per_shape" in out and "test_compiles_once" not in out.split("short test summary")[0]
    assert "scaled on lazy (unbounded): shape 1 {'n': 5}: 1 compile(s)" in out, out[-3000:]
    assert "reason: lazy_fx: new arguments of op" in out and "new guards" in out, out[-3000:]


FACTORY_SCRIPT = """
import os
from pathlib import Path

import dynshape
import torch

BUILDS = Path(os.environ["BUILDS"])


def tiny_net():
    (BUILDS / str(os.getpid())).write_text("built")
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


net = dynshape.case(tiny_net, inputs={"x": ("b", 4)}, sweep={"b": [2, 3]}, out_shape=("b", 3))
df = dynshape.run(net, backends="torch_eager,torch_export", modes="unbounded", progress=False, repeats=2)
print("PARENT", os.getpid())
print(sorted(set(df["status"])))
"""


@pytest.mark.slow
def test_a_factory_is_built_only_in_the_workers_that_run_its_jobs(tmp_path):
    """``dynshape.case(factory, ...)`` from a script outside the checkout: the script's own
    process (which plans the run) never builds the module; each job's worker does."""
    builds = tmp_path / "builds"
    builds.mkdir()
    script = tmp_path / "mine.py"
    script.write_text(FACTORY_SCRIPT)
    env = _clean_env(BUILDS=str(builds), PYTHONPATH=str(ROOT))  # this checkout's dynshape, run from elsewhere
    got = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    parent = next(line.split()[1] for line in got.stdout.splitlines() if line.startswith("PARENT"))
    assert "['pass']" in got.stdout, got.stdout
    built = {p.name for p in builds.iterdir()}
    assert parent not in built and len(built) == 2, (parent, built)  # one worker per job
