"""The linalg families (``ops/lu.py``, ``ops/cholesky.py``, ``ops/qr.py``, ``ops/spectral.py``
on ``ops/lapack.py``): torch's values at two sizes of the matrix dims, bounded (one XLA
compile: the LAPACK kernels run static at the bound on a padded matrix) and unbounded
(`?` dims, the kernels' result shapes as operands)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

from conformance.op_samples import Fn
from engines.stablehlo import LoweringError, XlaExecutor, lower

SIZES = (4, 7)  # the live sizes each program runs at; bounds are 16


def _general(n, gen, cols=None):
    """A well-conditioned ``n x cols`` matrix (square by default), pivoting included (rows shuffled)."""
    cols = n if cols is None else cols
    a = torch.randn(n, cols, generator=gen) + 3 * torch.eye(n, cols)
    return a[torch.randperm(n, generator=gen)]


def _spd(n, gen):
    a = torch.randn(n, n, generator=gen)
    return a @ a.mT + n * torch.eye(n)


def _sym(n, gen):
    a = torch.randn(n, n, generator=gen)
    return a + a.mT + torch.diag(torch.arange(n, dtype=torch.float32))  # eigenvalues apart


def _chol(n, gen):
    return torch.linalg.cholesky(_spd(n, gen))


def _reflectors(n, gen):
    return list(torch.geqrf(_general(n, gen)))


#: name -> (fn of the inputs, inputs at live size n, the dynamic dims of each input)
CASES = {
    "lu_factor_ex": (torch.linalg.lu_factor_ex, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "lu_factor_ex_wide": (torch.linalg.lu_factor_ex, lambda n, g: [_general(n, g, 9)], [{0: "n"}]),
    "lu_tall": (torch.linalg.lu, lambda n, g: [_general(n, g, 9).mT.contiguous()], [{1: "n"}]),
    "lu_unpack": (
        lambda a, p: torch.lu_unpack(a, p),
        lambda n, g: list(torch.linalg.lu_factor(_general(n, g))),
        [{0: "n", 1: "n"}, {0: "n"}],
    ),
    "lu_solve": (
        lambda a, p, b: torch.linalg.lu_solve(a, p, b),
        lambda n, g: [*torch.linalg.lu_factor(_general(n, g)), torch.randn(n, 2, generator=g)],
        [{0: "n", 1: "n"}, {0: "n"}, {0: "n"}],
    ),
    "lu_solve_adjoint_right": (
        lambda a, p, b: torch.linalg.lu_solve(a, p, b, left=False, adjoint=True),
        lambda n, g: [*torch.linalg.lu_factor(_general(n, g)), torch.randn(2, n, generator=g)],
        [{0: "n", 1: "n"}, {0: "n"}, {1: "n"}],
    ),
    "det": (torch.linalg.det, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "slogdet_batched": (torch.linalg.slogdet, lambda n, g: [torch.stack([_general(n, g), -_general(n, g)])], [{1: "n", 2: "n"}]),
    "inv_ex": (torch.linalg.inv_ex, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "solve_ex_vector": (
        torch.linalg.solve_ex,
        lambda n, g: [_general(n, g), torch.randn(n, generator=g)],
        [{0: "n", 1: "n"}, {0: "n"}],
    ),
    "solve_ex_right": (
        lambda a, b: torch.linalg.solve_ex(a, b, left=False),
        lambda n, g: [_general(n, g), torch.randn(3, n, generator=g)],
        [{0: "n", 1: "n"}, {1: "n"}],
    ),
    "cholesky_ex": (torch.linalg.cholesky_ex, lambda n, g: [_spd(n, g)], [{0: "n", 1: "n"}]),
    "cholesky_upper": (lambda a: torch.cholesky(a, upper=True), lambda n, g: [_spd(n, g)], [{0: "n", 1: "n"}]),
    "cholesky_solve": (
        torch.cholesky_solve,
        lambda n, g: [torch.randn(n, 2, generator=g), _chol(n, g)],
        [{0: "n"}, {0: "n", 1: "n"}],
    ),
    "cholesky_inverse_upper": (
        lambda u: torch.cholesky_inverse(u, upper=True),
        lambda n, g: [_chol(n, g).mT.contiguous()],
        [{0: "n", 1: "n"}],
    ),
    "solve_triangular_right_unit": (
        lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        lambda n, g: [_chol(n, g), torch.randn(2, n, generator=g)],
        [{0: "n", 1: "n"}, {1: "n"}],
    ),
    "triangular_solve_transpose": (
        lambda b, a: torch.triangular_solve(b, a, upper=True, transpose=True),
        lambda n, g: [torch.randn(n, 3, generator=g), _chol(n, g).mT.contiguous()],
        [{0: "n"}, {0: "n", 1: "n"}],
    ),
    "qr": (torch.linalg.qr, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "qr_complete_tall": (
        lambda a: torch.linalg.qr(a, mode="complete"),
        lambda n, g: [_general(n, g, 9).mT.contiguous()],
        [{1: "n"}],
    ),
    "qr_r_wide": (lambda a: torch.linalg.qr(a, mode="r")[1], lambda n, g: [_general(n, g, 9)], [{0: "n"}]),
    "householder_product": (torch.linalg.householder_product, _reflectors, [{0: "n", 1: "n"}, {0: "n"}]),
    "ormqr_right_transposed": (
        lambda a, t, c: torch.ormqr(a, t, c, left=False, transpose=True),
        lambda n, g: [*_reflectors(n, g), torch.randn(2, n, generator=g)],
        [{0: "n", 1: "n"}, {0: "n"}, {1: "n"}],
    ),
    "svd": (lambda a: torch.linalg.svd(a, full_matrices=False), lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "svdvals_tall": (torch.linalg.svdvals, lambda n, g: [_general(n, g, 9).mT.contiguous()], [{1: "n"}]),
    "nuclear_norm": (lambda a: torch.linalg.matrix_norm(a, "nuc"), lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "eigvalsh_upper": (lambda a: torch.linalg.eigvalsh(a, UPLO="U"), lambda n, g: [_sym(n, g)], [{0: "n", 1: "n"}]),
    "eigh_values_and_subspace": (
        lambda a: (lambda w, v: (w, v.abs()))(*torch.linalg.eigh(a)),  # vectors up to sign
        lambda n, g: [_sym(n, g)],
        [{0: "n", 1: "n"}],
    ),
    "pinv": (torch.linalg.pinv, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
    "pinv_hermitian_rank_deficient": (
        lambda a: torch.linalg.pinv(a, hermitian=True),
        lambda n, g: [torch.diag(torch.cat([torch.arange(1.0, n), torch.zeros(1)]))],
        [{0: "n", 1: "n"}],
    ),
    "matrix_rank": (
        torch.linalg.matrix_rank,
        lambda n, g: [torch.cat([_general(n, g)[:-1], torch.zeros(1, n)])],
        [{0: "n", 1: "n"}],
    ),
    "cond": (torch.linalg.cond, lambda n, g: [_general(n, g)], [{0: "n", 1: "n"}]),
}


def _run(name, bounded):
    fn, make, dyn = CASES[name]
    n = Dim("n", min=2, max=16)
    gen = torch.Generator().manual_seed(0)
    ep = torch.export.export(
        Fn(lambda _, *xs: fn(*xs)),
        tuple(make(SIZES[0], gen)),
        dynamic_shapes={"xs": tuple({a: n for a in d} for d in dyn)},
    )
    text = lower(ep, bounded=bounded)
    ex = XlaExecutor()
    for size in SIZES:
        args = make(size, torch.Generator().manual_seed(size))
        got = ex.run(text, [a.numpy() for a in args])
        want = fn(*args)
        want = [w for w in (want if isinstance(want, tuple) else (want,))]
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.shape == tuple(w.shape), f"{name} output {i}"
            np.testing.assert_allclose(
                g, w.numpy(), rtol=1e-4, atol=1e-4, err_msg=f"{name} output {i} n={size} bounded={bounded}"
            )
    return text, ex


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_torch_bounded_in_one_compile(name):
    text, ex = _run(name, bounded=True)
    assert "#stablehlo.bounds" in text
    assert ex.compile_count() == 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_torch_unbounded(name):
    text, _ = _run(name, bounded=False)
    assert "indices_of_shape_operands" in text or "lapack" not in text  # `?` kernels take their result shapes


def test_a_bounded_kernel_runs_static_at_the_bound():
    """XLA's dynamic padder refuses a custom call with a dynamic dim: the kernel's operand is
    the padded matrix, static at the bound."""
    text, _ = _run("lu_factor_ex", bounded=True)
    (call,) = [line for line in text.splitlines() if "lapack_sgetrf_ffi" in line]
    assert "tensor<16x16xf32>" in call and "?" not in call.split("->")[0]


def test_a_full_svd_of_a_non_square_matrix_at_its_bound_is_refused_by_name():
    n = Dim("n", min=2, max=16)
    ep = torch.export.export(Fn(lambda _, a: torch.linalg.svd(a)), (torch.randn(4, 7),), dynamic_shapes={"xs": ({0: n},)})
    with pytest.raises(LoweringError, match="full_matrices SVD of a non-square matrix"):
        lower(ep, bounded=True)
    lower(ep, bounded=False)  # `?` dims: no padding, the kernel's own full SVD


def test_an_empty_matrix_svd_is_torchs_identities():
    n = Dim("n", min=2, max=16)
    ep = torch.export.export(Fn(lambda _, a: torch.linalg.svd(a)), (torch.randn(0, 4),), dynamic_shapes={"xs": ({1: n},)})
    for bounded in (True, False):
        u, s, vh = XlaExecutor().run(lower(ep, bounded=bounded), [np.zeros((0, 5), np.float32)])
        assert u.shape == (0, 0) and s.shape == (0,)
        np.testing.assert_array_equal(vh, np.eye(5, dtype=np.float32))


def test_the_interpreter_refuses_a_lapack_kernel_by_name_before_running():
    """jaxlib's reference interpreter has no LAPACK kernel (it would abort the worker)."""
    from engines.stablehlo import InterpreterLimitation, execute

    text, _ = _run("det", bounded=False)
    with pytest.raises(InterpreterLimitation, match="lapack_sgetrf_ffi: a kernel of XLA's CPU runtime"):
        execute(text, [np.eye(4, dtype=np.float32)], executor="interpreter")


