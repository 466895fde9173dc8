"""One cache: a call's key -> the graph of its signature; specialised (static-mode) signatures in the same cache."""

import einx
import numpy as np
import pytest
import torch

from engines import einx_symbolic as ex
from engines.einx_symbolic import api


def test_inline_keys_are_the_call_key_and_share_the_signature_graph():
    ex.clear_cache()
    n0 = ex.compile_count()
    d, c = torch.randn(4, 8), torch.rand(4) + 1
    ex.divide("e d, e -> e d", d, c)  # the two-array fast path
    g = api.GRAPHS[api._key("divide", "e d, e -> e d", (d, c))]
    assert api.GRAPHS[g.signature] is g
    ex.divide("e d, e -> e d", d, c, backend="torch")  # another key, the same signature: no build
    assert api.GRAPHS[api._key("divide", "e d, e -> e d", (d, c), "torch")] is g
    ex.sum("a [b]", d)  # the one-array fast path
    assert api._key("sum", "a [b]", (d,)) in api.GRAPHS
    assert ex.compile_count() - n0 == 2
    assert api.BUILD_LOG[-2:] == [
        "new signature divide('e d, e -> e d') on torch, ranks (2, 1), dtypes (torch.float32, torch.float32)",
        "new signature sum('a [b]') on torch, ranks (2,), dtypes (torch.float32)",
    ]


def test_constraint_kinds_of_arrays_are_in_the_key():
    x = np.zeros((2, 3, 5))
    assert ex.id("b... c -> c b...", x, b=np.array([2, 3])).shape == (5, 2, 3)
    for b in (np.array([2, 3, 4]), [2, 3, 4]):  # a different length: einx raises, and so must we (no stale graph)
        with pytest.raises(einx.errors.RankError):
            einx.id("b... c -> c b...", x, b=b)
        with pytest.raises(einx.errors.RankError):
            ex.id("b... c -> c b...", x, b=b)
    # an int and a numpy integer are the same kind of constraint: one graph
    ex.clear_cache()
    n0 = ex.compile_count()
    ex.id("(a b) -> a b", np.arange(6.0), b=np.int64(2))
    ex.id("(a b) -> a b", np.arange(6.0), b=2)
    assert ex.compile_count() - n0 == 1


def test_specialised_ops_build_per_input_shapes_in_the_same_cache():
    ex.clear_cache()
    divide = api.specialised("divide")
    n0 = ex.compile_count()
    for e in (3, 4, 3, 4, 5):
        d, c = torch.randn(e, 8), torch.rand(e) + 1
        torch.testing.assert_close(divide("e d, e -> e d", d, c), d / c.unsqueeze(-1))
    assert ex.compile_count() - n0 == 3
    assert api.BUILD_LOG[-3:] == [f"new input shapes (({e}, 8), ({e},))" for e in (3, 4, 5)]
    sigs = {g.signature for g in api.GRAPHS.values()}
    assert {s.shapes for s in sigs} == {((e, 8), (e,)) for e in (3, 4, 5)}
    # the unspecialised op is another signature: one more build, then none for new sizes
    for e in (3, 6):
        ex.divide("e d, e -> e d", torch.randn(e, 8), torch.rand(e) + 1)
    assert ex.compile_count() - n0 == 4
    # the same checks and errors as the unspecialised graph
    with pytest.raises(einx.errors.AxisSizeError):
        divide("e d, e -> e d", torch.randn(3, 8), torch.rand(4))
    assert api.specialised("sum")("a [b]", torch.ones(2, 3), keepdims=True).shape == (2, 1)


@pytest.mark.parametrize("first", [1, 1.0])
def test_a_shift_equal_to_another_of_another_type_is_another_signature(first):
    """``shift`` enters the graph's text; ``1.0 == True == 1`` (one dict key), yet torch.roll takes only ints.
    (einx 0.4.3 keys its cache by ``==`` too: after ``shift=1`` it answers ``shift=1.0``, and the reverse
    order fails ``shift=1``; ours answers each call the same in either order.)"""
    ex.clear_cache()
    x = torch.arange(3.0)
    for shift in (first, 1.0 if first == 1 else 1, True, (1,), (1.0,)):
        if all(type(v) is int for v in (shift if isinstance(shift, tuple) else (shift,))):
            assert ex.roll("[a]", x, shift=shift).tolist() == [2.0, 0.0, 1.0]
        else:
            with pytest.raises(einx.errors.CallOperationError):
                ex.roll("[a]", x, shift=shift)
