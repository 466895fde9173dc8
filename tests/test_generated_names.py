"""The torch_xla export builds a module whose ``forward`` names the case's
inputs: a name that is a keyword, a builtin, a dunder, a duplicate or not an
identifier at all reaches the source only as a safe parameter name."""

import pytest

torch = pytest.importorskip("torch")

from backends.torch_xla_export import named_module  # noqa: E402


def test_hostile_input_names_become_safe_parameters():
    names = ["lambda", "print", "__import__", "x; import os", "a\nb", "'q'", "self", "fn", "d", "d", "torch"]
    got = []

    def fn(*xs):
        got.append(len(xs))
        return sum(xs)

    mod = named_module(fn, names)
    xs = [torch.full((2,), float(i)) for i in range(len(names))]
    assert torch.equal(mod(*xs), sum(xs)) and got == [len(names)]
    import inspect

    params = list(inspect.signature(mod.forward).parameters)
    assert params == ["arg0", "print", "__import__", "arg3", "arg4", "arg5", "arg6", "arg7", "d", "arg9", "torch"]
