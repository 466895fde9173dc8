"""Lowering breadth beyond the op-sample table (``tests/op_samples/test_lowered.py`` runs
its programs): runtime assertions fail the run with their message on both executors; a
data assertion is a lowering error; the interpreter's own limits are named."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx.experimental._config as fx_config
from torch.export import Dim

from conformance.op_samples import BY_NAME
from engines.stablehlo import InterpreterLimitation, execute, lower
from engines.stablehlo.execution.module import ExecutionError
from tests.op_samples.runs import lowered

EXECUTORS = ("xla", "interpreter")


@pytest.mark.parametrize("ex", EXECUTORS)
def test_failed_runtime_assertion_fails_the_run_with_its_message(ex):
    text, _ = lowered(BY_NAME["runtime_asserts"])
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
