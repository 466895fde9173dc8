"""Program mixins for the arrays a system takes: torch tensors or jax arrays on the CPU."""

from __future__ import annotations

import numpy as np


class TorchArrays:
    """Program mixin: inputs and outputs are CPU torch tensors."""

    def convert(self, arrays):
        import torch

        return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]

    def to_numpy(self, out):
        return out.detach().cpu().numpy()


class JaxArrays:
    """Program mixin: inputs and outputs are jax arrays on the default (CPU) device."""

    def convert(self, arrays):
        import jax

        return [jax.device_put(a) for a in arrays]

    def sync(self, out):
        out.block_until_ready()

    def to_numpy(self, out):
        return np.asarray(out)
