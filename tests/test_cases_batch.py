"""The batch family's oracles on examples worked out by hand (test_cases.py checks
every oracle's shape and dtype against its case's declarations)."""

import numpy as np

import cases
from cases import batch


def test_view_flattens_batch_then_sequence():
    x = np.arange(12.0).reshape(2, 2, 3)
    np.testing.assert_array_equal(cases.get("batch_view_arith").oracle(x), np.arange(12.0).reshape(4, 3))


def test_conv2d_is_a_zero_padded_cross_correlation():
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    w = np.zeros((1, 1, 3, 3))
    w[0, 0, 1, 1], w[0, 0, 1, 2] = 1.0, 2.0  # out[i, j] = x[i, j] + 2 x[i, j + 1], x[:, 2] = 0
    out = cases.get("batch_conv2d").oracle(x, w, np.array([0.5]))
    np.testing.assert_array_equal(out, [[[[5.5, 2.5], [11.5, 4.5]]]])


def test_linear_bmm_and_repeat():
    lin = cases.get("batch_linear").oracle(
        np.array([[1.0, 2.0]]), np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.array([10.0, 20.0, 30.0])
    )
    np.testing.assert_array_equal(lin, [[11.0, 22.0, 33.0]])
    bmm = cases.get("batch_bmm").oracle(np.array([[[1.0, 2.0]], [[3.0, 4.0]]]), np.array([[[1.0], [1.0]], [[2.0], [0.0]]]))
    np.testing.assert_array_equal(bmm, [[[3.0]], [[6.0]]])
    rep = cases.get("batch_repeat").oracle(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(rep, [[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]])


def test_batch_norm_eval_uses_the_running_statistics():
    x = np.array([[[3.0], [5.0]]])
    var = np.array([4.0, 1.0]) - batch.EPS  # sqrt(var + eps) = 2, 1
    out = cases.get("batch_norm_eval").oracle(x, np.array([1.0, 1.0]), var, np.array([1.0, 2.0]), np.array([0.0, 1.0]))
    np.testing.assert_allclose(out, [[[1.0], [9.0]]], rtol=1e-12)


def test_the_family_sweeps_novel_batch_sizes():
    for case in batch.CASES:
        sizes = [s["b"] for s in case.sweep]
        assert len(sizes) >= 20 and len(set(sizes)) == len(sizes), case.name
        assert "batch" in case.tags and case.torch_fn and case.jax_fn, case.name
    assert batch.batch_repeat.bucket_unsupported  # padded rows would land between the copies