def test_a_vector_norm_of_a_symbolic_order_is_the_p_norm_at_run_time():
    """OpInfo's ``size_args`` sample reads ``ord`` from a size: ``ord`` is a SymInt."""
    half = Dim("half", min=1, max=8)  # (torch guards the parity of ord: an even one here)
    ep = torch.export.export(
        Fn(lambda _, x, z: torch.linalg.vector_norm(x, ord=z.shape[0])),
        (torch.randn(5), torch.zeros(4)),
        dynamic_shapes={"xs": (None, {0: 2 * half})},
    )
    x = np.linspace(-2, 3, 5, dtype=np.float32)
    for bounded in (True, False):
        text, ex = lower(ep, bounded=bounded), XlaExecutor()
        for p in (4, 8):
            (got,) = ex.run(text, [x, np.zeros(p, np.float32)])
            np.testing.assert_allclose(got, torch.linalg.vector_norm(torch.from_numpy(x), ord=p).numpy(), rtol=1e-5)


def test_a_float_constant_in_exponent_form_parses():
    """``repr(1e-15)`` has no dot, which MLIR's float literal needs (torch.pinverse's rcond)."""
    n = Dim("n", min=2, max=16)
    x = torch.ones(3, dtype=torch.float64)  # (an f32 constant's repr has digits after a dot)
    ep = torch.export.export(Fn(lambda _, x: x * 1e-15 + 2e20), (x,), dynamic_shapes={"xs": ({0: n},)})
    (got,) = XlaExecutor().run(lower(ep), [np.full(4, 3e15)])
    np.testing.assert_allclose(got, np.full(4, 3.0 + 2e20), rtol=1e-12)
