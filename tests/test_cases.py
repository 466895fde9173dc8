"""The catalogue: definitions are consistent, inputs are seeded, oracles are right."""

import numpy as np
import pytest

import cases


@pytest.mark.parametrize("case", cases.catalogue(), ids=lambda c: c.name)
def test_oracle_shape_matches_declared_output(case):
    for sizes in case.sizes_for("quick"):
        inputs = case.make_inputs(sizes, seed=0)
        assert [a.shape for a in inputs] == case.shapes(sizes)
        assert case.expected(inputs).shape == case.out_shape_for(sizes)


@pytest.mark.parametrize("case", cases.catalogue(), ids=lambda c: c.name)
def test_inputs_are_deterministic_per_seed(case):
    sizes = case.sizes_for("quick")[0]
    a, b, c = case.make_inputs(sizes, 0), case.make_inputs(sizes, 0), case.make_inputs(sizes, 1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert [np.array_equal(x, y) for x, y in zip(a, c)] == [False] * len(a)  # another seed changes every input


def test_full_sweep_of_the_report_is_fifty_novel_edge_counts():
    sizes = cases.get("gnn_edge_divide").sizes_for("full")
    assert [s["e"] for s in sizes] == list(range(1000, 1050))


def test_index_inputs_stay_in_range():
    case = cases.get("gnn_message_passing")
    for sizes in case.sizes_for("full"):
        x, src, dst, w = case.make_inputs(sizes, seed=3)
        assert x.shape[0] == sizes["n"]
        for idx in (src, dst):
            assert idx.dtype == np.int64 and idx.shape == (sizes["e"],)
            assert 0 <= idx.min() and idx.max() < sizes["n"]


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


def test_bad_definitions_name_the_case():
    with pytest.raises(cases.CaseError, match="case 'bad': input 'x' uses unknown dim 'q'"):
        cases.Case(name="bad", tags=(), dims=(cases.static("d", 2),), inputs=(cases.Input("x", ("q",)),),
                   sweep=(), oracle=lambda x: x, out_shape=("d",), quick=())
    with pytest.raises(cases.CaseError, match=r"case 'bad': sweep\[0\] e=100 outside \[0, 64\]"):
        cases.Case(name="bad", tags=(), dims=(cases.bounded("e", max=64),), inputs=(cases.Input("x", ("e",)),),
                   sweep=({"e": 100},), oracle=lambda x: x, out_shape=("e",), quick=())
    with pytest.raises(cases.CaseError, match="unknown case 'nope'; valid: gnn_edge_divide"):
        cases.get("nope")
