"""The catalogue's real models on the lazy path (unbounded): one compile per model over its case's
4-size sweep, or the named splits, each size equal to torch eager at rtol=atol=1e-4 (models,
inputs and sweeps are the catalogue's: ``lazy_models.py``).

Splits that are not per size, constant over the sweep, asserted exactly:
- ``bert``: transformers' ``padding_mask.all()`` (a value-dependent ``if``) syncs the mask, and
  each outcome is a graph of its own: the sweep's first mask is all ones, the second has padding:
  3 graphs;
- ``gpt2_mask``: the same check, ``fast_all(padding_mask)``, plus the causal mask's: 3 graphs;
- ``gcn``, ``gat``: torch_geometric's self-loop handling indexes by a boolean mask (a data-dependent
  edge count, ``nnz<i>``, a size variable): 2 graphs.
Guards (``s > 1``: transformers' single-token fast path; ``s <= 64``: the position buffer) are
listed exactly too.
"""

import pytest
import torch
from lazy_models import MODELS, sweep  # (tests/lazy is on sys.path: pytest inserts a test's folder)

import engines.lazy as L
from cases import libs

EXPECTED = {  # model -> (compiles over the sweep, guards)
    "gpt2": (1, ["s == 1 is False (bool)", "s > 1 is True (bool)"]),
    "gpt2_mask": (3, ["s == 1 is False (bool)", "s <= 0 is False (clamp)", "s > 1 is True (bool)"]),
    "bert": (3, ["s <= 0 is False (clamp)", "64 <= s is False (clamp)", "s > 1 is True (bool)"]),
    "llama": (1, ["s == 1 is False (bool)", "s > 1 is True (bool)"]),
    "vit": (1, []),
    "resnet18": (1, []),
    "resnet18_hw": (1, []),
    "gcn": (2, []),
    "gat": (2, ["n + nnz0 == 0 is False (bool)", "n + nnz1 == 0 is False (bool)"]),
    "sage": (1, []),
}


def test_every_model_has_an_expectation():
    assert set(EXPECTED) == set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_compiles_once_over_sizes(name):
    lib = MODELS[name][0]
    if libs.missing(lib):
        pytest.skip(f"{lib} is not installed")
    assert sweep(name) == EXPECTED[name]


def test_lazy_tensor_is_a_torch_tensor_to_libraries():
    x = L.tensor(torch.zeros(3, 2))
    assert isinstance(x, torch.Tensor) and type(x) is L.LazyTensor
    assert not isinstance(x, torch.nn.Parameter)
    assert x.layout == torch.strided and not x.is_sparse
    assert torch.equal(torch.add(x, 1).value(), torch.ones(3, 2))  # torch functions still reach the hook


@pytest.mark.parametrize(
    "call",
    [
        lambda x: torch.pow(x, 2),
        lambda x: torch.pow(2.0, x),
        lambda x: torch.add(x, 1, alpha=2),
        lambda x: torch.where(x > 0, x, 0.0),
        lambda x: torch.clamp(x, min=-0.5),
        lambda x: torch.full_like(x, 3.0),
        lambda x: torch.sub(1.0, x),
    ],
)
def test_scalar_overloads_take_a_lazy_tensor(call):
    """torch's argument parser reads a tensor argument's metadata (a 0-d tensor may stand for a
    Scalar) before it finds ``__torch_function__``: a lazy tensor that only claimed to be a tensor
    crashed the process there (SIGSEGV on ``torch.pow(x, 2)``); it is a real tensor underneath."""
    t = torch.randn(4, 3)
    torch.testing.assert_close(call(L.tensor(t)).value(), call(t))


def test_buffer_sliced_and_expanded_by_a_size_stays_symbolic():
    buf, tok = torch.arange(64).unsqueeze(0), torch.randn(1, 1, 4)

    def f(x):
        n = x.shape[1]
        return buf[:, 0:n].float() + tok.expand(x.shape[0], -1, -1)[:, 0, :1] + x

    g = L.jit(f)
    for b, n in ((2, 3), (3, 7), (4, 9)):
        x = torch.randn(b, n)
        torch.testing.assert_close(g(x), f(x))
    assert g.ctx.compiles() == 1
    assert list(g.guard_log) == ["p0_1 <= 0 is False (clamp)", "64 <= p0_1 is False (clamp)"]
    assert "__getitem__" not in torch.Tensor.__dict__  # torch's own methods back after the step


def test_boolean_mask_size_is_a_variable():
    def f(x):
        y = x[x > 0]
        return y * y.shape[0]

    g = L.jit(f)
    for n in (5, 9, 14):
        x = torch.randn(n)
        torch.testing.assert_close(g(x), f(x))
    assert g.ctx.compiles() == 2  # the mask's graph, then the rest: both once, not per size
