"""Lazy-path samples that reach the lazy ops no other sample or pinned OpInfo pass does: the
other spellings torch has for an op (``torch.relu`` beside ``F.relu``, the ``torch._C._nn``
builtins ``torch.nn.functional`` wraps), bitwise ops, and Python scalars on the left of an
operator (``2 ** i``: the reflected ``py_*`` ops). Against torch eager."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .sample import Lazy, Sample

_nn = torch._C._nn


def _unary(x):
    return (
        torch.relu(x),
        torch.celu(x),
        torch.selu(x),
        torch.detach(x),
        torch.clip(x, -1, 1),
        torch.layer_norm(x, [4]),
        torch.dropout(x, 0.0, False),
        *(f(x) for f in (_nn.elu, _nn.hardsigmoid, _nn.hardswish, _nn.hardtanh, _nn.leaky_relu, _nn.mish, _nn.relu6, _nn.silu)),
        F.dropout(x, 0.0),
        F.normalize(x),
        F.softsign(x),
    )


def _ints(i):
    return (
        torch.bitwise_and(i, 3),
        torch.bitwise_or(i, i),
        torch.bitwise_xor(i, 5),
        torch.bitwise_not(i),
        *(3 & i, 3 | i, 3 ^ i, 2 + i, 2 * i, 7 // (i + 1), 2**i, 9 % (i + 1), 2.0 / (i + 1)),
        F.one_hot(i % 5, 5),
        torch.eye(i.shape[0]),
    )


def build() -> list[Sample]:
    def normal(n, g):
        return [g.standard_normal((n, 4)).astype(np.float32) * np.float32(3)]

    def ints(n, g):
        return [g.integers(0, 7, (n, 4)).astype(np.int64)]

    # (eager's own tolerance: the lazy path runs torch's kernels)
    return [
        Sample("unary spellings", _unary, normal, None, None, (2, 5, 9), 1.3e-6, 1e-5, lazy=Lazy(), origin="spellings"),
        Sample("int and reflected ops", _ints, ints, None, None, (2, 5, 9), 1.3e-6, 1e-5, lazy=Lazy(), origin="spellings"),
    ]
