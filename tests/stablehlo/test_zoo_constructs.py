"""The op patterns behind the zoo's StableHLO failures (issue 45), one class each, cut
down from the architectures that hit them: torch's values at two sizes of a dynamic
dim, bounded (one XLA compile for both) and unbounded.

* ``sdpa_broadcast_heads``: attention with one KV head against every query head and no
  ``enable_gqa`` (Falcon's multi-query attention): torch broadcasts the batch dims,
  ``dot_general`` needs them equal (the module failed verification);
* ``slice_of_one_broadcast``: a size-1 dim sliced from ``max(0, 1 - s)`` (MPT's ALiBi
  bias), size-obliviously exported: torch broadcasts its size ``1 - max(0, 1 - s)`` (at
  most 1 at every size), but XLA refuses to broadcast a dynamic dim bounded by 1;
* ``index_negative``, ``index_put_negative``: negative indices (Falcon's ``x[:, :, [-2]]``),
  which torch counts from the end and XLA's gather and scatter clamp or drop (wrong values);
* ``fft_dynamic_dim``: ``_fft_c2c`` over a dynamic dim (FNet's token mixing): no lowering,
  and ``stablehlo.fft`` takes a static length only.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import LoweringError, XlaExecutor, lower
from engines.stablehlo.execution.module import AssertionFailed
from engines.torch_export_tools import export_oblivious_retry


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


def _sdpa_broadcast_heads(q, k, v, m):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)


def _slice_of_one_broadcast(x, bias):
    n = x.shape[2]
    # torch.export sees max(0, 1 - n) and max(0, 64 - n): sizes it cannot simplify obliviously
    b = bias[:, max(0, 1 - n) :, max(0, bias.shape[2] - n) :]
    return x + b


_NEG = torch.tensor([-2, 1, -1])


#: name -> (fn, inputs at size n, {input position: {dim: "n"}}); every dim named "n" is one Dim
CASES = {
    "sdpa_broadcast_heads": (
        _sdpa_broadcast_heads,
        lambda n: (_randn(2, 4, n, 8), _randn(2, 1, n, 8, seed=1), _randn(2, 1, n, 8, seed=2), _randn(2, 1, n, n, seed=3)),
        {0: {2: "n"}, 1: {2: "n"}, 2: {2: "n"}, 3: {2: "n", 3: "n"}},
    ),
    "slice_of_one_broadcast": (
        _slice_of_one_broadcast,
        lambda n: (_randn(3, 2, n, n), _randn(2, 1, 64, seed=1)),
        {0: {2: "n", 3: "n"}},
    ),
    "index_negative": (
        lambda x, i: x[:, :, i].sum(-1) + x[i].sum(0)[:, :1],  # a static dim and the dynamic one
        lambda n: (_randn(n, n, 4), _NEG),
        {0: {0: "n", 1: "n"}},
    ),
    "index_put_negative": (
        lambda x, i, v: x.index_put((i,), v) + x.index_put((torch.zeros_like(i), i), v[0], accumulate=True),
        lambda n: (_randn(n, 3), _NEG, _randn(3, 3, seed=1)),
        {0: {0: "n"}},
    ),
    "fft_dynamic_dim": (
        lambda x: (
            torch.fft.fftn(x, dim=(1, 2)).real
            + torch.fft.ifft(x.to(torch.complex64), dim=1, norm="ortho").imag
            + torch.fft.rfft(x, dim=1, norm="forward").real.sum(1, keepdim=True)  # r2c, one-sided
        ),
        lambda n: (_randn(2, n, 8),),
        {0: {1: "n"}},
    ),
}


def _export(fn, make, dims, size):
    names = {v for d in dims.values() for v in d.values()}
    made = {v: Dim(v, min=2, max=32) for v in sorted(names)}
    shapes = {"xs": tuple({d: made[v] for d, v in dims.get(i, {}).items()} or None for i in range(len(make(size))))}
    # as the stablehlo backends export: size-oblivious after a constraint violation
    return export_oblivious_retry(
        lambda **o: torch.export.export(Fn(lambda _, *xs: fn(*xs)), make(size), dynamic_shapes=shapes, strict=False, **o)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_construct_matches_torch(name):
    fn, make, dims = CASES[name]
    sizes = (5, 12)
    ep = _export(fn, make, dims, sizes[0])
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for size in sizes:
            xs = make(size)
            (got,) = ex.run(text, [x.numpy() for x in xs])
            want = fn(*xs).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} {bounded=} {size=}")
        if bounded:
            assert ex.compile_count() == 1, name


def _item_export(fn, x, t):
    return torch.export.export(Fn(lambda _, *xs: fn(*xs)), (x, t), dynamic_shapes={"xs": ({0: Dim("n", min=2, max=32)}, None)})


def test_item_is_its_value():
    """``.item()`` used as a number (a scale, an offset) lowers as the tensor's value."""

    def fn(x, t, f):
        return x * t.item() + f.item()

    x, t, f = _randn(6, 3), torch.tensor(3), torch.tensor(0.25)
    shapes = {"xs": ({0: Dim("n", min=2, max=32)}, None, None)}
    ep = torch.export.export(Fn(lambda _, *xs: fn(*xs)), (x, t, f), dynamic_shapes=shapes)
    for bounded in (True, False):
        ex = XlaExecutor()
        for n, k in ((6, 3), (11, -2)):
            xs = (_randn(n, 3), torch.tensor(k), torch.tensor(0.25))
            (got,) = ex.run(lower(ep, bounded=bounded), [a.numpy() for a in xs])
            np.testing.assert_allclose(got, fn(*xs).numpy(), rtol=1e-6, err_msg=f"{bounded=} {n=}")


