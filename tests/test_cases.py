"""The catalogue: definitions are consistent, inputs are seeded, oracles are right."""

import numpy as np
import pytest

import cases

#: the model zoo's cases (cases/zoo*.py) build a model per oracle call: tests/test_zoo.py checks them without one
CATALOGUE = [c for c in cases.catalogue() if "zoo" not in c.tags]


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: c.name)
def test_oracle_shape_matches_declared_output(case):
    for sizes in case.sizes_for("quick"):
        inputs = case.make_inputs(sizes, seed=0)
        assert [a.shape for a in inputs] == case.shapes(sizes)
        assert case.expected(inputs).shape == case.out_shape_for(sizes)


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: c.name)
def test_inputs_are_deterministic_per_seed(case):
    sizes = case.sizes_for("quick")[0]
    a, b, c = case.make_inputs(sizes, 0), case.make_inputs(sizes, 0), case.make_inputs(sizes, 1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=False))
    assert [np.array_equal(x, y) for x, y in zip(a, c, strict=False)] == [False] * len(a)  # another seed changes every input


def test_full_sweep_of_the_report_is_fifty_novel_edge_counts():
    sizes = cases.get("gnn_edge_divide").sizes_for("full")
    assert [s["e"] for s in sizes] == list(range(1000, 1050))


def test_index_inputs_stay_in_range():
    case = cases.get("gnn_message_passing")
    for sizes in case.sizes_for("full"):
        x, src, dst, _w = case.make_inputs(sizes, seed=3)
        assert x.shape[0] == sizes["n"]
        for idx in (src, dst):
            assert idx.dtype == np.int64 and idx.shape == (sizes["e"],)
            assert idx.min() >= 0 and idx.max() < sizes["n"]


def test_message_passing_oracle_on_a_hand_example():
    case = cases.get("gnn_message_passing")
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = case.oracle(x, np.array([0, 1, 1]), np.array([1, 1, 0]), np.array([1.0, 0.5, 2.0]))
    np.testing.assert_allclose(out, [[6.0, 8.0], [2.5, 4.0]])


