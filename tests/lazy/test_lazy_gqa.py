"""Grouped-query attention on the lazy path: ``scaled_dot_product_attention(..., enable_gqa=True)``
against torch's own op, over a generated sweep of head counts (every divisor ``Hkv`` of ``Hq``),
masks (none, boolean, additive float, causal) and symbolic lengths, each compiled once; and the
same program lowered to StableHLO (``to_stablehlo``) on a slice of the sweep."""

import itertools

import pytest
import torch
import torch.nn.functional as F

import engines.lazy as L
from engines.lazy.to_stablehlo import StablehloCompiler

#: (Hq, Hkv): every divisor of Hq, so the repeat factor runs from 1 (plain MHA) to Hq (MQA)
HEADS = [(hq, hkv) for hq in (2, 4, 6) for hkv in range(1, hq + 1) if hq % hkv == 0]
MASKS = ("none", "bool", "float", "causal")
LENGTHS = [(3, 5), (4, 4), (7, 2)]  # (L, S): the query and key lengths, both symbolic
B, E, EV = 2, 4, 3


def _mask(kind: str, lq: int, s: int, g: torch.Generator):
    if kind == "bool":  # keep column 0 so no row is all -inf (torch gives NaN there, so do we)
        m = torch.rand(lq, s, generator=g) > 0.4
        m[:, 0] = True
        return m
    if kind == "float":
        return torch.randn(B, 1, lq, s, generator=g)
    return None


def _program(kind: str):
    causal = kind == "causal"
    if kind in ("none", "causal"):
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)


def _dims(kind: str) -> list:
    qkv = [{2: "l"}, {2: "s"}, {2: "s"}]
    if kind == "bool":
        return qkv + [{0: "l", 1: "s"}]
    if kind == "float":
        return qkv + [{2: "l", 3: "s"}]
    return qkv


def _inputs(hq, hkv, kind, lq, s, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, hq, lq, E, generator=g)
    k = torch.randn(B, hkv, s, E, generator=g)
    v = torch.randn(B, hkv, s, EV, generator=g)
    m = _mask(kind, lq, s, g)
    return (q, k, v) if m is None else (q, k, v, m)


def _sweep(f, hq, hkv, kind, lengths):
    program = _program(kind)
    for i, (lq, s) in enumerate(lengths):
        args = _inputs(hq, hkv, kind, lq, s, i)
        got = f(*args)
        assert got.shape == (B, hq, lq, EV)
        torch.testing.assert_close(got, program(*args), rtol=1e-5, atol=1e-5, msg=f"Hq={hq} Hkv={hkv} {kind} L,S={lq},{s}")


@pytest.mark.parametrize("hq, hkv, kind", [(hq, hkv, m) for (hq, hkv), m in itertools.product(HEADS, MASKS)])
def test_gqa_matches_torch_with_one_compile(hq, hkv, kind):
    f = L.jit(_program(kind), dims=_dims(kind))
    _sweep(f, hq, hkv, kind, LENGTHS)
    assert f.ctx.compiles() == 1, [str(g) for g in f.ctx.guards]


@pytest.mark.parametrize("hq, hkv, kind", [(4, 2, "causal"), (6, 1, "bool"), (4, 4, "float")])
def test_gqa_lowered_to_stablehlo(hq, hkv, kind):
    """The FX module's sdpa keeps ``enable_gqa``: torch.export and our lowering repeat the heads."""
    compiler = StablehloCompiler("unbounded", "gqa")
    f = L.jit(_program(kind), dims=_dims(kind), ctx=L.LazyContext(compiler=compiler))
    _sweep(f, hq, hkv, kind, LENGTHS[:2])
    assert f.ctx.compiles() == 1 and len(compiler.modules) == 1


def test_heads_that_do_not_divide_are_refused_as_torch_refuses_them():
    f = L.jit(_program("none"), dims=_dims("none"))
    q, k, v = torch.randn(1, 6, 3, E), torch.randn(1, 4, 3, E), torch.randn(1, 4, 3, EV)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    with pytest.raises(RuntimeError, match="4 key heads do not divide 6 query heads"):
        f(q, k, v)


def test_without_enable_gqa_unequal_heads_do_not_broadcast():
    f = L.jit(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    with pytest.raises(RuntimeError, match="cannot broadcast"):
        f(torch.randn(1, 4, 3, E), torch.randn(1, 2, 3, E), torch.randn(1, 2, 3, EV))
