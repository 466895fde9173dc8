"""Samples with what real exported programs use beyond the per-op ones (once the first half of
``tests/stablehlo/cases_breadth.py``): SymInt/SymBool/SymFloat arithmetic, runtime
assertions, scalar inputs, sorting, scatter and indexing forms; :mod:`.programs_nn` has the rest.

Inputs scale with ``n`` (n = 0 where the program allows it). The reference is torch eager on
the same inputs (these ops' semantics are torch's: tie order, index conventions, resampling rules).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .sample import SCALAR, Fn, Lazy, LazyHlo, Lowered, Sample

#: the lazy path on these samples, with their dims: compiles over the sweep (``scalar_inputs``:
#: its Python ints are constants of the graph, one per size; ``index_put_mask_one_value`` and
#: ``upsample``: a size-0/1 guard flips once), and the failures it has today, each with its reason
#: (``slice_scatter`` passes with 2 compiles, left out for its time: ~60 s on the shared machine)
LAZY: dict[str, Lazy] = {
    **dict.fromkeys(
        ["pad_sequence", "cumsum_dynamic", "sort_topk", "index_put_multi", "advanced_indexing", "scatter_reduce"]
        + ["group_norm_dynamic_c", "pools", "pools_ceil_mode", "core_aten_more", "pad_to_multiple"],
        Lazy(every_axis=False),
    ),
    "scalar_inputs": Lazy(compiles=4, every_axis=False),
    "index_put_mask_one_value": Lazy(compiles=2, every_axis=False),
    "upsample": Lazy(compiles=2, every_axis=False),
    # a size comparison (SymBool) as torch.full's fill value
    "symint_math": Lazy(every_axis=False, fails=r"argument 'fill_value' \(position 2\) must be Number, not SymBool"),
    # torch._check of a symbolic condition
    "runtime_asserts": Lazy(every_axis=False, fails=r"cond must be a bool, but got .*SymBool"),
    # refused by name: training-mode batch_norm updates its running stats in place
    "batch_statistics_norms": Lazy(every_axis=False, fails=r"batch_norm in training mode"),
    "conv_transpose": Lazy(every_axis=False),
    # torch.cond's predicate must be a bool or a tensor, not a symbolic size comparison
    "cond_size": Lazy(every_axis=False, fails=r"Expected pred to be bool or tensor, but got SymBool"),
    # cond, map and scan trace their branches through dynamo, which asks a lazy tensor for its storage
    **dict.fromkeys(["cond_data", "map", "scan"], Lazy(every_axis=False, fails=r"untyped_storage returns a UntypedStorage")),
}
#: the lazy trace lowered to StableHLO on these samples: a failure it has today, with its reason
LAZY_HLO: dict[str, LazyHlo] = {
    # a sweep starting at a 0-row operand: XLA's shape refinement rejects the module
    "pad_sequence": LazyHlo(fails=r"shape refinement failed for argument shapes \(0, 2\)"),
}
f32 = np.float32


def program(
    name, module, make, dyn, expect=(), sizes=(1, 2, 5, 40), export_n=5, oblivious=False, export_kw=None, rtol=1e-4, atol=1e-5
):
    """One sample checked against eager on both executors."""
    return Sample(
        name,
        module,
        make,
        tuple(dyn),
        None,
        tuple(sizes),
        rtol,
        atol,
        lazy=LAZY.get(name),
        lowered=Lowered(tuple(expect), export_n, oblivious, dict(export_kw or {})),
        lazy_hlo=LAZY_HLO.get(name),
        origin="breadth",
    )


def _masked_put(s, x):
    y = x.clone()
    y[x > 0.5] = 0.0
    return y, torch.index_put(x, (x < 0,), torch.tensor(2.0), accumulate=True)


def r(g, *shape):
    return g.standard_normal(shape).astype(f32)


def distinct(g, *shape):
    """Distinct values (no ties: sort/topk/max-pool indices are then unambiguous)."""
    n = int(np.prod(shape))
    return g.permutation(max(n, 1))[:n].reshape(shape).astype(f32) / 7.0 - 1.0


DEFERRED = {"prefer_deferred_runtime_asserts_over_guards": True}


def _symint_math(s, x):
    k = x.shape[0]
    kf = torch.sym_float(k)
    return (
        x * (k**2) + (k >> 1) + (k << 2) + torch.sym_max(k, 5) - torch.sym_min(k, 3),
        x * (kf / 3.0) + torch.sym_sqrt(k) + math.floor(k / 3) + math.ceil(k / 4) + round(k / 4),
        torch.full((2,), k > 3),
        torch.full((2,), k != 4),
    )


def _asserted(s, x):
    k = x.shape[0]
    torch._check(k % 2 == 0)
    torch._check(k != 10)
    return x.view(k // 2, 2, x.shape[1]) * 2.0


def _slice_assign(s, x, v):
    y = torch.slice_scatter(x, v, 0, 1, 1 + v.shape[0])
    y[::2, 0] = -1.0  # in-place slice assignments -> slice_scatter
    y[-2:] = y[-2:] * 0.5
    return y


def _pad_sequence(s, a, b):
    return torch.nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0)


def _advanced(s, x, i, j):
    y = x.clone()
    y[i, :, j] = 5.0  # index tensors around a slice: the indexed dims go first
    z = x.clone()
    z[:, 1, j] += 1.0  # a leading slice, then adjacent index dims
    return x[i, :, j], x[i, 1], x[:, 2, j], x[i, j % 3], y, z


def build() -> list[Sample]:
    P: list[Sample] = []
    add = P.append
    n0 = ("n", 0, None)
    n1 = ("n", 1, None)

    add(
        program(
            "symint_math",
            Fn(_symint_math),
            lambda n, g: [r(g, n, 3)],
            ({0: n1},),
            # (no shift ops: `k << 2` / `k >> 1` lower as 4*k and k // 2, which shape refinement folds)
            expect=[
                "tensor<?x3xf32>",
                "stablehlo.power",
                "stablehlo.minimum",  # round(k / 4) in the size algebra: its tie test (engines.sizes.rational)
                "stablehlo.sqrt",
                "stablehlo.compare GT",
                "tensor<f64>",
            ],
            sizes=(1, 2, 4, 9, 40),
        )
    )
    add(
        program(
            "runtime_asserts",
            Fn(_asserted),
            lambda n, g: [r(g, 2 * n, 3)],
            ({0: n1},),
            expect=["stablehlo.custom_call @shape_assertion", "Ne(s"],
            sizes=(2, 4, 20),
            export_n=3,
            export_kw=DEFERRED,
        )
    )
    add(
        program(
            "scalar_inputs",
            Fn(lambda s, x, k, f: (x * k + f, (x * 0 + k * 2 - 1) // 3, x * (k > 4))),
            lambda n, g: [r(g, n + 3), n + 1, 2.5],
            ({0: n0}, SCALAR, None),
            expect=["tensor<i64>", "tensor<f64>", "tensor<?xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=2,
            oblivious=True,
        )
    )
    add(
        program(
            "slice_scatter",
            Fn(_slice_assign),
            lambda n, g: [r(g, n + 3, 3), r(g, n, 3)],
            ({0: ("n", 3, None)}, {0: ("m", 0, None)}),
            expect=["stablehlo.dynamic_update_slice", "stablehlo.scatter", "tensor<?x3xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=2,
            oblivious=True,
        )
    )
    add(
        program(
            "pad_sequence",
            Fn(_pad_sequence),
            lambda n, g: [r(g, n, 2), r(g, 2 * n + 1, 2)],
            ({0: ("a", 0, None)}, {0: ("b", 1, None)}),
            expect=["stablehlo.dynamic_pad", "tensor<2x?x2xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        program(
            "cumsum_dynamic",
            Fn(lambda s, x, i: (torch.cumsum(x, 0), torch.cumsum(i, 0), torch.cumsum(x, 1))),
            lambda n, g: [r(g, n, 3), g.integers(-9, 9, (n,)).astype(np.int64)],
            ({0: n0}, {0: n0}),
            expect=["stablehlo.gather", "tensor<?x3xf32>", "tensor<?xi64>"],
            sizes=(0, 1, 2, 5, 100),
            oblivious=True,
            atol=1e-4,
        )
    )
    add(
        program(
            "sort_topk",
            Fn(
                lambda s, x: (
                    *torch.sort(x, 0),
                    torch.argsort(x, 1, descending=True),
                    *torch.topk(x, 2, dim=1),
                    *torch.topk(x, 1, dim=0, largest=False),
                )
            ),
            lambda n, g: [distinct(g, n, 4)],
            ({0: n1},),
            expect=["stablehlo.sort", "tensor<?x2xf32>", "tensor<?x4xi64>", "tensor<1x4xi64>"],
        )
    )
    add(
        program(
            "index_put_mask_one_value",  # x[mask] = v, v one value: a select (ChebConv's w[w == inf] = 0)
            Fn(_masked_put),
            lambda n, g: [r(g, n + 1, 3)],
            ({0: ("N", 1, None)},),
            expect=["stablehlo.select", "tensor<?x3xf32>"],
        )
    )
    add(
        program(
            "index_put_multi",
            Fn(
                lambda s, x, i, j, v: (torch.index_put(x, (i, j), v, accumulate=True), torch.index_put(x, (i,), v[:, None] * 2.0))
            ),
            lambda n, g: [
                r(g, n + 2, 4),
                g.integers(0, n + 2, (2 * n,)).astype(np.int64),
                g.integers(0, 4, (2 * n,)).astype(np.int64),
                r(g, 2 * n),
            ],
            ({0: ("N", 1, None)}, {0: ("E", 0, None)}, {0: ("E", 0, None)}, {0: ("E", 0, None)}),
            expect=["stablehlo.scatter", "tensor<?x4xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        program(
            "advanced_indexing",
            Fn(_advanced),
            lambda n, g: [
                r(g, n + 2, 3, 4),
                g.integers(0, n + 2, (2 * n,)).astype(np.int64),
                g.integers(0, 4, (2 * n,)).astype(np.int64),
            ],
            ({0: ("N", 2, None)}, {0: ("E", 0, None)}, {0: ("E", 0, None)}),
            expect=["stablehlo.gather", "stablehlo.scatter", "tensor<?x3xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    add(
        program(
            "scatter_reduce",
            Fn(
                lambda s, x, i, v: tuple(
                    x.scatter_reduce(0, i[:, None].expand(-1, 4), v, red, include_self=inc)
                    for red in ("sum", "prod", "amax", "amin", "mean")
                    for inc in (True, False)
                )
            ),
            lambda n, g: [r(g, n + 2, 4), g.integers(0, n + 2, (2 * n,)).astype(np.int64), r(g, 2 * n, 4)],
            ({0: ("N", 2, None)}, {0: ("E", 0, None)}, {0: ("E", 0, None)}),
            expect=["stablehlo.scatter", "tensor<?x4xf32>"],
            sizes=(0, 1, 3, 40),
            export_n=3,
            oblivious=True,
        )
    )
    return P
