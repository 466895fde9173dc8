"""Programs with runtime asserts and explicit guards, in the style of PyTorch's
export tests, generated from a table: ``torch._check`` on sizes, ``assert`` on a
size, ``if n > 4:`` branches (torch.export specialises the branch taken and guards
it), ``torch._check_is_size``, a Dim's ``(min, max)`` range, ``torch._check(n % 2 == 0)``.

Each runs unbounded (shape refinement per size) and bounded (XLA's padder, one
compile): at a size where the guards hold it equals torch eager; at a size where one
fails the run is refused with the guard's message (never a wrong result); a program
the executors cannot serve is refused up front by a one-line error naming the op."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn  # the module wrapper of the op-sample table
from engines.stablehlo import ExecutionError, LoweringError, XlaExecutor, lower
from engines.stablehlo.execution.module import AssertionFailed
from engines.torch_export_tools import ExportSpecialized, export_oblivious_retry


def _check_then(pred, body):
    def prog(x):
        torch._check(pred(x.shape[0]))
        return body(x)

    return prog


def _assert_then(pred, body):
    def prog(x):
        assert pred(x.shape[0])
        return body(x)

    return prog


def _branch(x):
    if x.shape[0] > 4:
        return x[4:] * 2
    return x + 1


def _is_size(x):
    k = x.shape[0] // 2
    torch._check_is_size(k)
    return x[:k].sum(0)


def _int_of_size(x):
    return x[: int(math.ceil(x.shape[0] * 0.5))]  # noqa: RUF046 (int() of a SymInt specialises it)


#: name -> (program, Dim (min, max), sizes where its guards hold, sizes in the range where one
#: fails). The Dim is the range torch.export accepts for the program (its "Suggested fixes":
#: ``torch._check(n > 4)`` under ``Dim(min=2)`` is a constraint violation, refused up front by
#: torch with the fix); the executors do not check a Dim's range at run time (the harness
#: runs sizes below ``min`` on purpose, ``engines.torch_export_tools.export_sample``).
PROGRAMS = {
    "check_gt4": (_check_then(lambda n: n > 4, lambda x: x[4:] * 2), (5, 64), (5, 9, 33), ()),
    "check_even": (_check_then(lambda n: n % 2 == 0, lambda x: x.reshape(x.shape[0] // 2, 2, -1).sum(1)), (2, 64), (6, 20), (7,)),
    "check_ne10": (_check_then(lambda n: n != 10, lambda x: x.cumsum(0)), (2, 64), (5, 11), (10,)),
    "check_le_bound": (_check_then(lambda n: n <= 40, lambda x: x[: x.shape[0] // 3]), (2, 40), (5, 40), ()),
    "assert_gt2": (_assert_then(lambda n: n > 2, lambda x: x[2:].exp()), (3, 64), (3, 17), ()),
    "branch_gt4": (_branch, (5, 64), (5, 30), ()),
    "check_is_size": (_is_size, (2, 64), (2, 9, 40), ()),
    "dim_range": (lambda x: torch.cat([x, x[1:]]).softmax(0), (3, 48), (3, 48), ()),
    "int_of_size": (_int_of_size, (2, 64), (), ()),
}
#: programs whose failing sizes refinement stops at another op before the assertion, and its words
#: (check_even: the reshape's element count, 18 of 21)
BAD = {"check_even": (ExecutionError, r"number of output elements")}
#: programs refused up front, and the refusal's words
REFUSED = {"int_of_size": (ExportSpecialized, r"specialised.*CeilToInt")}


def _export(fn, lo, hi):
    n = Dim("n", min=lo, max=hi)
    sample = torch.randn(20, 3)
    return export_oblivious_retry(
        lambda **o: torch.export.export(Fn(lambda _, x: fn(x)), (sample,), dynamic_shapes={"xs": ({0: n},)}, strict=False, **o)
    )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_guarded_programs_run_as_torch_or_refuse(name):
    fn, (lo, hi), good, bad = PROGRAMS[name]
    if name in REFUSED:
        err, match = REFUSED[name]
        with pytest.raises(err, match=match):
            lower(_export(fn, lo, hi))
        return
    ep = _export(fn, lo, hi)
    for mode in ("unbounded", "bounded"):
        text = lower(ep, bounded=mode == "bounded")
        ex = XlaExecutor()
        for n in good:
            x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
            want = fn(torch.from_numpy(x)).numpy()
            got = ex.run(text, [x])[0]
            assert got.shape == want.shape, f"{name} {mode} n={n}: {got.shape} vs torch {want.shape}"
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} {mode} n={n}")
        for n in bad:
            x = np.zeros((n, 3), np.float32)
            # a false torch.export assertion: the backends report it as outside the export's range
            err, words = BAD.get(name, (AssertionFailed, r"torch\.export runtime assertion"))
            with pytest.raises(err, match=words):
                ex.run(text, [x])
        if mode == "bounded" and good:
            assert ex.compile_count() == 1, (name, ex.compile_count())


def test_lowering_errors_name_the_op():
    """A data-dependent slice size (``x[: t.item()]``) is refused at lowering, naming the op."""

    class M(torch.nn.Module):
        def forward(self, x, t):
            k = t.item()
            torch._check_is_size(k)
            torch._check(k <= x.shape[0])
            return x[:k]

    ep = torch.export.export(M(), (torch.randn(8, 3), torch.tensor(3)), dynamic_shapes=({0: Dim("n", min=2, max=64)}, None))
    with pytest.raises(LoweringError, match=r"aten\.|aten::") as info:
        lower(ep)
    assert str(info.value).splitlines()[0], info.value
