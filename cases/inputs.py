"""Input generators: what :meth:`cases.model.Case.make_inputs` draws each input with.

An :class:`~cases.model.Input` names its generator in ``gen``:

``normal``, ``uniform``, ``index``
    i.i.d. draws: standard normal; uniform in ``[low, high)``; int64 in
    ``[0, size of dim high)``.
``lengths_mask``
    a ``(B, S)`` 0/1 mask, row ``i`` valid on its first ``lengths[i]`` positions
    (:func:`lengths`: every row at least ``max(low, 1)``, the first row full) --
    a padded batch of variable-length sequences (text tokens, audio samples),
    never a random 0/1 pattern and never a row with nothing to attend to.
``decoder_ids``
    ``(B, T)`` token ids in ``[0, size of dim high)`` whose first column is
    ``low`` (the decoder start token): an encoder-decoder's shifted targets
    (:func:`decoder_input_ids`).
``graph_batch``, ``graph_edges``
    one batch of graphs (:func:`graph_batch`), drawn once per call and shared
    by the inputs that use it: ``graph_batch`` is the sorted ``(N,)`` graph
    index of every node (``high``: the dim of the graph count G), ``graph_edges``
    the ``(2, E)`` edge index (``high``: the node dim), every edge inside one graph,
    ``graph_sizes`` the ``(G,)`` node count of every graph (``high``: the node dim;
    torch_geometric's ``ptr`` is its cumulative sum with a leading 0).

Sizes that constrain others (nodes >= graphs; positive lengths) are checked
here, with a :class:`~cases.model.CaseError` naming the case and input.
Every generator is deterministic given the call's seeded ``rng``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: the generators :func:`generate` knows (``Input.gen``)
GENERATORS = ("normal", "uniform", "index", "lengths_mask", "decoder_ids", "graph_batch", "graph_edges", "graph_sizes")
#: the generators that draw indices into a dim (``Input.high`` names it), so may pad with ``"dummy"``
INDEX_LIKE = ("index", "decoder_ids", "graph_batch", "graph_edges")


class InputError(ValueError):
    """Sizes a generator cannot honour (the message says which constraint)."""


def lengths(rng: np.random.Generator, batch: int, size: int, low: int = 1) -> np.ndarray:
    """``batch`` valid lengths in ``[max(low, 1), size]``, the first equal to
    ``size`` (so the padded dim is the longest row, as a collate function pads)."""
    low = max(int(low), 1)
    if batch and size < low:
        raise InputError(f"a length dim of {size} is below the minimum valid length {low}")
    out = rng.integers(low, size + 1, batch) if batch else np.zeros(0, np.int64)
    if batch:
        out[0] = size
    return out.astype(np.int64)


def lengths_mask(row_lengths: Sequence[int], size: int) -> np.ndarray:
    """The ``(len(row_lengths), size)`` int64 mask: 1 on each row's first ``length`` positions."""
    return (np.arange(size)[None, :] < np.asarray(row_lengths)[:, None]).astype(np.int64)


def attention_mask(rng: np.random.Generator, batch: int, size: int, low: int = 1) -> np.ndarray:
    """A right-padded attention mask of ``batch`` rows of ``size`` (:func:`lengths`, :func:`lengths_mask`)."""
    return lengths_mask(lengths(rng, batch, size, low), size)


def decoder_input_ids(rng: np.random.Generator, batch: int, size: int, vocab: int, start: int = 0) -> np.ndarray:
    """``(batch, size)`` ids in ``[0, vocab)``, column 0 the decoder start token ``start``."""
    if vocab <= 0 or not 0 <= start < vocab:
        raise InputError(f"decoder start token {start} outside a vocabulary of {vocab}")
    ids = rng.integers(0, vocab, (batch, size))
    if size:
        ids[:, 0] = start
    return ids.astype(np.int64)


@dataclasses.dataclass(frozen=True)
class GraphBatch:
    """A batch of ``graphs`` graphs as torch_geometric collates it: ``batch`` (N,)
    sorted graph index per node, every graph non-empty; ``ptr`` (G + 1,) node
    offsets (graph g holds nodes ``ptr[g]:ptr[g + 1]``); ``edge_index`` (2, E),
    both ends of every edge in the same graph (self loops and repeats allowed)."""

    batch: np.ndarray
    ptr: np.ndarray
    edge_index: np.ndarray

    @property
    def graphs(self) -> int:
        return len(self.ptr) - 1