def test_item_in_an_assertion_is_refused_as_a_check_on_data():
    """XLM's ``assert lengths.max().item() <= slen``: shape refinement cannot evaluate it,
    so it is refused by name, not dropped; ``data_asserts="skip"`` lowers without it."""

    def fn(x, t):
        torch._check(t.max().item() <= x.shape[0])
        return x * 2

    ep = _item_export(fn, _randn(6, 3), torch.tensor([2, 5]))
    with pytest.raises(LoweringError, match=r"u\d+ <= s\d+ over u\d+, read from tensor data: an assertion on tensor data"):
        lower(ep)
    (got,) = XlaExecutor().run(lower(ep, data_asserts="skip"), [np.ones((7, 3), np.float32), np.array([2, 5])])
    np.testing.assert_array_equal(got, np.full((7, 3), 2, np.float32))


def test_item_as_a_size_is_refused_as_data_dependent():
    """A tensor dim of ``.item()``'s value (a mixture of experts' split by token counts)."""

    def fn(x, t):
        return torch.zeros(t.item()) + x.shape[0]

    ep = _item_export(fn, _randn(6, 3), torch.tensor(4))
    with pytest.raises(LoweringError, match=r"depends on u\d+, the value of \.item\(\) of tensor data.*a data-dependent size"):
        lower(ep)
    # torch's checks of a slice by it are checks on data too (refinement cannot evaluate them)
    ep = _item_export(lambda x, t: x[: t.item()], _randn(6, 3), torch.tensor(4))
    with pytest.raises(LoweringError, match=r"u\d+ <= s\d+ over u\d+, read from tensor data: an assertion on tensor data"):
        lower(ep)


def test_shape_assertions_beside_a_data_dependent_count():
    """GPSConv: a boolean mask's count (a dim refinement cannot make static) in a bounded
    module that has a shape assertion too: the assertion is still checked at each shape
    (refinement without the static check), and the one compile serves every size."""

    def fn(x):
        torch._check(x.shape[0] != 10)
        return x[x[:, 0] > 0].sum(0)

    ep = _export(fn, lambda n: (_randn(n, 3),), {0: {0: "n"}}, 6)  # the check deferred to run time
    text = lower(ep, bounded=True)
    ex = XlaExecutor()
    for n in (6, 13):
        x = _randn(n, 3)
        (got,) = ex.run(text, [x.numpy()])
        np.testing.assert_allclose(got, fn(x).numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{n=}")
    assert ex.compile_count() == 1
    with pytest.raises(AssertionFailed, match=r"Ne\(s\d+, 10\)"):
        ex.run(text, [np.ones((10, 3), np.float32)])
