"""A size handed to a torch creation function inside a tuple, by a caller that holds the
function from before the step patched torch (OpInfo's ``op.op``): torch's argument parser
reaches ``SymSize.__torch_function__``, which used to call the function again with the
tuple unchanged, recursing until Python's limit."""

import torch

import engines.lazy as L

ZEROS, FULL = torch.zeros, torch.full  # held before any step patches torch


def test_a_size_in_a_tuple_reaches_the_lazy_creation_function():
    f = L.LazyFunction(lambda z: ZEROS((z.shape[0], 3)) + FULL((z.shape[0], 1), 2.0), dims=[{0: "s0"}])
    for n in (4, 6):
        out = f(torch.zeros(n))
        assert torch.equal(out, torch.full((n, 3), 2.0))
