"""Ops whose output shape torch's meta kernel (the generic rule, ``ops.meta``) computed as a
different formula per size, so each new size compiled again (issue 48's "recompiled" OpInfo
entries): each now has a registry rule that keeps its sizes symbolic, one compile over sizes,
equal to eager. And the first step of a function traces as the later ones do (a held
``torch.Tensor.__getitem__`` keyed as itself, not as the step's patch of it)."""

import torch
import torch.nn.functional as F

import engines.lazy as L

GETITEM = torch.Tensor.__getitem__  # held, as OpInfo's entry holds it


def _once(program, *inputs_per_size, dims=None):
    """``program`` over each size's inputs: equal to eager (dtype too), one compile in all; the
    IR ops of the last step's graph (which rule served it)."""
    f = L.LazyFunction(program, dims=dims)
    for inputs in inputs_per_size:
        got, want = f(*[t.clone() for t in inputs]), program(*inputs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g, w)
    assert f.ctx.compiles() == 1, list(f.guard_log)
    graph, _ = f.trace(*inputs_per_size[0])
    f.ctx.release()
    return {n.op for n in graph.nodes if not n.is_leaf}


def test_view_copy_infers_its_minus_one_from_sizes():
    """torch's meta kernel compared a size with the literal 5 of the shape (equal at the first size)."""
    ops = _once(lambda x: torch.view_copy(x, [5, -1, 5]), *[(torch.randn(25 * k, 5 * k),) for k in (1, 2, 3)])
    assert ops == {"view_copy"}
    _once(lambda x: torch.view_copy(x, (x.shape[1], -1)), *[(torch.randn(n, 3),) for n in (4, 6)])


def test_chunk_cat_keeps_its_padded_length_symbolic():
    ops = _once(
        lambda a, b: torch._chunk_cat([a, b], -1, 5),
        *[(torch.randn(1, n, m), torch.randn(1, n, m)) for n, m in ((2, 3), (4, 6), (3, 11))],
    )
    assert ops == {"_chunk_cat"}
    # tensors of different rank: a dim >= 0, each contributing ceil(size / chunks) * its trailing sizes
    _once(lambda a, b: torch._chunk_cat([a, b], 1, 3), *[(torch.randn(2, n, 4), torch.randn(2, n + 1)) for n in (2, 5, 7)])


def test_vander_of_a_size_n():
    ops = _once(lambda x, z: torch.linalg.vander(x, N=z.shape[0]), *[(torch.randn(()), torch.zeros(n)) for n in (2, 4, 5)])
    assert ops == {"linalg_vander"}
    _once(torch.linalg.vander, *[(torch.arange(n),) for n in (2, 3, 6)])  # N its last size; integers as int64
    _once(torch.linalg.vander, *[(torch.randn(3, n),) for n in (2, 5)])


def test_linspace_and_logspace_of_tensor_bounds_and_a_size_of_steps():
    """torch's meta kernel of the tensor overload reads ``steps`` as an int: the first size's."""
    sizes = [(torch.tensor(-1.0), torch.tensor(3.0), torch.zeros(n)) for n in (2, 5, 9)]
    assert _once(lambda a, b, z: torch.linspace(a, b, z.shape[0]), *sizes) == {"linspace"}
    assert _once(lambda a, b, z: torch.logspace(a, b, z.shape[0], base=2.0), *sizes) == {"logspace"}
    ints = [(torch.tensor(0), torch.tensor(2), torch.zeros(n)) for n in (3, 4)]
    _once(lambda a, b, z: torch.logspace(a, b, z.shape[0], dtype=torch.float64), *ints)


def test_adaptive_max_pool3d_keeps_a_none_output_size_symbolic():
    """torch's meta kernel read the input's sizes as ints where ``output_size`` keeps them (``None``)."""
    xs = [(torch.randn(1, 2, n, n + 1, 5),) for n in (3, 6)]
    ops = _once(lambda x: F.adaptive_max_pool3d(x, (None, None, None), return_indices=True), *xs)
    assert ops == {"adaptive_max3d_values", "adaptive_max3d_indices"}
    assert _once(lambda x: F.adaptive_max_pool3d(x, (2, None, 3)), *xs) == {"adaptive_max3d_values"}
    _once(lambda x: F.adaptive_max_pool3d_with_indices(x, 2), *xs)


def test_a_held_getitem_the_generic_rule_serves_compiles_once():
    """A list index (the registry's ``__getitem__`` refuses it: the generic rule serves it). The first
    step patches ``torch.Tensor.__getitem__`` (it learns whether the function needs it), and torch
    handed ``__torch_function__`` the patch: a lowering key of its own, so a second compile."""
    ops = _once(lambda x: GETITEM(x, [1, 2]), *[(torch.randn(n, n, n),) for n in (5, 10)])
    assert ops == {"torch_fn:TensorBase.__getitem__"}