def test_oracles_on_hand_examples():
    """The other oracles, on examples worked out by hand (the shape test above only
    compares the oracle with the declared shapes)."""
    divide = cases.get("gnn_edge_divide").oracle(np.array([[2.0, 4.0], [9.0, 3.0]]), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(divide, [[1.0, 2.0], [3.0, 1.0]])
    rbf = cases.get("gnn_rbf_subtract").oracle(np.array([1.0, 5.0]), np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(rbf, [[1.0, 0.0, -1.0], [5.0, 4.0, 3.0]])
    for name in ("expand_over_batch", "expand_over_batch_bounded"):
        out = cases.get(name).oracle(np.zeros((3, 3, 2, 2)), np.arange(4.0).reshape(1, 1, 4))
        np.testing.assert_array_equal(out, [[[0.0, 1.0, 2.0, 3.0]]] * 6)


def test_modes_follow_the_dims():
    assert cases.get("gnn_edge_divide").modes == ("static", "bounded", "unbounded", "bucketed")
    assert cases.get("expand_over_batch").modes == ("static", "unbounded", "bucketed")
    assert cases.get("expand_over_batch_bounded").modes == ("bounded",)  # its twin has the others
    axes = cases.get("expand_over_batch_bounded").dynamic_axes("bounded")
    assert axes[0][0].max == 64 and axes[1] == {}
    assert cases.get("expand_over_batch_bounded").dynamic_axes("unbounded")[0][0].max is None
    assert cases.get("gnn_edge_divide").dynamic_axes("bucketed")[0][0].max is None  # buckets serve any size
    assert cases.get("expand_over_batch").dynamic_axes("static") == [{}, {}]


def _case(**kw):
    spec = dict(
        name="bad",
        tags=(),
        dims=(cases.bounded("e", max=64), cases.static("d", 2)),
        inputs=(cases.Input("x", ("e", "d")),),
        sweep=({"e": 3},),
        oracle=lambda x: x * 2,
        out_shape=("e", "d"),
        quick=(0,),
    )
    spec.update(kw)
    return cases.Case(**spec)


@pytest.mark.parametrize(
    "kw,message",
    [
        (
            dict(oracle=None),
            "case 'bad', field 'oracle': missing (None): give a NumPy function of the inputs that returns the expected output",
        ),
        (
            dict(sweep=(), quick=()),
            "case 'bad', field 'sweep': empty, but dims ['e'] are dynamic: give at least one entry of sizes",
        ),
        (dict(inputs=(cases.Input("x", ("q",)),)), "case 'bad', field 'inputs': input 'x' uses unknown dim 'q'; dims: e, d"),
        (dict(sweep=({"e": 100},)), "case 'bad', field 'sweep': sweep[0] e=100 outside [0, 64] (dim 'e')"),
        (dict(sweep=({"d": 2},)), "case 'bad', field 'sweep': sweep[0] sets ['d'], expected exactly the dynamic dims ['e']"),
        (dict(quick=(0, 1)), "case 'bad', field 'quick': quick index 1 outside the sweep (0..0)"),
    ],
)
def test_a_malformed_case_is_refused_naming_case_and_field(kw, message):
    with pytest.raises(cases.CaseError) as e:
        _case(**kw)
    assert str(e.value) == message


@pytest.mark.parametrize(
    "kw,message",
    [
        (
            dict(oracle=lambda x: x.sum(1)),
            "case 'bad', field 'oracle': returns shape (3,) on sizes {'e': 3}, but out_shape ('e', 'd') says (3, 2)",
        ),
        (
            dict(oracle=lambda x: x.astype(complex)),
            "case 'bad', field 'oracle': returns dtype complex128 on sizes "
            "{'e': 3}, which out_dtype 'float32' does not hold exactly",
        ),
        (
            dict(oracle=lambda x: x, out_dtype="int64"),
            "case 'bad', field 'oracle': returns dtype float64 on sizes {'e': 3}, which out_dtype 'int64' does not hold exactly",
        ),
        (
            dict(oracle=lambda x: x[5]),
            "case 'bad', field 'oracle': raised IndexError: index 5 is out of bounds for axis 0 with size 3 on sizes {'e': 3}",
        ),
    ],
)
def test_a_wrong_oracle_is_refused_when_the_catalogue_loads(kw, message, monkeypatch):
    from cases import gnn

    monkeypatch.setattr(gnn, "CASES", gnn.CASES + (_case(**kw),))
    with pytest.raises(cases.CaseError) as e:
        cases.catalogue()
    assert str(e.value) == message


def test_a_case_defined_twice_is_refused(monkeypatch):
    from cases import gnn

    monkeypatch.setattr(gnn, "CASES", gnn.CASES + (gnn.CASES[0],))
    with pytest.raises(cases.CaseError) as e:
        cases.catalogue()
    assert str(e.value) == "case 'gnn_edge_divide', field 'name': defined twice in the catalogue"


def test_unknown_case_names_the_valid_ones():
    with pytest.raises(cases.CaseError, match="unknown case 'nope'; valid: gnn_edge_divide"):
        cases.get("nope")


def test_a_malformed_case_stops_the_cli_before_any_backend_runs(monkeypatch, tmp_path, capsys):
    from cases import gnn
    from harness import cli

    monkeypatch.setattr(gnn, "CASES", gnn.CASES + (_case(oracle=lambda x: x.sum(1)),))
    assert cli.main(["run", "--cases", "gnn_edge_divide", "--backends", "torch_eager", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("dynshape: case 'bad', field 'oracle': returns shape (3,)")
    assert not list(tmp_path.iterdir())


def test_a_dummy_pad_needs_an_index_input_into_a_dim():
    from cases.model import Case, CaseError, Input, unbounded

    def make(inp):
        return Case(
            name="padded",
            tags=(),
            dims=(unbounded("e"), unbounded("n")),
            inputs=(inp,),
            sweep=({"e": 2, "n": 3},),
            oracle=lambda a: a,
            out_shape=("e",),
            quick=(0,),
        )

    make(Input("i", ("e",), dtype="int64", gen="index", high="n", pad="dummy"))
    with pytest.raises(CaseError, match=r"case 'padded', field 'inputs': input 'a': pad 'dummy'"):
        make(Input("a", ("e",), pad="dummy"))
    with pytest.raises(CaseError, match=r"pad 'zero' is not a number"):
        make(Input("i", ("e",), dtype="int64", gen="index", high="n", pad="zero"))


def test_an_einx_form_binds_one_call_or_a_program_to_the_einx_module_it_is_given():
    class Ops:  # stands in for einx / engines.einx_symbolic
        def divide(self, description, *args, **params):
            return ("divide", description, args, params)

        def softmax(self, description, x):
            return ("softmax", description, x)

    EinxForm = cases.EinxForm
    one = EinxForm("divide", "e d, e -> e d", {"d": 8}).bind(Ops())
    assert one(1, 2) == ("divide", "e d, e -> e d", (1, 2), {"d": 8})
    prog = EinxForm(
        "divide, softmax", "a, a -> a; [a]", program=lambda ex: lambda x, y: ex.softmax("[a]", ex.divide("a, a -> a", x, y))
    ).bind(Ops())
    assert prog(3, 4) == ("softmax", "[a]", ("divide", "a, a -> a", (3, 4), {}))
