"""The OpInfo suite's own checks: samples at two sizes, and verdicts that change when
the path under them breaks (a wrong kernel is a mismatch, an exception of ours a crash,
a lost implementation a refusal or another route)."""

from __future__ import annotations

import pytest
import torch

from conformance.opinfo import paths
from conformance.opinfo.samples import GROWTH, entry_name, family, op_db, samples
from conformance.opinfo.table import entries, rate, totals


@pytest.fixture(scope="module")
def db():
    return {entry_name(o): o for o in op_db()}


def _sample(db, name):
    (s,) = samples(db[name], limit=1)
    return s


@pytest.mark.parametrize("name", ["add", "index_select", "addmv", "nn.functional.conv2d", "cat"])
def test_second_size_doubles_every_dynamic_dim_consistently(db, name):
    s = _sample(db, name)
    assert s.sizes and all(b == GROWTH * a for a, b in s.sizes.values())
    for small, big, dims in zip(*s.leaves, s.dims, strict=True):
        for axis, n in enumerate(small.shape):
            var = dims.get(axis)
            assert big.shape[axis] == (GROWTH * n if var else n)
            assert var is None or s.sizes[var][0] == n
    # eager runs both, to outputs of one structure
    s.call(s.leaves[0]), s.call(s.leaves[1])


def test_index_values_stay_in_range_when_their_tensor_grows(db):
    s = _sample(db, "index_select")
    idx = [t for t in s.leaves[1] if t.dtype == torch.int64]
    src = s.leaves[0][0]
    assert idx and all(int(t.max()) < src.shape[0] for t in idx)


@pytest.mark.parametrize("name", ["sort", "argsort", "kthvalue"])
def test_an_unstable_sorts_doubled_sample_has_no_tie_tiling_made(db, name):
    """torch leaves the order of tied values to its (unstable) sort: a doubled sample whose
    copies were tied could tell two correct implementations apart."""
    s = _sample(db, name)
    small, big = s.leaves[0][0], s.leaves[1][0]
    assert small.unique().numel() == small.numel()  # (OpInfo's own samples have none)
    assert big.unique().numel() == big.numel()


def test_an_op_that_defines_its_ties_keeps_them(db):
    s = _sample(db, "argmax")
    small, big = s.leaves[0][0], s.leaves[1][0]
    assert big.unique().numel() == small.unique().numel()  # (argmax names the first: twins test it)


@pytest.mark.parametrize("name", ["linalg.inv_ex", "lu", "linalg.eigh", "linalg.cholesky"])
def test_a_linalg_doubled_matrix_is_not_singular(db, name):
    """Tiled, ``[[A, A], [A, A]]`` is singular, and a factorization past its rank is rounding
    noise two correct LAPACKs compute differently: the doubled matrix is shifted on its diagonal."""
    s = _sample(db, name)
    small, big = s.leaves[0][0], s.leaves[1][0]
    assert s.sizes and big.ndim >= 2
    tiled = torch.cat([torch.cat([small] * GROWTH, -1)] * GROWTH, -2)
    assert torch.linalg.matrix_rank(tiled).max() < min(big.shape[-2:])
    assert torch.linalg.matrix_rank(big).min() == min(big.shape[-2:])


def test_an_up_to_sign_output_compares_its_defined_part(db):
    """eigh's eigenvectors are defined up to sign: a flipped vector passes, a wrong eigenvalue does not."""
    s = _sample(db, "linalg.eigh")
    w, v = s.call(s.leaves[0])
    got, want = paths.canonical(s, [w, -v], (w, v))
    paths.compare(got, want, 1e-4, 1e-4)
    with pytest.raises(paths.Mismatch, match="output 0"):
        paths.compare(*paths.canonical(s, [w + 1, v], (w, v)), 1e-4, 1e-4)
    assert _sample(db, "linalg.inv").canonical is None  # (a unique result compares whole)


def test_lazy_pass_and_its_route(db):
    s = _sample(db, "sin")
    v = paths.run_lazy(s, "unbounded", family(db["sin"]))
    assert (v.verdict, v.route) == ("pass", "sin")


def test_a_wrong_lazy_kernel_is_a_mismatch(db, monkeypatch):
    from engines.lazy.ops.registry import LOWER

    monkeypatch.setitem(LOWER, "sin", torch.cos)
    v = paths.run_lazy(_sample(db, "sin"), "unbounded", "unary elementwise")
    assert v.verdict == "mismatch" and "output 0" in v.message


def test_an_exception_of_ours_is_a_crash_and_a_refusal_is_named(db, monkeypatch):
    from engines.lazy.ops.registry import LOWER

    def broken(*a, **k):
        raise KeyError("planted")

    monkeypatch.setitem(LOWER, "sin", broken)
    v = paths.run_lazy(_sample(db, "sin"), "unbounded", "unary elementwise")
    assert v.verdict == "crash" and "planted" in v.message


def test_a_wrong_lowering_is_a_stablehlo_mismatch(db, monkeypatch):
    from engines.stablehlo.lowering import lower, registry  # noqa: F401 (lower's import fills the registry)

    sin = torch.ops.aten.sin.default
    cos = registry.LOWERINGS[torch.ops.aten.cos.default]
    monkeypatch.setitem(registry.LOWERINGS, sin, cos)
    vs = paths.run_stablehlo(_sample(db, "sin"), "unary elementwise", ("bounded",))
    assert [v.verdict for v in vs] == ["mismatch"]


def test_a_lost_lowering_is_a_refusal_naming_the_op(db, monkeypatch):
    """sin's lowering gone (aten's and the prims twin a decomposition would reach): refused by name."""
    from engines.stablehlo.lowering import lower, registry  # noqa: F401 (lower's import fills the registry)

    for op in (torch.ops.aten.sin.default, torch.ops.prims.sin.default):
        monkeypatch.delitem(registry.LOWERINGS, op, raising=False)
    (v,) = paths.run_stablehlo(_sample(db, "sin"), "unary elementwise", ("bounded",))
    assert (v.verdict, v.refusal) == ("refused", "LoweringError") and "::sin " in v.message


def test_an_entry_is_its_worst_sample_and_stablehlo_rates_over_what_exports():
    rows = [
        {"entry": "a", "family": "f", "verdict": "pass", "message": ""},
        {"entry": "a", "family": "f", "verdict": "mismatch", "message": ""},
        {"entry": "b", "family": "f", "verdict": "export-refused", "message": ""},
        {"entry": "c", "family": "f", "verdict": "no-sample", "message": ""},
        {"entry": "d", "family": "f", "verdict": "pass", "message": ""},
    ]
    worst = entries(rows)
    assert worst["a"]["verdict"] == "mismatch"
    assert rate(totals(worst), "stablehlo") == (1, 2)
    assert rate(totals(worst), "lazy") == (1, 3)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "--stablehlo-modes", "bounded,fast"], "--stablehlo-modes 'bounded,fast'"),
        (["run", "--paths", "lazy,xla"], "--paths: unknown path 'xla'"),
        (["run", "--limit", "0"], "--limit and --jobs"),
        (["table", "--out", "/nonexistent/opinfo"], "/nonexistent/opinfo/lazy.jsonl: no rows"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_and_exit_2(argv, said, capsys):
    from conformance.opinfo.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and said in err and len(err.splitlines()) == 1
