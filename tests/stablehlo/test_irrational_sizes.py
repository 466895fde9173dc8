"""Sizes holding irrational or non-polynomial terms (a resize by ``sqrt(2)``, as a
windowed ViT's position-embedding interpolation makes; a power or root of a
size): exported, and refused at lowering, before any XLA compile, by a one-line
error naming the term; never a module that serves one size or a wrong one."""

from __future__ import annotations

import math

import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import LoweringError, lower
from engines.torch_export_tools import export_oblivious_retry

F = torch.nn.functional

#: name -> (fn of an image x (1, 2, n, n), the refusal's words)
PROGRAMS = {
    "nearest_by_sqrt2": (lambda x: F.interpolate(x, scale_factor=math.sqrt(2), mode="nearest"), r"the float 1\.414"),
    "bilinear_by_sqrt2": (lambda x: F.interpolate(x, scale_factor=math.sqrt(2), mode="bilinear"), r"the float 1\.414"),
    "sqrt_of_a_size": (lambda x: x[..., : torch.sym_int(x.shape[2] ** 0.5)], r"FloatPow"),
    "size_times_sqrt2": (lambda x: x[..., : torch.sym_int(x.shape[2] * math.sqrt(2)) // 2], r"the float 1\.414"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_irrational_sizes_are_refused_before_compiling(name):
    fn, words = PROGRAMS[name]
    n = Dim("n", min=4, max=64)
    ep = export_oblivious_retry(
        lambda **o: torch.export.export(
            Fn(lambda _, x: fn(x)), (torch.randn(1, 2, 20, 20),), dynamic_shapes={"xs": ({2: n},)}, **o
        )
    )
    for bounded in (True, False):
        with pytest.raises(LoweringError, match=words) as info:
            lower(ep, bounded=bounded)
        assert "\n" not in str(info.value).strip() and info.value.op, info.value  # one line, naming the op
