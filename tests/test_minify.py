"""``dynshape minify`` (harness/minify/): the search cuts a program down to the op
that fails; a planted wrong result (a deliberately broken lowering rule) reduces
to at most 5 graph nodes and its script reproduces it; bad input exits 2."""

from __future__ import annotations

import ast
import importlib.util

import numpy as np
import pytest

import cases
from harness import cli
from harness.minify import Cut, Source, minify
from harness.minify.search import Search

CASE = "gnn_segment_softmax"  # 14 aten ops: gathers, a scatter max, exp, index_add, div


@pytest.fixture(scope="module")
def source():
    case = cases.get(CASE)
    return Source(case, "unbounded", case.sizes_for("quick")[0])


def test_the_search_finds_the_one_op_a_predicate_blames(source):
    """No backend: a candidate 'fails' while its program computes aten.exp. The search
    must end at exp alone, its operand cut to an input."""

    def fails(cut):
        _, body = source.slice(cut)
        return any(str(source.nodes[n].target) == "aten.exp.default" for n in body)

    cut = Search(source, fails).run(Cut(source.final_output()))
    inputs, body = source.slice(cut)
    assert [str(source.nodes[n].target) for n in body] == ["aten.exp.default"]
    assert inputs == ["sub"]  # the value exp reads, fed as an input of its own


def test_a_reduced_program_is_a_case_fed_with_the_original_values(source):
    """The reduced case's inputs are the original program's values at the cut, so its
    oracle (torch eager on the reduced program) sees the original program's data."""
    import numpy as np

    cut = Cut("div", frozenset({"exp", "index_3"}))
    case = source.reduced_case(cut)
    assert [i.name for i in case.inputs] == ["exp", "index_3"]
    sizes = case.sizes_for("quick")[0]
    exp, denom = case.make_inputs(sizes, seed=0)
    assert exp.shape == (sizes["e"], 4) and np.all(denom >= exp)  # a softmax's denominator
    np.testing.assert_allclose(case.expected([exp, denom]), exp / denom, rtol=1e-6)


@pytest.mark.slow
def test_a_planted_wrong_result_reduces_to_at_most_5_nodes(monkeypatch, tmp_path):
    """aten.exp lowered as expm1 (a broken rule of our StableHLO lowering): stablehlo_xla's
    result is wrong; minify ends at the exp, and its script reproduces it until the rule is fixed."""
    import torch

    from engines.stablehlo.lowering import lower as _  # noqa: F401  (registers the rules)
    from engines.stablehlo.lowering.registry import LOWERINGS
    from harness import registry
    from harness.minify import script

    aten = torch.ops.aten
    monkeypatch.setitem(LOWERINGS, aten.exp.default, LOWERINGS[aten.expm1.default])
    backend = registry.get("stablehlo_xla")
    backend.startup()
    result = minify(cases.get(CASE), backend, "unbounded")
    assert result.failure.kind == "wrong"
    nodes = [n for n in result.program().graph.nodes]
    assert len(nodes) <= 5, [n.format_node() for n in nodes]  # placeholders and output included
    assert "aten.exp.default" in result.targets()

    py, npz = script.write(
        tmp_path / "min", result.source, result.cut, result.failure, "stablehlo_xla", "unbounded", result.sizes
    )
    assert npz.exists() and "torch.ops.aten.exp.default" in py.read_text()
    spec = importlib.util.spec_from_file_location("minified_script", py)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # not __main__: defines Program and DATA only
    from harness.minify.repro import check

    spec_json = ast.literal_eval(py.read_text().split("spec = ", 1)[1].split("\n", 1)[0])
    inputs = [[mod.DATA[f"input_{k}_{n}"] for n in result.inputs] for k in range(len(spec_json["sizes"]))]
    assert check(mod.Program(), inputs, spec_json) == 1  # still fails with the broken rule
    monkeypatch.undo()
    assert check(mod.Program(), inputs, spec_json) == 0  # and passes once the rule is right


