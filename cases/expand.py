"""Arithmetic on a size feeding ``expand``: the torch_xla unbounded-dynamism report."""

from __future__ import annotations

import numpy as np

from .model import Case, Input, bounded, static, unbounded

H = W = 224  # the report's image size
EMBED = 768


def _expand_torch():
    def expand_over_batch(x, emb):
        return emb.expand(x.shape[0] * 2, -1, -1)

    return expand_over_batch


def _expand_jax():
    import jax.numpy as jnp

    def expand_over_batch(x, emb):
        return jnp.broadcast_to(emb, (x.shape[0] * 2, emb.shape[1], emb.shape[2]))

    return expand_over_batch


def _expand_oracle(x, emb):
    return np.broadcast_to(emb, (2 * x.shape[0], emb.shape[1], emb.shape[2])).copy()


def _expand_case(name: str, batch, sweep, tags, only_modes=None) -> Case:
    return Case(
        name=name,
        tags=("size-arithmetic", "broadcast") + tags,
        description="emb.expand(x.shape[0] * 2, -1, -1): the sym_size -> mul -> expand graph",
        dims=(batch, static("c", 3), static("h", H), static("w", W), static("one", 1), static("k", EMBED)),
        inputs=(Input("x", ("b", "c", "h", "w")), Input("emb", ("one", "one", "k"))),
        sweep=sweep,
        oracle=_expand_oracle,
        out_shape=("2*b", 1, "k"),
        torch_fn=_expand_torch,
        jax_fn=_expand_jax,
        only_modes=only_modes,
        exact=True,  # expand copies emb: every element must be emb's, bit for bit
    )


expand_over_batch = _expand_case(
    "expand_over_batch",
    unbounded("b", min=2),
    tuple({"b": b} for b in (2, 3, 5, 8, 13, 21, 34, 55, 89, 144)),
    ("unbounded",),
)

expand_over_batch_bounded = _expand_case(
    "expand_over_batch_bounded",
    bounded("b", max=64, min=2),
    tuple({"b": b} for b in (2, 3, 5, 8, 13, 21, 34, 55, 64)),
    ("bounded",),
    # static and unbounded are expand_over_batch's rows
    only_modes=("bounded",),
)

CASES = (expand_over_batch, expand_over_batch_bounded)
