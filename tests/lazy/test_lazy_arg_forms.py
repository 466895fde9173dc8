"""The argument forms torch takes that the zoo's models use: dims as one int, as ints or as a
sequence (``x.flip(0)``), sizes by keyword (``x.reshape(shape=...)``). Each form traced, equal to
eager at every size, one compile."""

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
