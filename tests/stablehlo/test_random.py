"""Random draws (``ops/random.py``): each distribution's lowering at two sizes, bounded (one XLA
compile) and unbounded, judged against torch's own draws by the OpInfo suite's distribution
oracle (shapes, dtypes, support, Kolmogorov-Smirnov, mean and variance): XLA's generator
draws other numbers than torch's, so values cannot equal eager's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from conformance.opinfo import distribution as D
from engines.stablehlo import LoweringError, XlaExecutor, lower

X = np.linspace(-1.0, 1.0, 400).astype(np.float32)

#: name -> torch fn of x [2n] (its draw's parameters from x where the op takes tensors)
PROGRAMS = {
    "rand": lambda x: torch.rand(x.shape[0], 3),
    "randn_like": lambda x: torch.randn_like(x),
    "uniform": lambda x: torch.empty_like(x).uniform_(-2.0, 5.0),
    "normal_tensors": lambda x: torch.normal(x, x.abs() + 0.5),
    "normal_sized": lambda x: torch.normal(1.5, 0.5, (x.shape[0],)),
    "normal_like": lambda x: torch.empty_like(x).normal_(-2.0, 0.5),
    "log_normal": lambda x: torch.empty_like(x).log_normal_(0.5, 0.75),
    "exponential": lambda x: torch.empty_like(x).exponential_(1.5),
    "cauchy": lambda x: torch.empty_like(x).cauchy_(-2.0, 0.5),
    "geometric": lambda x: torch.empty_like(x).geometric_(0.2),
    "bernoulli": lambda x: torch.bernoulli((x + 1) / 2),
    "randint": lambda x: torch.randint(3, 17, (x.shape[0],)),
    "rrelu": lambda x: torch.nn.functional.rrelu(x, 0.1, 0.6, training=True),
    "multinomial": lambda x: torch.multinomial(x.reshape(4, -1).abs() + 0.01, 5),
}


def _reference(fn, x, n):
    ref = []
    for seed in range(1, max(2, D.REFERENCE // n + 1)):
        torch.manual_seed(seed)
        ref.append([o.double().numpy().reshape(-1) for o in (fn(torch.from_numpy(x)),)])
    return [np.concatenate([r[i] for r in ref]) for i in range(len(ref[0]))]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_random_draws_follow_torchs_distribution(name):
    fn = PROGRAMS[name]
    h = Dim("h", min=2, max=1024)
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.tensor(X),), dynamic_shapes={"xs": ({0: 4 * h},)})
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        assert "stablehlo.rng_bit_generator" in text
        ex = XlaExecutor()
        calls = []
        for k in (1, 2):
            x = np.tile(X, k)
            got = ex.run(text, [x])
            want = [fn(torch.from_numpy(x))]
            ref = _reference(fn, x, want[0].numel())
            D.judge(got, want, ref)
            calls.append((got, ref))
        D.judge_pooled(calls)
        if bounded:
            assert ex.compile_count() == 1


def test_a_broken_draw_fails_the_oracle(monkeypatch):
    """The exponential drawn as a constant at its mean: the oracle's tests fail it."""
    from engines.stablehlo.lowering import registry

    def constant(ctx, node, x, lambd=1.0, generator=None):
        return ctx.constant(1.0 / lambd, ctx.out_dtype(node), ctx.out_shape(node))

    monkeypatch.setitem(registry.LOWERINGS, torch.ops.aten.exponential.default, constant)
    fn = PROGRAMS["exponential"]
    ep = torch.export.export(Fn(lambda _, x: fn(x)), (torch.tensor(X),), dynamic_shapes={"xs": ({0: Dim("n", min=2, max=4096)},)})
    (got,) = XlaExecutor().run(lower(ep), [X])
    with pytest.raises(D.Mismatch, match="Kolmogorov-Smirnov"):
        D.judge_pooled([([got], _reference(fn, X, X.size))])


def test_multinomial_with_replacement_is_refused_by_name():
    ep = torch.export.export(
        Fn(lambda _, x: torch.multinomial(x.abs() + 0.1, 4, replacement=True)),
        (torch.tensor(X),),
        dynamic_shapes={"xs": ({0: Dim("n", min=2, max=4096)},)},
    )
    with pytest.raises(LoweringError, match="multinomial with replacement"):
        lower(ep)
