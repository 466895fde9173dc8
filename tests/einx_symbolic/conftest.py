"""Shared helpers for the einx_symbolic differential tests."""

import warnings

import einx
import numpy as np
import pytest

from engines import einx_symbolic as ex

warnings.filterwarnings("ignore", category=DeprecationWarning)


def arr(lib, shape, kind="float", seed=0, ints=(0, 4)):
    """A seeded array of ``lib`` ("torch" | "numpy" | "jax"): float32 normals (``kind`` "float", or
    "float16"), bools, or int64 (``kind`` "int", or "int32") in ``[ints[0], ints[1])``."""
    rng = np.random.default_rng(seed)
    if kind in ("float", "float16"):
        x = rng.standard_normal(shape).astype(np.float32 if kind == "float" else np.float16)
    elif kind == "bool":
        x = rng.standard_normal(shape) > 0
    else:
        x = rng.integers(*ints, shape).astype(np.int32 if kind == "int32" else np.int64)
    if lib == "torch":
        import torch

        return torch.from_numpy(np.ascontiguousarray(x))
    if lib == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


def to_numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def run(fn, *args, **kwargs):
    """('ok', value) or ('err', exception)."""
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as e:
        return "err", e


def compare(op, desc, *args, **kwargs):
    """Run einx and einx_symbolic on copies of ``args``; assert identical outcome."""
    import copy

    a1 = [copy.deepcopy(a) if hasattr(a, "copy") or hasattr(a, "clone") else a for a in args]
    a2 = [copy.deepcopy(a) if hasattr(a, "copy") or hasattr(a, "clone") else a for a in args]
    r1 = run(getattr(einx, op), desc, *a1, **kwargs)
    r2 = run(getattr(ex, op), desc, *a2, **kwargs)
    assert r1[0] == r2[0], f"{op}({desc!r}) einx: {r1} / ours: {r2}"
    if r1[0] == "err":
        assert isinstance(r2[1], einx.errors.EinxError) or type(r2[1]) is type(r1[1]) or isinstance(r1[1], type(r2[1])), (
            f"{op}({desc!r}) einx raised {type(r1[1]).__name__}: {r1[1]}\nours raised {type(r2[1]).__name__}: {r2[1]}"
        )
        return r1, r2
    v1, v2 = r1[1], r2[1]
    if isinstance(v1, tuple):
        assert isinstance(v2, tuple) and len(v1) == len(v2)
    else:
        v1, v2 = (v1,), (v2,)
    for x, y in zip(v1, v2, strict=False):
        assert type(x) is type(y), (op, desc, type(x), type(y))
        assert tuple(x.shape) == tuple(y.shape), (op, desc, x.shape, y.shape)
        assert x.dtype == y.dtype, (op, desc, x.dtype, y.dtype)
        xn, yn = to_numpy(x), to_numpy(y)
        if xn.dtype.kind in "fc":
            np.testing.assert_allclose(xn, yn, rtol=1e-5, atol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(xn, yn)
    return r1, r2


@pytest.fixture
def cmp():
    return compare
