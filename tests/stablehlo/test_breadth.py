"""Lowering breadth: export (torch.export Dims) -> lower -> `?` types ->
both executors vs torch eager at n = 0/1, small and large; runtime
assertions fail the run with their message on both executors; the
interpreter's own limits are named."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx.experimental._config as fx_config
from torch.export import Dim

from engines.stablehlo import InterpreterLimitation, execute, lower
from engines.stablehlo.execution.module import ExecutionError

from .cases_breadth import PROGRAMS

EXECUTORS = ("xla", "interpreter")
_LOWERED = {}


def _torch(a):
    return torch.from_numpy(a) if isinstance(a, np.ndarray) else a


def lowered(p):
    if p.name not in _LOWERED:
        sample = tuple(_torch(a) for a in p.make(p.export_n, np.random.default_rng(0)))
        with fx_config.patch(backed_size_oblivious=p.oblivious):
            ep = torch.export.export(p.module, sample, dynamic_shapes={"xs": p.dyn}, **p.export_kw)
        _LOWERED[p.name] = lower(ep)
    return _LOWERED[p.name]


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        res += _flat(o)
    return res


def _check(got, want, p, where):
    assert len(got) == len(want), where
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        b = b.detach().numpy()
        assert a.shape == b.shape, f"{where} out{i}: shape {a.shape} != {b.shape}"
        if b.dtype == np.bool_ or np.issubdtype(b.dtype, np.integer):
            np.testing.assert_array_equal(a, b, err_msg=f"{where} out{i}")
        else:
            np.testing.assert_allclose(a, b, rtol=p.rtol, atol=p.atol, err_msg=f"{where} out{i}")


@pytest.mark.parametrize("p", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_lowered_types(p):
    text = lowered(p)
    sig = text.split("func.func public @main(", 1)[1].split("{", 1)[0]
    assert "?" in sig, sig
    for s in p.expect:
        assert s in text, f"{s!r} not in lowered text:\n{text}"


@pytest.mark.parametrize("p", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_executors_match_torch(p):
    text = lowered(p)
    for n in p.sizes:
        args = p.make(n, np.random.default_rng(n))
        with torch.no_grad():
            want = _flat(p.module(*(_torch(a) for a in args)))
        arrays = [np.asarray(a) for a in args]
        for ex in EXECUTORS:
            _check(execute(text, arrays, executor=ex), want, p, f"{p.name} {ex} n={n}")


@pytest.mark.parametrize("ex", EXECUTORS)
def test_failed_runtime_assertion_fails_the_run_with_its_message(ex):
    p = next(p for p in PROGRAMS if p.name == "runtime_asserts")
    text = lowered(p)
    for rows, expr in [(3, r"Eq\(Mod\(s\d+, 2\), 0\)"), (10, r"Ne\(s\d+, 10\)")]:
        with pytest.raises(ExecutionError, match=rf"Runtime assertion failed for expression {expr}.*\(s\d+ = {rows}\)"):
            execute(text, [np.zeros((rows, 3), f32)], executor=ex)
    (out,) = execute(text, [np.ones((4, 3), f32)], executor=ex)  # a passing shape still runs
    np.testing.assert_array_equal(out, np.full((2, 2, 3), 2.0, f32))


f32 = np.float32


class _DataAssert(torch.nn.Module):
    def forward(self, x):
        torch._assert_async(x.sum() > 0, "sum must be positive")
        return x * 2


def test_data_assertion_is_a_lowering_error_not_dropped():
    ep = torch.export.export(_DataAssert(), (torch.ones(3),), dynamic_shapes=({0: Dim("n", min=1)},))
    with pytest.raises(Exception, match=r"sum must be positive.*cannot be checked by the StableHLO executors"):
        lower(ep)
    text = lower(ep, data_asserts="skip")  # asked for explicitly
    np.testing.assert_array_equal(execute(text, [np.ones(2, f32)], executor="xla")[0], np.full(2, 2.0, f32))


class _Masks(torch.nn.Module):
    def forward(self, m, b):
        return m.logical_not(), b + 1, (b > 100) & m


def test_interpreter_takes_bool_and_uint8_arguments():
    n = Dim("n", min=1)
    ep = torch.export.export(
        _Masks(), (torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.uint8)), dynamic_shapes=({0: n}, {0: n})
    )
    text = lower(ep)
    assert "tensor<?xi1>" in text and "tensor<?xui8>" in text
    m = np.array([True, False, True, True])
    b = np.array([0, 101, 255, 7], np.uint8)
    want = [~m, (b + np.uint8(1)).astype(np.uint8), (b > 100) & m]
    for ex in EXECUTORS:
        got = execute(text, [m, b], executor=ex)
        for g, w in zip(got, want, strict=False):
            assert g.dtype == w.dtype, ex
            np.testing.assert_array_equal(g, w, err_msg=ex)


class _MM(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def test_interpreter_zero_size_contraction_is_a_named_limitation():
    k = Dim("k", min=0)
    with fx_config.patch(backed_size_oblivious=True):
        ep = torch.export.export(_MM(), (torch.ones(2, 3), torch.ones(3, 4)), dynamic_shapes=({1: k}, {0: k}))
    text = lower(ep)
    a, b = np.ones((2, 0), f32), np.ones((0, 4), f32)
    np.testing.assert_array_equal(execute(text, [a, b], executor="xla")[0], np.zeros((2, 4), f32))
    with pytest.raises(
        InterpreterLimitation,
        match=r"dot_general contracts a zero-size dim.*the xla executor runs it.*\(argument shapes \(2, 0\), \(0, 4\)\)",
    ):
        execute(text, [a, b], executor="interpreter")
    # refused before running (no abort): a later call still runs
    np.testing.assert_array_equal(
        execute(text, [np.ones((2, 3), f32), np.ones((3, 4), f32)], executor="interpreter")[0], np.full((2, 4), 3.0, f32)
    )


class _SizedByValue(torch.nn.Module):
    def forward(self, x, k):
        return x.new_ones(k) * 2, x * k


def test_a_dim_set_by_a_scalar_inputs_value_is_a_clear_lowering_error():
    ep = torch.export.export(_SizedByValue(), (torch.randn(5), 3), dynamic_shapes=({0: Dim("n", min=1)}, Dim.DYNAMIC))
    with pytest.raises(Exception, match=r"aten::full.*tensor dim s\d+ depends on s\d+, the value of scalar input 'k'"):
        lower(ep)
