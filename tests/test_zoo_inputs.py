"""The structured input generators (cases/inputs.py) keep their invariants on every size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cases import inputs
from cases.model import Case, CaseError, Input, bounded, static

SEEDS = st.integers(0, 2**32 - 1)


def graph_invariants(g: inputs.GraphBatch, nodes: int, edges: int, graphs: int) -> list[str]:
    """What a collated batch of graphs must hold (empty: all of it)."""
    bad = []
    b, ptr, ei = g.batch, g.ptr, g.edge_index
    if b.shape != (nodes,) or ptr.shape != (graphs + 1,) or ei.shape != (2, edges):
        bad.append(f"shapes {b.shape} {ptr.shape} {ei.shape}")
        return bad
    if np.any(np.diff(b) < 0):
        bad.append("batch vector not sorted")
    if not np.array_equal(np.bincount(b, minlength=graphs), np.diff(ptr)) or ptr[0] != 0 or ptr[-1] != nodes:
        bad.append("ptr disagrees with the batch vector")
    if np.any(np.diff(ptr) < 1):
        bad.append("an empty graph")
    if edges and (ei.min() < 0 or ei.max() >= nodes):
        bad.append("an edge end outside the nodes")
    elif edges and not np.array_equal(b[ei[0]], b[ei[1]]):
        bad.append("an edge across two graphs")
    return bad


@st.composite
def graph_sizes(draw):
    graphs = draw(st.integers(1, 12))
    nodes = draw(st.integers(graphs, 80))
    return nodes, draw(st.integers(0, 300)), graphs


@settings(max_examples=200, deadline=None)
@given(graph_sizes(), SEEDS)
def test_graph_batches_hold_their_invariants(sizes, seed):
    nodes, edges, graphs = sizes
    g = inputs.graph_batch(np.random.default_rng(seed), nodes, edges, graphs)
    assert graph_invariants(g, nodes, edges, graphs) == []
    assert g.graphs == graphs


def test_the_invariant_check_catches_each_broken_batch():
    """Each check of :func:`graph_invariants` fails on a batch broken its way."""
    g = inputs.graph_batch(np.random.default_rng(0), 20, 40, 4)
    cross = g.edge_index.copy()
    cross[1, 0] = (g.ptr[g.batch[cross[0, 0]] + 1]) % 20  # the first node of the next graph (or graph 0)
    merged = np.where(g.batch == 2, 1, g.batch)  # graph 2's nodes moved into graph 1: graph 2 is empty
    broken = {
        "not sorted": inputs.GraphBatch(g.batch[::-1].copy(), g.ptr, g.edge_index),
        "empty graph": inputs.GraphBatch(merged, np.r_[0, np.cumsum(np.bincount(merged, minlength=4))], g.edge_index),
        "outside": inputs.GraphBatch(g.batch, g.ptr, np.where(np.arange(40) == 0, 20, g.edge_index)),
        "across": inputs.GraphBatch(g.batch, g.ptr, cross),
    }
    for what, bad in broken.items():
        assert graph_invariants(bad, 20, 40, 4), what


def test_graph_sizes_are_checked():
    with pytest.raises(inputs.InputError, match="nodes >= graphs"):
        inputs.graph_batch(np.random.default_rng(0), 3, 5, 4)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 9), st.integers(1, 64), st.integers(1, 8), SEEDS)
def test_lengths_masks_are_prefixes_with_a_valid_token_per_row(batch, size, low, seed):
    low = min(low, size)
    mask = inputs.attention_mask(np.random.default_rng(seed), batch, size, low)
    assert mask.shape == (batch, size) and mask.dtype == np.int64
    valid = mask.sum(axis=1)
    assert np.all(valid >= max(low, 1)) and np.all(valid <= size)
    assert np.array_equal(mask, inputs.lengths_mask(valid, size))  # a prefix of ones, then zeros
    if batch:
        assert valid[0] == size  # the longest row sets the padded length


def test_a_length_below_the_minimum_is_refused():
    with pytest.raises(inputs.InputError, match="minimum valid length"):
        inputs.lengths(np.random.default_rng(0), 2, 3, low=5)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 20), st.integers(2, 50), SEEDS)
def test_decoder_ids_start_with_the_start_token(batch, size, vocab, seed):
    ids = inputs.decoder_input_ids(np.random.default_rng(seed), batch, size, vocab, start=vocab - 1)
    assert ids.shape == (batch, size) and np.all(ids[:, 0] == vocab - 1) and ids.min() >= 0 and ids.max() < vocab


def _graph_case(**over) -> Case:
    inputs_ = (
        Input("x", ("n", "f")),
        Input("edge_index", ("two", "e"), dtype="int64", gen="graph_edges", high="n", pad="dummy"),
        Input("batch", ("n",), dtype="int64", gen="graph_batch", high="g", pad="dummy"),
        Input("graph_sizes", ("g",), dtype="int64", gen="graph_sizes", high="n"),
        Input("mask", ("g", "n"), dtype="int64", gen="lengths_mask"),
    )
    return Case(
        name="t_graph",
        tags=(),
        dims=(bounded("n", 64, 1), bounded("e", 256), bounded("g", 8, 1), static("f", 3), static("two", 2)),
        inputs=inputs_,
        sweep=({"n": 24, "e": 60, "g": 3},),
        quick=(0,),
        oracle=lambda x, *_: x,
        out_shape=("n", "f"),
        **over,
    )


@settings(max_examples=100, deadline=None)
@given(graph_sizes(), SEEDS)
def test_a_case_draws_one_graph_batch_shared_by_its_inputs(sizes, seed):
    nodes, edges, graphs = sizes
    case = _graph_case()
    x, ei, batch, counts, mask = case.make_inputs({"n": nodes, "e": edges, "g": graphs}, seed)
    assert graph_invariants(inputs.GraphBatch(batch, np.r_[0, np.cumsum(counts)], ei), nodes, edges, graphs) == []
    assert mask.shape == (graphs, nodes) and np.all(mask.sum(1) >= 1)
    again = case.make_inputs({"n": nodes, "e": edges, "g": graphs}, seed)
    assert all(np.array_equal(a, b) for a, b in zip([x, ei, batch, counts, mask], again, strict=True))


def test_a_case_names_the_input_whose_sizes_cannot_be_drawn():
    with pytest.raises(CaseError, match=r"case 't_graph': input 'edge_index'.*nodes >= graphs"):
        _graph_case().make_inputs({"n": 2, "e": 5, "g": 4}, 0)
    with pytest.raises(CaseError, match="unknown generator 'nope'"):
        Case(
            name="t",
            tags=(),
            dims=(),
            inputs=(Input("a", (2,), gen="nope"),),
            sweep=(),
            oracle=lambda a: a,
            out_shape=(2,),
            quick=(),
        ).make_inputs({}, 0)
