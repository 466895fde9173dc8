"""The two reference paths, run on one :class:`~.samples.DynSample` each.

lazy       ``engines.lazy`` (modes unbounded, bounded): one ``LazyFunction`` over the
           sample's leaves with their dynamic axes as named size variables, called at
           both sizes; passes when both equal eager and it compiled once.
make_fx    torch's own symbolic tracer, for comparison (``make_fx(tracing_mode="symbolic")``,
           the mode of torch's ``test_make_fx_symbolic_exhaustive``): the graph traced at
           the first size, run at both; any exception is its failure, none of ours.
stablehlo  torch.export with the same dims (``Dim`` per variable, from 2; bounded at
           twice the larger size) -> ``engines.stablehlo.lower`` -> XLA: ``bounded``
           (one compile serving both sizes), ``unbounded`` (``?`` dims, refined per
           shape) and optionally the reference ``interpreter`` (isolated).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import torch
from torch.utils import _pytree as pytree

# (Mismatch: one class for both oracles, value equality here and the distribution oracle's)
from .distribution import Mismatch, is_random, judge, judge_pooled, reference
from .samples import UNINITIALISED, DynSample, run_eager
from .verdicts import Verdict, first_line

LAZY_MODES = ("unbounded", "bounded")
STABLEHLO_MODES = ("bounded", "unbounded")  # + "interpreter" when asked


def compares_values(s: DynSample) -> bool:
    """Whether ``s``'s outputs are compared by value (not for uninitialised memory)."""
    return s.entry.split(".")[0] not in UNINITIALISED


def _flat(out) -> list:
    return pytree.tree_flatten(out)[0]


def canonical(s: DynSample, got, want):
    """(got, want) as compared: for a :data:`~.samples.UP_TO_SIGN` entry, the part of each that
    its sample defines (``got``, flat or not, in eager's structure first)."""
    if s.canonical is None:
        return got, want
    got = pytree.tree_unflatten(_flat(got), pytree.tree_flatten(want)[1])
    return s.canonical(got), s.canonical(want)


