"""The argument forms torch takes that the zoo's models use: dims as one int, as ints or as a
sequence (``x.flip(0)``), sizes by keyword (``x.reshape(shape=...)``). Each form traced, equal to
eager at every size, one compile."""

import numpy as np
import pytest
import torch

import engines.lazy as L


def _held(program, *sizes):
    """``program`` through the lazy path at each size of its first dim: equal to eager, one compile."""
    f = L.jit(program)
    for n in sizes:
        x = torch.randn(n, 4)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize(
    "program",
    [
        lambda x: x.flip(0),  # torch_geometric's SignedConv
        lambda x: x.flip(0, -1),
        lambda x: x.flip([1]),
        lambda x: torch.flip(x, (0,)),
        lambda x: torch.flip(x, dims=[-1]),
    ],
)
def test_flip_dims_in_every_form(program):
    _held(program, 3, 5, 8)


@pytest.mark.parametrize(
    "program",
    [
        lambda x: x.reshape(shape=(x.shape[0], 2, 2)),  # diffusers' DiT, PixArt, SD3
        lambda x: torch.reshape(x, shape=(-1, 2)),
        lambda x: x.view(size=(-1,)),
        lambda x: x[None].expand(size=(3, x.shape[0], 4)),
        lambda x: x.permute(dims=(1, 0)),
        lambda x: torch.permute(x, dims=[1, 0]),
        lambda x: x.repeat(repeats=(2, 1)),
    ],
)
def test_sizes_by_keyword(program):
    _held(program, 3, 5, 8)


def test_a_view_to_a_dtype_by_keyword_is_refused_by_name():
    with pytest.raises(L.UntraceableOp, match="view"):
        L.jit(lambda x: x.view(dtype=torch.int32))(torch.randn(3, 4))


WEIGHT, BIAS = torch.nn.Parameter(torch.randn(6, 4)), torch.nn.Parameter(torch.randn(6))  # a model's parameters


@pytest.mark.parametrize(
    "program",
    [
        lambda x, i: x + BIAS[i][:, None],  # torch_geometric's HeteroLinear: ``self.bias[type_vec]``
        lambda x, i: WEIGHT[0].expand_as(x) * x,
        lambda x, i: BIAS.type_as(x)[i],
        lambda x, i: WEIGHT.index_select(0, i) * x,
    ],
)
def test_a_plain_tensor_as_the_first_operand_of_a_lazy_op(program):
    """A parameter as the operand the rule reads first, a lazy one after it: reached
    ``__torch_function__`` as itself and crashed the rule (AttributeError); taken as a constant leaf."""
    f = L.jit(program)
    for n in (3, 5, 8):
        x, i = torch.randn(n, 4), torch.randint(0, 6, (n,))
        torch.testing.assert_close(f(x, i), program(x, i))
    assert f.ctx.compiles() == 1


def test_an_inplace_op_still_writes_into_the_plain_tensor():
    acc = torch.zeros(6)
    f = L.jit(lambda i, v: acc.index_add_(0, i, v * 2) + 0)
    f(torch.tensor([0, 2]), torch.ones(2))
    assert acc.tolist() == [2.0, 0.0, 2.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "program",
    [
        lambda x: x * np.float64(2.5),  # CTRL's positional encoding: a numpy scalar operand
        lambda x: x.int() * np.float32(0.5) + np.int64(3),
        lambda x: x + torch.arange(start=0, end=x.shape[0])[:, None],  # TAPAS: arange by keyword
        lambda x: x + torch.arange(end=x.shape[0])[:, None] + torch.arange(0, x.shape[0], step=1)[:, None],
        lambda x: x.new_ones(size=x.size()) * x,  # LED, Longformer
        lambda x: x.new_full(size=(x.shape[0], 4), fill_value=2.0) * x,
        lambda x: torch.zeros(size=(x.shape[0], 4)) + x,
        lambda x: torch.full_like(x, -1.0).where(x > 0, x),  # LED: the method form of where
    ],
)
def test_scalars_and_keywords_the_models_use(program):
    _held(program, 3, 5, 8)


def test_a_symbolic_negative_slice_bound_counts_from_the_end():
    """LED, Longformer: pad to a multiple of the window, crop with ``x[:, :-padding]`` where the
    padding is a size expression: below 0 it counts from the end, as an int's does (it was clamped
    to 0: an empty tensor)."""

    def program(x):
        pad = (4 - x.shape[1] % 4) % 4
        y = torch.nn.functional.pad(x, (0, pad))
        return y[:, :-pad] * 2 if pad > 0 else y * 2

    f = L.jit(program)
    for n in (5, 6, 9, 8, 10):
        x = torch.randn(2, n)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 2  # (the model's own branch: pad > 0 or not)
