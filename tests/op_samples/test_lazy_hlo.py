"""The op-sample table on lazy -> StableHLO (``engines.lazy.to_stablehlo``): the lazy trace of
each sample that claims it exported, lowered with its sizes symbolic (``?``) and run by XLA at
every size, against the sample's reference, with the exact number of modules lowered."""

import pytest

from conformance.op_samples import SAMPLES, as_torch, flat
from engines import stablehlo as H
from engines.lazy.to_stablehlo import StablehloCompiler

from .runs import assert_reaches_pin, check, lazy_function

LAZY_HLO = [s for s in SAMPLES if s.lazy_hlo is not None]


def _sweep(s, compiler):
    f, _ = lazy_function(s, compiler=compiler)
    # through XLA: at least the XLA tolerance of the OpInfo suite's float32 (the lazy path's own is eager's)
    tol = (max(s.rtol, 1e-4), max(s.atol, 1e-5))
    for n in s.sizes:
        inputs = s.inputs(n)
        got = f(*[as_torch(a) for a in inputs])
        check(flat(got), s.expected(inputs), s, f"{s.name} lazy_hlo n={n}", tol=tol)


@pytest.mark.parametrize("s", LAZY_HLO, ids=[s.name for s in LAZY_HLO])
def test_lazy_stablehlo_matches_the_reference(s):
    compiler = StablehloCompiler("unbounded", s.name)
    with H.reaching() as targets:
        if s.lazy_hlo.fails:
            with pytest.raises(Exception, match=s.lazy_hlo.fails):
                _sweep(s, compiler)
            return
        _sweep(s, compiler)
    assert len(compiler.modules) == s.lazy_hlo.modules, (s.name, len(compiler.modules))
    assert all("?" in m.split("@main", 1)[1].split("{\n", 1)[0] for m in compiler.modules)
    assert_reaches_pin(s.name, "lazy_hlo", targets)