@pytest.mark.parametrize(
    "argv, culprit",
    [
        (["--case", "nope", "--backend", "torch_eager", "--mode", "unbounded"], "--case"),
        (["--case", CASE, "--backend", "nope", "--mode", "unbounded"], "--backend 'nope'"),
        (["--case", CASE, "--backend", "torch_eager", "--mode", "sideways"], "no mode 'sideways'"),
        (["--case", CASE, "--backend", "torch_eager", "--mode", "unbounded", "--margin", "0.5"], "--margin 0.5"),
    ],
)
def test_bad_input_is_one_line_naming_the_culprit_exit_2(argv, culprit, capsys):
    assert cli.main(["minify", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and culprit in err, err


def test_badness_counts_equal_infinities_as_equal_and_nan_as_wrong():
    import numpy as np

    from harness.minify.failure import badness

    inf = np.array([-np.inf, 1.0])
    assert badness(inf, inf.copy(), 1e-4, 1e-5) == 0.0
    assert badness(np.array([np.inf, 1.0]), inf, 1e-4, 1e-5) == float("inf")
    assert badness(np.array([np.nan, 1.0]), inf, 1e-4, 1e-5) == float("inf")
    assert badness(np.array([-np.inf, 1.1]), inf, 1e-4, 1e-5) > 100


class _Constant:
    """A backend whose every output is 12345 (a wrong result wherever the reference is not)."""

    class _Program:
        def convert(self, inputs):
            return inputs

        def __call__(self, *xs):
            return np.full_like(xs[0], 12345.0)

        def sync(self, out):
            pass

        def to_numpy(self, out):
            return out

        def compile_stats(self):
            return {}

    def prepare(self, case, mode):
        return self._Program()


def _program_case(forward):
    import torch

    from harness.minify.repro import case_of

    class Program(torch.nn.Module):
        def forward(self, x):
            return forward(x)

    rng = np.random.default_rng(0)
    sizes = [{"n": 5}, {"n": 9}]
    inputs = [[rng.standard_normal((s["n"], 3)).astype(np.float32) + 2] for s in sizes]
    spec = {
        "dims": [{"name": "n", "kind": "unbounded", "size": None, "min": 2, "max": None}],
        "shapes": [["n", 3]],
        "sizes": sizes,
        "tolerance": [1e-5, 1e-6],
    }
    return case_of(Program(), inputs, spec), sizes


def test_a_cut_whose_reference_reads_uninitialised_memory_is_not_the_wrong_result():
    """MFConv's first reduction on IREE ended at ``x.new_empty(...)`` alone: torch's garbage
    against IREE's. A reference that changes when torch fills empty tensors is ``undefined``,
    which never matches the job's ``wrong``; one whose empty tensor is written whole is defined."""
    from harness.minify.failure import observe

    garbage, sizes = _program_case(lambda x: x.new_empty(x.shape))
    assert observe(garbage, _Constant(), "unbounded", sizes).kind == "undefined"
    filled, _ = _program_case(lambda x: x.new_empty(x.shape).copy_(x) * 2)
    assert observe(filled, _Constant(), "unbounded", sizes).kind == "wrong"


def test_a_script_whose_graph_writes_inf_runs(tmp_path):
    """torch.fx's code writes constants as ``inf``/``nan`` (Llama-4's ``full_like(x, -inf)``):
    the script imports them, or running it fails with a NameError instead of the failure."""
    import torch

    from harness.minify.script import TEMPLATE

    forward = "    def forward(self, x):\n        return torch.ops.aten.full_like.default(x, -inf) + nan * 0"
    text = TEMPLATE.format(
        case="c", backend="b", mode="m", kind="wrong", detail="d", ops=1, inputs="x", script="s.py",
        attrs="        pass", forward=forward, names=["x"], spec="{}",
    )  # fmt: skip
    np.savez(tmp_path / "s.npz", unused=np.zeros(1))
    namespace = {"__file__": str(tmp_path / "s.py"), "__name__": "minified"}
    exec(compile(text, "s.py", "exec"), namespace)
    out = namespace["Program"]()(torch.zeros(2))
    assert bool(torch.isnan(out).all())  # -inf + nan * 0 is nan: both names resolved


class _Off:
    """A backend whose every output is its input times 1 + 3e-5 (a precision loss: about
    3x the tolerance of :func:`_program_case` on ``x * 1``, within the default margin)."""

    name, modes = "off", ("unbounded",)

    class _Program(_Constant._Program):
        def __call__(self, *xs):
            return xs[0] * np.float32(1 + 3e-5)

    def prepare(self, case, mode):
        return self._Program()


def test_a_smaller_margin_minimises_a_precision_loss():
    """The transformers wrong results on IREE are off by a few times the tolerance: past
    the default margin (10x) they "do not fail"; ``margin=1`` (``--margin 1``) finds them."""
    from harness.minify import MinifyError
    from harness.minify.failure import observe

    case, sizes = _program_case(lambda x: x * 1.0)
    assert observe(case, _Off(), "unbounded", sizes) is None
    assert observe(case, _Off(), "unbounded", sizes, margin=1.0).kind == "wrong"
    with pytest.raises(MinifyError, match="does not fail"):
        minify(case, _Off(), "unbounded", sizes)
    result = minify(case, _Off(), "unbounded", sizes, margin=1.0)
    assert result.failure.kind == "wrong" and result.margin == 1.0
