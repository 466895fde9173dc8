"""torch.export helpers the engines share with the adapters: the sample to
export from, and the size-oblivious retry after a constraint violation."""

from __future__ import annotations


def export_sample(args, spec):
    """The arguments to export from: ``args`` (torch tensors) unless a dynamic dim is
    below the least size its Dim allows, then zeros of the same dtypes with every
    such size raised to that least size (within its bound).

    ``spec``: per argument ``{axis: (name, least, bound or None)}``, axes with one
    name sharing one size. torch.export specialises sizes 0 and 1 (and refuses a
    sample outside the Dim's range), so a sweep whose first shape has ``E = 0`` or
    ``B = 1`` would otherwise fix that size; the calls still run the real shapes.
    (torch.export traces fake tensors: the sample's values do not matter.)"""
    import torch

    size: dict = {}
    for a, axes in zip(args, spec, strict=False):
        for axis, (name, least, bound) in (axes or {}).items():
            n = max(int(a.shape[axis]), least)
            size[name] = n if bound is None else min(n, bound)
    if all(
        a.shape[axis] == size[name] for a, axes in zip(args, spec, strict=False) for axis, (name, _, _) in (axes or {}).items()
    ):
        return list(args)
    return [
        torch.zeros([size[axes[i][0]] if axes and i in axes else n for i, n in enumerate(a.shape)], dtype=a.dtype)
        for a, axes in zip(args, spec, strict=False)
    ]


def export_oblivious_retry(run):
    """``run(**options)`` (a torch.export call taking ``torch.export.export``'s
    keyword options); on a constraint violation, once more size-obliviously and
    with guards deferred to runtime asserts.

    torch.export guards a size computed from a Dim against 0 and 1 (``x[:, : t // 2]``
    guards ``t // 2 != 1``, which a Dim from 2 violates); ``backed_size_oblivious``
    drops those guards, and the lowered program computes the same values for
    every size. Guards it still cannot prove over the Dim's range
    (``split_with_sizes(x, [t // 2, t - t // 2])`` guards ``t - t // 2 >= 0``)
    become ``_assert_scalar`` nodes in the graph
    (``prefer_deferred_runtime_asserts_over_guards``), which the lowering checks at
    run time, instead of a refusal. A second violation raises. The retried program
    has ``size_oblivious = True`` (its decomposition must be size-oblivious too)."""
    import torch
    import torch.fx.experimental._config as fx_config

    try:
        return run()
    except torch._dynamo.exc.UserError:
        with fx_config.patch(backed_size_oblivious=True):
            ep = run(prefer_deferred_runtime_asserts_over_guards=True)
        ep.size_oblivious = True  # engines.stablehlo.lowering.lower decomposes it the same way
        return ep
