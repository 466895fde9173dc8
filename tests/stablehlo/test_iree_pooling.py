"""Pooling windows over `?` dims through IREE (``engines/stablehlo/iree_window.py``):
IREE's StableHLO input refuses every ``reduce_window`` with a `?` dim, so the
rewrite turns max and sum windows into ``linalg.pooling_*``; max pooling whose
indices nothing reads is lowered to a single-result window (ResNet's stem), one
whose indices are read becomes one max window over a packed (value, index) key. Skips where IREE's wheels are missing."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("iree.compiler", reason="IREE's compiler wheel (the peers extra: make setup)")
pytest.importorskip("iree.runtime", reason="IREE's runtime wheel (the peers extra: make setup)")

from backends.torch_export import export
from engines.stablehlo import lower
from engines.stablehlo.iree_compat import IreeCompatError, rewrite


def pools(x, s):
    """ResNet's stem pool (its indices dropped), strided and dilated max pools,
    average pools (padding counted and not), a 1-d max and average pool."""
    return (
        F.max_pool2d_with_indices(x, 3, 2, 1)[0],
        F.max_pool2d(x, 2, 2),
        F.max_pool2d(x, (3, 2), (1, 2), (1, 0), dilation=(2, 1)),
        F.avg_pool2d(x, 3, 2, 1),
        F.avg_pool2d(x, 2, 1, 1, count_include_pad=False),
        F.max_pool1d_with_indices(s, 3, 2, 1)[0],  # (max_pool1d itself specialises the length)
        F.avg_pool1d(s, 3, 2, 1),
    )


def _export(fn):
    b, h, t = torch.export.Dim("b", min=2, max=16), torch.export.Dim("h", min=6, max=64), torch.export.Dim("t", min=8, max=64)
    args = [torch.randn(2, 3, 9, 9), torch.randn(2, 4, 20)]
    return export(fn, args, ({0: b, 2: h, 3: h}, {0: b, 2: t}), "pools")


def _main(text, hints=False):
    import iree.runtime as rt

    from engines.stablehlo.execution.iree_executor import compile_module

    ctx = rt.SystemContext(config=rt.Config("local-task"))
    vm = rt.VmModule.copy_buffer(ctx.instance, compile_module(text, hints=hints))
    ctx.add_vm_module(vm)
    return ctx.modules[vm.name]["main"]


@pytest.mark.parametrize("bounded", [False, True], ids=["unbounded", "bounded"])
def test_pooling_windows_become_linalg_pooling_and_match_torch_at_every_size(bounded):
    text = lower(_export(pools), bounded=bounded)
    # 4 max windows, 4 sums (count_include_pad=False counts its window with a second one);
    # none with two results: the stem's indices are unread
    assert text.count('"stablehlo.reduce_window"') == 8 and "i64>) -> (tensor" not in text
    out = rewrite(text)
    assert "stablehlo.reduce_window" not in out
    assert out.count("linalg.pooling_nchw_max") == 4  # the 1-d pools decompose to 2-d (a unit height)
    assert out.count("linalg.pooling_nchw_sum") == 4
    main = _main(text, hints=bounded)  # one compile for every size below
    for n, side, length in ((2, 9, 20), (3, 14, 33), (5, 7, 8), (2, 32, 61)):
        x, s = torch.randn(n, 3, side, side), torch.randn(n, 4, length)
        x[0, 0, :2, :2] = float("-inf")  # a window of -inf: the padding must not win it
        got = main(x.numpy(), s.numpy())
        want = pools(x, s)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            g = np.asarray(g.to_host())
            assert g.shape == tuple(w.shape), f"output {i} at {(n, side, length)}"
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"output {i} at {(n, side, length)}")


def test_integer_max_pooling_matches_torch():
    def program(x, s):
        return F.max_pool2d(x, 3, 2, 1), F.max_pool1d_with_indices(s, 2)[0]

    x, s = torch.randint(-100, 100, (2, 3, 9, 9), dtype=torch.int32), torch.randint(-9, 9, (2, 4, 20), dtype=torch.int32)
    b, h, t = torch.export.Dim("b", min=2), torch.export.Dim("h", min=6), torch.export.Dim("t", min=8)
    text = lower(export(program, [x.float(), s.float()], ({0: b, 2: h, 3: h}, {0: b, 2: t}), "ipools"), bounded=False)
    text = text.replace("f32", "i32").replace("0xFF800000", "-2147483648")  # the same windows over int32
    main = _main(text)
    for n, side, length in ((2, 9, 20), (4, 13, 9)):
        x = torch.randint(-100, 100, (n, 3, side, side), dtype=torch.int32)
        s = torch.randint(-9, 9, (n, 4, length), dtype=torch.int32)
        got = main(x.numpy(), s.numpy())
        for g, w in zip(got, program(x.float(), s.float()), strict=True):
            np.testing.assert_array_equal(np.asarray(g.to_host()), w.int().numpy())


def _with_indices(x, s):
    return (*F.max_pool2d_with_indices(x, 3, 2, 1), *F.max_pool2d_with_indices(x, 2, 2), F.max_pool1d_with_indices(s, 3, 2, 1)[1])


def test_max_pooling_whose_indices_are_read_packs_value_and_index_in_one_key():
    """Values and indices equal torch's exactly, on plateaus of equal values (the first
    index wins), -0 against +0, -inf and NaN, from one compile."""
    text = lower(_export(_with_indices), bounded=False)
    assert text.count("i64>) -> (tensor") == 3  # the lowering's two-result windows
    out = rewrite(text)
    assert "stablehlo.reduce_window" not in out and out.count("linalg.pooling_nchw_max") == 3
    main = _main(text)
    g = torch.Generator().manual_seed(0)
    for n, side, length in ((2, 9, 20), (3, 14, 33), (2, 31, 9)):
        x = torch.randint(-3, 3, (n, 3, side, side), generator=g).float()  # many ties
        s = torch.randint(-3, 3, (n, 4, length), generator=g).float()
        x[0, 0, :2, :2] = float("-inf")
        x[0, 1, 0, :3] = torch.tensor([-0.0, 0.0, -0.0])
        x[1, 2, 3, 3] = float("nan")
        got = [np.asarray(v.to_host()) for v in main(x.numpy(), s.numpy())]
        for i, (g_, w) in enumerate(zip(got, _with_indices(x, s), strict=True)):
            assert g_.shape == tuple(w.shape) and g_.dtype == w.numpy().dtype, f"output {i} at {(n, side, length)}"
            np.testing.assert_array_equal(g_, w.numpy(), err_msg=f"output {i} at {(n, side, length)}")


def test_a_two_result_window_of_another_form_is_refused_by_name():
    def program(x, s):
        return F.max_pool2d_with_indices(x.double(), 3, 2, 1)

    text = lower(_export(program), bounded=False)
    with pytest.raises(
        IreeCompatError, match=r"stablehlo\.reduce_window with 2 results, not max pooling's over f32 .*values of f64"
    ):
        rewrite(text)


def test_resnets_stem_compiles_once_and_matches_torch():
    """conv 7x7/2 -> batch norm -> relu -> max pool 3x3/2 -> conv 3x3: torch's size
    expression of the pool's result differs in form from the window's own, and the
    no-op slice between them (`?` sizes) made IREE's codegen of the next conv's pad fail
    ("failed to resolve workgroup count hint"); the pool now takes torch's expression."""
    torch.manual_seed(0)
    conv, bn, pool = torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(16).eval(), torch.nn.MaxPool2d(3, 2, 1)
    conv2 = torch.nn.Conv2d(16, 16, 3, 1, 1)

    def stem(x):
        return conv2(pool(torch.relu(bn(conv(x)))))

    b, h = torch.export.Dim("b", min=2, max=64), torch.export.Dim("h", min=16, max=512)
    with torch.no_grad():
        text = lower(export(stem, [torch.randn(2, 3, 32, 32)], ({0: b, 2: h, 3: h},), "stem"), bounded=False)
    assert "real_dynamic_slice" not in text
    main = _main(text)
    for n, side in ((2, 32), (3, 45), (2, 64)):
        x = torch.randn(n, 3, side, side)
        with torch.no_grad():
            want = stem(x)
        got = np.asarray(main(x.numpy()).to_host())
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"at {(n, side)}")