def graph_batch(rng: np.random.Generator, nodes: int, edges: int, graphs: int = 1) -> GraphBatch:
    """A random :class:`GraphBatch` of ``nodes`` nodes, ``edges`` edges, ``graphs`` graphs.

    Graph sizes are a random composition of ``nodes`` into ``graphs`` positive
    parts; each edge picks its graph with probability proportional to the
    graph's size, then both ends uniformly inside it."""
    if graphs < 1 or nodes < graphs:
        raise InputError(f"{nodes} nodes cannot hold {graphs} non-empty graphs (nodes >= graphs >= 1)")
    cuts = np.sort(rng.choice(np.arange(1, nodes), graphs - 1, replace=False)) if graphs > 1 else np.zeros(0, np.int64)
    ptr = np.concatenate([[0], cuts, [nodes]]).astype(np.int64)
    sizes = np.diff(ptr)
    batch = np.repeat(np.arange(graphs), sizes).astype(np.int64)
    owner = rng.choice(graphs, edges, p=sizes / nodes)
    ends = ptr[owner][None, :] + (rng.random((2, edges)) * sizes[owner][None, :]).astype(np.int64)
    return GraphBatch(batch, ptr, ends.astype(np.int64))


class Draw:
    """One :meth:`Case.make_inputs` call's state: the seeded ``rng``, every dim's
    size, the case's inputs, and the joint draws (a graph batch) shared by the
    inputs that use them."""

    def __init__(self, case: str, rng: np.random.Generator, sizes: Mapping[str, int], inputs: Sequence[Any]):
        self.case, self.rng, self.sizes, self.inputs = case, rng, dict(sizes), tuple(inputs)
        self._graphs: dict[tuple[int, int, int], GraphBatch] = {}

    def high(self, inp) -> int:
        return self.sizes[inp.high] if isinstance(inp.high, str) else int(inp.high)

    def graph(self, nodes_dim: str, edges: int) -> GraphBatch:
        """The call's graph batch over ``nodes_dim``: its graph count is the ``high``
        of the case's ``graph_batch`` input over that dim (1 graph without one)."""
        owners = [i for i in self.inputs if i.gen == "graph_batch" and tuple(i.shape) == (nodes_dim,)]
        graphs = self.high(owners[0]) if owners else 1
        key = (self.sizes[nodes_dim], edges, graphs)
        if key not in self._graphs:
            self._graphs[key] = graph_batch(self.rng, *key)
        return self._graphs[key]


def generate(inp, shape: tuple[int, ...], draw: Draw) -> np.ndarray:
    """The array of input ``inp`` (an :class:`~cases.model.Input`) at ``shape``, in its dtype."""
    from .errors import CaseError

    where = f"case {draw.case!r}: input {inp.name!r}"
    rng = draw.rng
    try:
        if inp.gen == "normal":
            a = rng.standard_normal(shape)
        elif inp.gen == "uniform":
            a = rng.uniform(inp.low, float(inp.high), shape)
        elif inp.gen == "index":
            high = draw.high(inp)
            if high <= 0 and int(np.prod(shape)) > 0:
                raise CaseError(f"{where} indexes an empty dim")
            a = rng.integers(0, max(high, 1), shape)
        elif inp.gen == "lengths_mask":
            _rank(inp, shape, 2, where)
            a = attention_mask(rng, shape[0], shape[1], int(inp.low))
        elif inp.gen == "decoder_ids":
            _rank(inp, shape, 2, where)
            a = decoder_input_ids(rng, shape[0], shape[1], draw.high(inp), int(inp.low))
        elif inp.gen == "graph_batch":
            _rank(inp, shape, 1, where)
            a = draw.graph(inp.shape[0], _edges_of(inp, draw)).batch
        elif inp.gen == "graph_sizes":
            _rank(inp, shape, 1, where)
            if not isinstance(inp.high, str):
                raise CaseError(f"{where}: graph_sizes needs high naming the node dim, got {inp.high!r}")
            g = draw.graph(inp.high, _edges_of(dataclasses.replace(inp, shape=(inp.high,)), draw))
            if g.graphs != shape[0]:
                raise CaseError(f"{where}: {shape[0]} graphs, but the batch's graph_batch input draws {g.graphs}")
            a = np.diff(g.ptr)
        elif inp.gen == "graph_edges":
            if len(shape) != 2 or shape[0] != 2 or not isinstance(inp.high, str):
                raise CaseError(
                    f"{where}: graph_edges needs shape (2, E) and high naming the node dim, got {shape}, {inp.high!r}"
                )
            a = draw.graph(inp.high, shape[1]).edge_index
        else:
            raise CaseError(f"{where} has unknown generator {inp.gen!r} (known: {', '.join(GENERATORS)})")
    except InputError as e:
        raise CaseError(f"{where}: {e}") from None
    return np.ascontiguousarray(np.asarray(a).astype(inp.dtype))


def _rank(inp, shape, n: int, where: str) -> None:
    from .errors import CaseError

    if len(shape) != n:
        raise CaseError(f"{where}: generator {inp.gen!r} makes rank-{n} arrays, shape {inp.shape} has rank {len(shape)}")


def _edges_of(inp, draw: Draw) -> int:
    """The edge count of the graph batch a ``graph_batch`` input shares: its ``graph_edges`` sibling's E (0 without one)."""
    for other in draw.inputs:
        if other.gen == "graph_edges" and other.high == inp.shape[0]:
            e = other.shape[1]
            return draw.sizes[e] if isinstance(e, str) else int(e)
    return 0
