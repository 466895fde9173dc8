"""The op-sample table on the lazy path (``engines.lazy``): every sample that claims it,
over its sizes (1 and 0 included where it allows), equal to its reference (a NumPy float64
oracle, else torch eager, dtypes too), with its exact compile count; the data-dependent ones
in static and bounded mode too."""

import pytest
import torch

import engines.lazy as L
from conformance.op_samples import BOUNDED_SIZES, BY_NAME, SAMPLES, as_torch, flat

from .runs import assert_reaches_pin, check, lazy_function

LAZY = [s for s in SAMPLES if s.lazy is not None]


def _sweep(s, f):
    for n in s.sizes:
        inputs = s.inputs(n)
        got = f(*[as_torch(a) for a in inputs])
        check(flat(got), s.expected(inputs), s, f"{s.name} n={n}", dtypes=s.reference is None)


@pytest.mark.parametrize("s", LAZY, ids=[s.name for s in LAZY])
def test_lazy_matches_the_reference_with_exact_compiles(s):
    f, reached = lazy_function(s)
    if s.lazy.fails:  # a known failure, its reason in the table: fixed, it fails here
        with pytest.raises(Exception, match=s.lazy.fails):
            _sweep(s, f)
        return
    _sweep(s, f)
    # shapes differ every call; the graph is compiled as often as the sample says
    assert f.ctx.compiles() == s.lazy.compiles, (s.name, f.ctx.compiles(), list(f.guard_log))
    assert_reaches_pin(s.name, "lazy", reached)


DATADEP = [s for s in LAZY if s.lazy.bounded is not None]


@pytest.mark.parametrize("s", DATADEP, ids=[s.name for s in DATADEP])
def test_data_dependent_ops_in_static_and_bounded_mode(s):
    """Static: the count is a constant of the next graph's key (both graphs per shape, none on a
    repeat); bounded: its variable is bounded by the operand's elements, so both graphs once."""
    ndim = len(s.inputs(1)[0].shape)
    static, _ = lazy_function(s, "static")
    bounded, _ = lazy_function(s, "bounded", bounds=[{ax: 16 for ax in range(ndim)}])
    for n in BOUNDED_SIZES:
        inputs = s.inputs(n)
        for f in (static, bounded):
            check(flat(f(*[as_torch(a) for a in inputs])), s.expected(inputs), s, f"{s.name} n={n}", dtypes=True)
    assert (static.ctx.compiles(), bounded.ctx.compiles()) == s.lazy.bounded
    (leaf,) = [v for v in bounded.ctx.vars.vars.values() if v.name == "nnz0"]
    assert leaf.bound == 16**ndim


def test_one_compile_for_catalogue_forms_over_nonzero_sizes():
    for name in ("gnn_edge_divide", "gnn_rbf_subtract", "expand_over_batch", "gnn_message_passing"):
        s = BY_NAME[name]
        f = L.jit(s.program)
        for n in (2, 3, 5, 8):
            f(*[torch.from_numpy(a) for a in s.inputs(n)])
        assert f.ctx.compiles() == 1, name
