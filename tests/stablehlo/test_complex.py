"""Complex results (``ops/complex.py``): ``complex``, ``polar``, ``view_as_complex`` and the
casts to complex, torch's values at two sizes, bounded (one XLA compile) and unbounded; and
the OpInfo suite's comparison, which tells a wrong imaginary part from eager's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import XlaExecutor, lower
from engines.stablehlo.lowering.types import parse_tensor_type

X = np.array([0.5, -1.25, 3.0, 0.0, -7.5, 2.0], np.float32)
Y = np.array([1.0, 0.25, -2.0, -0.0, 4.0, -3.5], np.float32)

#: name -> torch fn of (x, y), both [n]
PROGRAMS = {
    "complex": lambda x, y: torch.complex(x, y),
    "polar": lambda x, y: torch.polar(x.abs(), y),
    "view_as_complex": lambda x, y: torch.view_as_complex(torch.stack([x, y], -1)),
    "cfloat": lambda x, y: x.cfloat() * 2 + y,
    "cdouble": lambda x, y: (x + y).cdouble(),
    "real_imag": lambda x, y: (torch.complex(x, y).real + 1, torch.complex(x, y).imag * 2),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_complex_programs_match_torch(name):
    fn = PROGRAMS[name]
    n = Dim("n", min=2, max=64)
    ep = torch.export.export(
        Fn(lambda _, x, y: fn(x, y)), (torch.tensor(X), torch.tensor(Y)), dynamic_shapes={"xs": ({0: n}, {0: n})}
    )
    for bounded in (True, False):
        text = lower(ep, bounded=bounded)
        ex = XlaExecutor()
        for k in (1, 3):
            x, y = np.tile(X, k), np.tile(Y, k)
            got = ex.run(text, [x, y])
            want = fn(torch.from_numpy(x), torch.from_numpy(y))
            for g, w in zip(got, want if isinstance(want, tuple) else (want,), strict=True):
                assert g.dtype == w.numpy().dtype
                np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)
        if bounded:
            assert ex.compile_count() == 1


def test_a_complex_type_parses_with_its_dims():
    """``complex<f32>`` has an ``x`` the dims are split on."""
    assert parse_tensor_type("tensor<?x3xcomplex<f32>, #stablehlo.bounds<64, ?>>") == ((None, 3), "complex<f32>", (64, None))


def test_a_wrong_imaginary_part_is_an_opinfo_mismatch(monkeypatch):
    """The suite compares complex outputs whole: ``complex`` lowered with its parts swapped fails."""
    from conformance.opinfo import paths
    from conformance.opinfo.samples import entry_name, op_db, samples
    from engines.stablehlo.lowering import registry
    from engines.stablehlo.lowering.ops.complex import make_complex

    (op,) = [o for o in op_db() if entry_name(o) == "complex"]
    s = next(iter(samples(op, limit=2)))
    assert [v.verdict for v in paths.run_stablehlo(s, "other", ("bounded",))] == ["pass"]

    def swapped(ctx, node, re, im):
        shape = ctx.out_shape(node)
        return make_complex(ctx, ctx.tensor(im, "f32", shape), ctx.tensor(re, "f32", shape), ctx.out_dtype(node))

    monkeypatch.setitem(registry.LOWERINGS, torch.ops.aten.complex.default, swapped)
    (v,) = paths.run_stablehlo(s, "other", ("bounded",))
    assert v.verdict == "mismatch", v