def compare(got, want, rtol: float, atol: float, values: bool = True) -> None:
    """Raise :class:`Mismatch` naming the output that differs (shape, dtype, values unless not
    ``values``; NaN equal to NaN, infinities with their sign)."""
    g, w = _flat(got), _flat(want)
    if len(g) != len(w):
        raise Mismatch(f"{len(g)} outputs, eager gives {len(w)}")
    for i, (a, b) in enumerate(zip(g, w, strict=True)):
        if isinstance(b, torch.Tensor):
            a = torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
            if tuple(a.shape) != tuple(b.shape):
                raise Mismatch(f"output {i}: shape {tuple(a.shape)}, eager {tuple(b.shape)}")
            if a.dtype != b.dtype:
                raise Mismatch(f"output {i}: dtype {a.dtype}, eager {b.dtype}")
            if not values:
                continue
            try:
                torch.testing.assert_close(a, b, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                raise Mismatch(f"output {i}: " + " ".join(str(e).split("\n")[:3])) from None
        elif a != b and not (isinstance(b, float) and np.isnan(b) and np.isnan(a)):
            raise Mismatch(f"output {i}: {a!r}, eager {b!r}")


def _torch(a) -> torch.Tensor:
    """A NumPy result as a tensor; bfloat16 (ml_dtypes, which torch.from_numpy rejects)
    through float32, exactly."""
    a = np.array(a)  # (a copy: XLA's results are read-only)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a)


def tolerance(dtype: torch.dtype, path: str) -> tuple[float, float]:
    if dtype.is_floating_point:
        return (1.3e-6, 1e-5) if path == "lazy" else (1e-4, 1e-4)
    return (0.0, 0.0)


# ---------------------------------------------------------------------------
# lazy
# ---------------------------------------------------------------------------
def run_lazy(s: DynSample, mode: str, family: str) -> Verdict:
    import engines.lazy as L

    v = Verdict(s.entry, family, f"lazy:{mode}", "pass", sample=s.describe())
    bounds = [{a: s.sizes[n][1] for a, n in d.items()} for d in s.dims] if mode == "bounded" else None
    f = L.LazyFunction(lambda *xs: s.call(list(xs)), mode=mode, dims=s.dims, bounds=bounds)
    rtol, atol = tolerance(s.leaves[0][0].dtype, "lazy")
    values = compares_values(s)
    compiles = []  # after each size
    try:
        for leaves in s.leaves:
            want = run_eager(s.call, leaves)
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = f(*[t.clone() for t in leaves])
            compiles.append(f.ctx.compiles())
            compare(*canonical(s, got, want), rtol, atol, values)
    except Mismatch as e:
        v.verdict, v.message = "mismatch", str(e)
        return v
    except L.UntraceableOp as e:
        v.verdict, v.refusal, v.message = "refused", refusal_class(e), first_line(e)
        return v
    except Exception as e:  # not a named refusal: a defect of ours
        v.verdict, v.message = "crash", first_line(e)
        return v
    # compiled once: nothing new at the second size (a step with no graph to run compiles nothing; one
    # split by a data-dependent size compiles each part once)
    if compiles[-1] != compiles[0]:
        v.verdict, v.message = "recompiled", f"{f.ctx.compiles()} compiles for 2 sizes; guards: {list(f.guard_log)[:3]}"
    else:
        v.route = lazy_route(f, s.leaves[0])
    return v


def lazy_route(f, leaves) -> str:
    """The IR ops of ``f``'s graph on ``leaves``, sorted: the implementations that served it."""
    graph, _ = f.trace(*[t.clone() for t in leaves])
    f.ctx.release()
    # (without the counter a generic rule's key gets when another function has its name:
    # which one the process met first is not the entry's business)
    return ",".join(sorted({re.sub(r"#\d+", "", n.op) for n in graph.nodes if not n.is_leaf}))


def run_make_fx(s: DynSample, family: str) -> Verdict:
    from torch.fx.experimental.proxy_tensor import make_fx

    v = Verdict(s.entry, family, "make_fx", "pass", sample=s.describe())
    rtol, atol = tolerance(s.leaves[0][0].dtype, "lazy")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            gm = make_fx(lambda *xs: s.call(list(xs)), tracing_mode="symbolic")(*[t.clone() for t in s.leaves[0]])
            for leaves in s.leaves:
                want = run_eager(s.call, leaves)
                torch.manual_seed(0)
                compare(*canonical(s, gm(*[t.clone() for t in leaves]), want), rtol, atol, compares_values(s))
    except Mismatch as e:
        v.verdict, v.message = "mismatch", str(e)
    except Exception as e:
        v.verdict, v.refusal, v.message = "refused", type(e).__name__, first_line(e)
    return v


def refusal_class(e: BaseException) -> str:
    """The named class of a refusal: the exception's ``kind`` where it states one, else its type."""
    return getattr(e, "kind", None) or type(e).__name__


# ---------------------------------------------------------------------------
# torch.export -> StableHLO -> XLA
# ---------------------------------------------------------------------------
class _Module(torch.nn.Module):
    def __init__(self, s: DynSample):
        super().__init__()
        self.s = s

    def forward(self, *xs):
        return self.s.call(list(xs))


def export(s: DynSample):
    """torch.export of the sample with its dims (bounded at twice the larger size)."""

    from engines.torch_export_tools import EXPORT_MIN, export_dim, export_oblivious_retry

    made = {v: export_dim(v, EXPORT_MIN, 2 * b) for v, (_, b) in s.sizes.items()}
    shapes = {"xs": tuple({a: made[n] for a, n in d.items()} or None for d in s.dims)}
    mod = _Module(s)
    args = tuple(s.leaves[0])

    def run(**kw):
        return torch.export.export(mod, args, dynamic_shapes=shapes, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return export_oblivious_retry(run)


def run_stablehlo(s: DynSample, family: str, modes=STABLEHLO_MODES) -> list[Verdict]:
    from engines import stablehlo as H
    from engines.stablehlo.execution.xla import DataDependentSize
    from engines.torch_export_tools import ExportSpecialized

    refusals = (H.LoweringError, H.PadderUnsupported, H.InterpreterLimitation, DataDependentSize)

    def verdict(mode, **kw):
        return Verdict(s.entry, family, f"stablehlo:{mode}", sample=s.describe(), **kw)

    try:
        ep = export(s)
    except ExportSpecialized as e:
        return [verdict(m, verdict="export-refused", refusal="specialised", message=first_line(e)) for m in modes]
    except Exception as e:  # torch.export's own refusal: the path is not reached
        return [verdict(m, verdict="export-refused", refusal=type(e).__name__, message=first_line(e)) for m in modes]
    rtol, atol = tolerance(s.leaves[0][0].dtype, "stablehlo")
    texts: dict = {}
    targets: dict = {}  # the registry targets each lowering reached
    out = []
    for mode in modes:
        v = verdict(mode, verdict="pass")
        out.append(v)
        bounded = mode == "bounded"
        try:
            if bounded not in texts:
                with warnings.catch_warnings(), H.reaching() as reached:
                    warnings.simplefilter("ignore")
                    texts[bounded] = H.lower(ep, bounded=bounded)
                targets[bounded] = ",".join(sorted(reached))
            text = texts[bounded]
            v.targets = targets[bounded]
            # a random entry whose module draws its own numbers: judged in distribution, never by value
            drawn = is_random(s.entry) and "stablehlo.rng_bit_generator" in text
            before = H.compile_count()
            drawn_calls = []
            for leaves in s.leaves:
                want = run_eager(s.call, leaves)
                arrays = [t.numpy() for t in leaves]
                got = H.execute(text, arrays, executor="interpreter" if mode == "interpreter" else "xla")
                got, want = canonical(s, [_torch(g) for g in got], want)
                if drawn:
                    ref = reference(s.fn, s.call, leaves, sum(t.numel() for t in _flat(want)))
                    judge(got, _flat(want), ref)
                    drawn_calls.append((got, ref))
                else:
                    compare(got, _flat(want), rtol, atol, compares_values(s))
            if drawn:
                judge_pooled(drawn_calls)
                v.route = "distribution"
            # 0 compiles: an earlier sample lowered to the same text, its executable served both sizes
            if bounded and H.compile_count() - before > 1:
                v.verdict, v.message = "recompiled", f"{H.compile_count() - before} XLA compiles for 2 sizes"
        except Mismatch as e:
            v.verdict, v.message = "mismatch", str(e)
        except refusals as e:
            v.verdict, v.refusal, v.message = "refused", refusal_class(e), first_line(e)
        except Exception as e:
            v.verdict, v.message = "crash", first_line(e)
    return out
