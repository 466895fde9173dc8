"""Broadcasts without live sizes in bounded entries, generated from the binary-op table.

A ``dynamic_broadcast_in_dim`` of an operand without dynamic dims (a scalar, a bias)
holds the same values along each dynamic dim, so the bounded entry leaves it static at
the bound, without ``set_dimension_size``, where every use is an elementwise op with an
operand that has live sizes: XLA's padder takes the result's sizes from that operand.
Such broadcasts were ~1,000 of data2vec-audio's ~1,300 ``set_dimension_size`` ops, and
its bounded compile ran past 420 s. Where both operands of an op are uniform (a
``full_like`` times a scalar) the sizes must stay, or a sum over the dynamic dim would
add the padding: the ``uniform_pair`` programs here fail if the rule is loosened."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from engines.stablehlo import BoundedXlaProgram, Module, lower
from engines.stablehlo.execution.padder_rewrite import bound_entry

N_MAX, C = 8, 3
#: torch binary op -> numpy's: the elementwise ops the lowering broadcasts a scalar for
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
pytestmark = pytest.mark.slow  # (24 XLA compiles, ~13 s)
K = 1.5  # the scalar (a float: a tensor operand of maximum/minimum is made of it)
W = np.array([0.5, -2.0, 3.0], np.float32)  # a bias: a static operand broadcast over the dynamic rows


def _k(like):
    return torch.full((), K) if like is None else torch.full_like(like, K)


def program(op: str, form: str):
    """``(torch module, numpy oracle)`` of ``op`` in ``form``: ``scalar`` (``x op k``, summed
    over the rows), ``reflected`` (``k op x``, returned), ``bias`` (``x op w`` summed) or
    ``uniform_pair`` (``full_like(x, k) op k``, summed: both operands uniform)."""
    t, f = getattr(torch, op), BINARY[op]

    class Program(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.from_numpy(W))

        def forward(self, x):
            if form == "scalar":
                return t(x, _k(None)).sum(0)
            if form == "reflected":
                return t(_k(None), x)
            if form == "bias":
                return t(x, self.w).sum(0)
            return t(_k(x), _k(None)).sum(0) + x.sum(0)

    def oracle(x):
        if form == "scalar":
            return f(x, np.float32(K)).sum(0)
        if form == "reflected":
            return f(np.float32(K), x)
        if form == "bias":
            return f(x, W).sum(0)
        return f(np.full_like(x, K), np.float32(K)).sum(0) + x.sum(0)

    return Program(), oracle


FORMS = ("scalar", "reflected", "bias", "uniform_pair")
CASES = [(op, form) for op in BINARY for form in FORMS]


def _bounded_text(mod) -> str:
    n = Dim("n", min=2, max=N_MAX)
    ep = torch.export.export(mod, (torch.ones(4, C),), dynamic_shapes=({0: n},))
    return lower(ep, bounded=True)


def _entry_text(text: str) -> str:
    from jaxlib.mlir import ir

    from engines.stablehlo.lowering.verify import make_context

    with make_context():
        return str(ir.Module.parse(bound_entry(text, "t").bytecode))


@pytest.mark.parametrize(("op", "form"), CASES, ids=[f"{o}-{f}" for o, f in CASES])
def test_a_uniform_broadcast_runs_bounded_without_live_sizes_where_it_may(op, form):
    """Every size up to the bound from one compile, padding NaN, equal to numpy; the
    broadcasts into a sized operand carry no ``set_dimension_size``, the pair's do."""
    mod, oracle = program(op, form)
    text = _bounded_text(mod)
    entry = _entry_text(text)
    sized = entry.count("stablehlo.set_dimension_size")
    # the argument's live size and the result's bound (when the result is dynamic): nothing else
    floor = 1 + (form == "reflected")
    if form == "uniform_pair":
        assert sized > floor, entry
    else:
        assert sized == floor, entry
    # (checked before compiling: without them, XLA aborts the process on the pair's module)
    compiles = []
    prog = BoundedXlaProgram(Module(text, f"{op} {form}"), on_compile=lambda s, why: compiles.append(why), pad_value=np.nan)
    rng = np.random.default_rng(0)
    for n in (2, 5, N_MAX):
        x = (rng.standard_normal((n, C)) + 3).astype(np.float32)  # (no zero to divide by)
        got = prog(*prog.convert([x]))[0]
        np.testing.assert_allclose(got, oracle(x), rtol=1e-5, atol=1e-5, err_msg=f"{op} {form} n={n}")
    assert len(compiles) == 1, compiles
