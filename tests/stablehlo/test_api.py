"""Executors' contracts, errors, bounded/unbounded modes, the jax_export peer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

import engines.stablehlo as sh
from engines.stablehlo import ExecutionError, InterpreterCrashed, LoweringError, XlaExecutor, execute, lower
from engines.stablehlo.execution import jax_exported as JE
from engines.stablehlo.execution.executors import InterpreterExecutor


class Expand(torch.nn.Module):
    def forward(self, x, y):
        return x.expand(y.shape[0] * 2, -1, -1) * y.shape[0], y.shape[0] * 3 + 1


def _export(max_b=64):
    b = Dim("b", min=1, max=max_b) if max_b else Dim("b", min=1)
    return torch.export.export(Expand(), (torch.randn(1, 2, 3), torch.randn(3, 3)), dynamic_shapes={"x": None, "y": {0: b}})


@pytest.fixture(scope="module")
def text():
    return lower(_export())


def _args(b):
    return [np.ones((1, 2, 3), np.float32), np.zeros((b, 3), np.float32)]


def test_symint_arith_survives_and_output(text):
    assert "stablehlo.get_dimension_size" in text and "tensor<i64>" in text
    for b in (1, 7):
        out, s = execute(text, _args(b))
        assert out.shape == (2 * b, 2, 3) and np.all(out == b)
        assert s.dtype == np.int64 and int(s) == 3 * b + 1


def test_xla_compiles_once_bounded_per_shape_unbounded_interpreter_never(text):
    ex = XlaExecutor()
    for b in (1, 2, 2, 5, 1, 5):
        ex.run(text, _args(b))
    assert ex.compile_count() == 1 and ex.stats.cache_hits == 5  # bounded: one executable up to b = 64
    ex = XlaExecutor()
    for b in (1, 2, 2, 5, 1, 5):
        ex.run(lower(_export(), bounded=False), _args(b))
    assert ex.compile_count() == 3 and ex.stats.cache_hits == 3
    it = InterpreterExecutor(isolated=False)
    for b in (1, 2, 5):
        it.run(text, _args(b))
    assert it.compile_count() == 0
    before = sh.compile_count()
    execute(text, _args(9), executor="interpreter")
    assert sh.compile_count() == before


def test_bounded_vs_unbounded_types():
    ep = _export()
    assert "#stablehlo.bounds<64, ?>" in lower(ep)
    assert "#stablehlo.bounds" not in lower(ep, bounded=False)
    assert "#stablehlo.bounds" not in lower(_export(max_b=None))


def test_bound_is_enforced(text):
    for ex in ("xla", "interpreter"):
        with pytest.raises(ExecutionError, match="above its bound 64"):
            execute(text, _args(65), executor=ex)
    with pytest.raises(ExecutionError, match="dtype"):
        execute(text, [np.ones((1, 2, 3)), np.zeros((2, 3), np.float32)])


def test_unsupported_op_names_aten_op_and_node(monkeypatch):
    import engines.stablehlo.lowering.lower  # noqa: F401  (fills the registry)
    from engines.stablehlo.lowering import registry

    # an op with no torch decomposition, its lowering taken away
    monkeypatch.delitem(registry.LOWERINGS, torch.ops.aten.special_airy_ai.default)

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.special.airy_ai(x) + 1

    ep = torch.export.export(M(), (torch.rand(4, 3),), dynamic_shapes={"x": {0: Dim("n", min=1)}})
    with pytest.raises(LoweringError) as ei:
        lower(ep)
    e = ei.value
    assert "aten::special_airy_ai" in str(e) and e.op == "aten::special_airy_ai" and e.node == "special_airy_ai"


def test_lowering_error_has_node_context():
    class M(torch.nn.Module):
        def forward(self, x):
            y = x.clone()
            y[x[:, 0, 0] > 0] = 1.0  # a boolean mask over the leading dim only
            return y

    ep = torch.export.export(M(), (torch.randn(4, 3, 2),), dynamic_shapes={"x": {1: Dim("n", min=1)}})
    with pytest.raises(LoweringError, match=r"While lowering %\w+ = aten::index_put.*boolean mask"):
        lower(ep)


CRASH = """
module {
  func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %0 = stablehlo.custom_call @no_such_target(%arg0) : (tensor<?xf32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }
}
"""


def test_interpreter_abort_is_isolated(text):
    ex = InterpreterExecutor(isolated=True)
    try:
        assert ex.run(text, _args(2))[0].shape == (4, 2, 3)
        with pytest.raises(InterpreterCrashed, match="aborted"):
            ex.run(CRASH, [np.ones(3, np.float32)])
        out, _ = ex.run(text, _args(2))  # worker restarted, the module sent to it again
        assert out.shape == (4, 2, 3) and ex.worker.starts == 2
    finally:
        ex.close()


def test_params_as_args():
    lin = torch.nn.Linear(3, 2)
    ep = torch.export.export(lin, (torch.randn(4, 3),), dynamic_shapes={"input": {0: Dim("n", min=1)}})
    t = lower(ep, params="args")
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    params = sh.param_arrays(ep)
    (y,) = execute(t, params + [x])
    w, b = (p.detach().numpy().astype(np.float64) for p in lin.parameters())
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ jax_export
def _jax_fn(x, y):
    import jax.numpy as jnp

    return jnp.concatenate([x, x], 0) * 2 + y.sum(), jnp.broadcast_to(x[:1], (x.shape[0] * 2, 3))


@pytest.fixture(scope="module")
def jax_text():
    exp = JE.export_jax(_jax_fn, [("b, 3", np.float32), ((4,), np.float32)], constraints=["b <= 64"])
    return JE.module_text(exp)


def test_jax_export_both_executors(jax_text):
    assert "shape_assertion" in jax_text and "tensor<?x3xf32>" in jax_text
    stripped, n = JE.strip_shape_assertions(jax_text)
    assert n >= 1 and "shape_assertion" not in stripped
    for b in (1, 2, 5, 64):
        g = np.random.default_rng(b)
        x, y = g.standard_normal((b, 3)).astype(np.float32), g.standard_normal(4).astype(np.float32)
        want = [np.concatenate([x, x]).astype(np.float64) * 2 + y.astype(np.float64).sum(), np.broadcast_to(x[:1], (2 * b, 3))]
        for ex in ("xla", "interpreter"):
            got = JE.run(jax_text, [x, y], ex)
            for a, w in zip(got, want, strict=False):
                np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)


def test_jax_export_constraint_checked(jax_text):
    for ex in ("xla", "interpreter"):
        with pytest.raises(ExecutionError, match="b <= 64"):
            JE.run(jax_text, [np.zeros((65, 3), np.float32), np.zeros(4, np.float32)], ex)
