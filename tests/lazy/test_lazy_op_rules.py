"""The lazy op rules the op-sample table (``conformance/op_samples``, run by
``tests/op_samples/test_lazy.py``) cannot say as a sample: shape errors and refusals by
name, a symbolic ``k``, writes into a concrete tensor, the ceil-mode pools' whole grid."""

import pytest
import torch
import torch.nn.functional as F

import engines.lazy as L


def test_topk_past_the_size_is_a_shape_error():
    with pytest.raises(L.ShapeError, match="topk"):
        torch.topk(L.tensor(torch.randn(3)), 4)


def test_symbolic_k():
    f = L.jit(lambda x: x.topk(x.shape[0] // 2).values)
    for n in (4, 6, 10):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x.topk(n // 2).values)
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize("mode", ["static", "unbounded"])
def test_inplace_into_a_concrete_tensor_with_lazy_operands(mode):
    """torch_geometric's ``scatter``: ``src.new_zeros(n).scatter_add_(0, index, src)`` where ``src``
    is a tensor torch made from constant sizes (static mode). The concrete tensor cannot name a lazy
    value: the result is computed (a split: 2 graphs) and written into it, as torch writes it."""

    def program(x, i):
        acc = torch.zeros(5)  # constant sizes: a concrete tensor, in every mode
        out = acc.index_add_(0, i, x * 2)
        return out + 1, acc * 3

    f = L.jit(program, mode=mode)
    for n in (4, 7, 11):
        x, i = torch.randn(n), torch.randint(0, 5, (n,))
        for got, want in zip(f(x, i), program(x, i), strict=True):
            torch.testing.assert_close(got, want)
    # static: the graph up to the write per shape, the rest (over the 5 written values) once
    assert f.ctx.compiles() == (3 + 1 if mode == "static" else 2)


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_ceil_mode_pools_keep_sizes_symbolic_where_no_window_starts_in_the_padding(pool):
    """Every (kernel, stride, padding) of a small grid: where padding + stride fits the window
    the rounded-up size is symbolic (one compile, equal to eager at every size); past it the
    registry refuses and the generic rule of torch's meta kernel traces it (equal to eager)."""
    fn = F.max_pool2d if pool == "max" else F.avg_pool2d
    for k in (2, 3):
        for s in (1, 2, 3):
            for p in range(k // 2 + 1):

                def program(x, k=k, s=s, p=p):
                    return fn(x, k, stride=s, padding=p, ceil_mode=True)

                f = L.jit(program)
                if p + s > k:  # the registry's rule refuses: the generic one (torch's meta kernel) traces it
                    for n in (7, 8):
                        x = torch.randn(1, 2, n, n)
                        torch.testing.assert_close(f(x), program(x))
                    continue
                for n in range(k + 1, k + 9):
                    x = torch.randn(1, 2, n, n + 1)
                    torch.testing.assert_close(f(x), program(x))
                assert f.ctx.compiles() == 1, (k, s, p)


def test_a_tensor_of_repeats_is_refused_by_name():
    with pytest.raises(L.UntraceableOp, match="tensor of repeats"):
        L.jit(lambda x: x.repeat_interleave(torch.tensor([1, 2]), dim=0))(torch.randn(2, 3))


def test_a_crop_after_padding_to_a_window_multiple_needs_no_guard():
    """Swin's windows: pad ``h`` to a multiple of 4, attend, crop back with ``[:, :h]``. The crop's
    clamp asked ``h + pad <= h`` (true only where ``pad`` is 0: a graph per residue of ``h``); the
    stop is within the size at every size (``pad >= 0``), so the clamp decides it without a guard."""

    def program(x):
        h = x.shape[1]
        y = F.pad(x, (0, 0, 0, (4 - h % 4) % 4))
        return y[:, :h, :] * 2

    f = L.jit(program)
    for n in (8, 9, 10, 12, 13):
        x = torch.randn(2, n, 3)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1
    assert [g.reason for g in f.ctx.guards] == ["clamp"]  # (h <= 0 is False: the start's, at every size)


@pytest.mark.parametrize("heads", [1, 2])
def test_as_strided_with_the_strides_a_lazy_tensor_reports(heads):
    """Longformer's overlapping chunks: ``as_strided`` with strides read off ``x.stride()`` (a lazy
    tensor reports contiguous ones). The graph's own layout of ``x`` need not be the one reported,
    which gave other values; the kernel runs on ``x`` laid out contiguously."""

    def program(q):  # (S, B, H*D) -> chunks of 2w = 4 rows overlapping by w = 2, as Longformer's _chunk
        s, b = q.shape[0], q.shape[1]
        q = q.view(s, b, heads, -1).transpose(0, 1).transpose(1, 2).reshape(b * heads, s, -1)
        h = q.view(q.size(0), torch.div(q.size(1), 4, rounding_mode="trunc"), 4, q.size(2))
        size, stride = list(h.size()), list(h.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return h.as_strided(size=size, stride=stride) * 1

    f = L.jit(program)
    for n in (8, 12, 16):
        x = torch.randn(n, 2, 6)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize(
    "program",
    [
        lambda x: torch.arange(0.5, x.shape[0], dtype=torch.float32) + x,  # EVA's grid offsets
        lambda x: torch.arange(x.shape[0], 0, -1.0, dtype=torch.int64).float() + x,  # XLNet's positions
        lambda x: torch.arange(-x.shape[0], 0, 1.0) + x,
        lambda x: torch.arange(0, x.shape[0] * 2, 2.0) + x,
        lambda x: torch.arange(0.25, x.shape[0] * 3, 3) + x,
        lambda x: torch.arange(x.shape[0] * 2, 0.5, -2) + x,
    ],
)
def test_arange_with_float_bounds_or_a_negative_step_keeps_its_length_symbolic(program):
    """Refused by name before ("arange with float bounds and symbolic sizes"); the length is
    ``ceil((end - start) / step)`` of a size and a constant: one compile, dtypes as eager's."""
    f = L.jit(program)
    for n in (3, 4, 7):
        x = torch.randn(n)
        got, want = f(x), program(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    assert f.ctx.compiles() == 1
