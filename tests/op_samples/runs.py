"""The paths an op sample runs through, each noting what it reached of its registry: the
lazy IR ops of every graph it compiled, the lowering targets whose lowering ran.

``reach.tsv`` pins what each sample reached on each path (``sample, path, reached``); a
sample's test fails when it no longer reaches a pinned one, and the coverage test reads the
pin. Regenerate it with ``python -m tests.op_samples.runs --write`` (no execution: traces,
exports and lowerings; ``--paths lazy`` regenerates one path's rows)."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.fx.experimental._config as fx_config

import engines.lazy as L
from conformance.op_samples import SAMPLES, Sample, as_torch, export_shapes
from engines import stablehlo as H
from engines.lazy import passes

REACH = Path(__file__).with_name("reach.tsv")
PATHS = ("lazy", "lowered", "lazy_hlo")


def lazy_ops_of(g) -> set[str]:
    """The IR ops of a lazy graph (without the counter a generic rule's op gets, as the OpInfo route)."""
    return {re.sub(r"#\d+", "", n.op) for n in g.nodes if not n.is_leaf}


def lazy_function(s: Sample, mode: str = "unbounded", compiler=None, bounds=None):
    """``(LazyFunction, reached)``: ``s.program`` on the lazy path, ``reached`` filling with
    the IR ops of every graph it compiles (``compiler``: the lazy context's, default FX)."""
    reached: set[str] = set()
    base = compiler or passes.compile_graph

    def compile(g, stats):
        reached.update(lazy_ops_of(g))
        return base(g, stats)

    dims, own_bounds = s.lazy_dims()
    ctx = L.LazyContext(mode, compiler=compile)
    return L.LazyFunction(s.program, mode, dims, bounds if bounds is not None else own_bounds, ctx), reached


_LOWERED: dict[str, tuple[str, frozenset]] = {}


def lowered(s: Sample) -> tuple[str, frozenset]:
    """``(text, targets)``: ``s`` exported at ``s.lowered.export_n`` and lowered (bounds kept),
    once a process, and the lowering targets it reached."""
    if s.name not in _LOWERED:
        low = s.lowered
        assert low is not None and s.dims is not None, s.name
        sample = tuple(as_torch(a) for a in s.inputs(low.export_n, seed=0))
        # Fn.forward(*xs): the per-input specs go under "xs"; backed_size_oblivious: without
        # it torch.export guards derived sizes such as n-1 != 1 and rejects Dim(min=1)
        with fx_config.patch(backed_size_oblivious=low.oblivious), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(s.module(), sample, dynamic_shapes={"xs": export_shapes(s.dims)}, **low.export_kw)
        with H.reaching() as seen:
            text = H.lower(ep)
        _LOWERED[s.name] = (text, frozenset(seen))
    return _LOWERED[s.name]


def check(got, want, s: Sample, where: str, dtypes: bool = False, tol: tuple[float, float] | None = None) -> None:
    """``got`` (tensors or arrays) against the reference ``want``: shapes, integer and bool
    outputs exactly, floats within the sample's tolerance (NaN equal to NaN); ``dtypes``:
    the dtypes too (against eager)."""
    rtol, atol = tol or (s.rtol, s.atol)
    assert len(got) == len(want), f"{where}: {len(got)} outputs, want {len(want)}"
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
        b = np.asarray(b)
        assert a.shape == b.shape, f"{where} out{i}: shape {a.shape} != {b.shape}"
        if dtypes:
            assert a.dtype == b.dtype, f"{where} out{i}: dtype {a.dtype} != {b.dtype}"
        if b.dtype == np.bool_ or np.issubdtype(b.dtype, np.integer):
            np.testing.assert_array_equal(a, b, err_msg=f"{where} out{i}")
        else:
            np.testing.assert_allclose(a.astype(np.float64), b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{where} out{i}")


def pinned_reach(path: Path = REACH) -> dict[tuple[str, str], frozenset]:
    """``{(sample, path): reached}`` of ``reach.tsv`` (empty when not generated)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, p, reached = line.split("\t")
            out[name, p] = frozenset(x for x in reached.split(",") if x)
    return out


def assert_reaches_pin(name: str, path: str, reached: set | frozenset) -> None:
    """Every op the pin says ``name`` reached on ``path`` is still reached (a lost
    implementation, or a lowering lost to a decomposition, fails here)."""
    pinned = pinned_reach().get((name, path))
    assert pinned is not None, f"{name} on {path}: no row in {REACH.name} (python -m tests.op_samples.runs --write)"
    lost = sorted(pinned - set(reached))
    assert not lost, f"{name} on {path}: no longer reaches {lost} (reached {sorted(reached)})"


def _reach_lazy(s: Sample) -> set[str]:
    f, reached = lazy_function(s)
    for n in s.sizes:
        f(*[as_torch(a) for a in s.inputs(n)])
    return reached


def _reach_lazy_hlo(s: Sample) -> set[str]:
    from engines.lazy.to_stablehlo import StablehloCompiler

    with H.reaching() as seen:
        f, _ = lazy_function(s, compiler=StablehloCompiler("unbounded", s.name))
        for n in s.sizes:
            f(*[as_torch(a) for a in s.inputs(n)])
    return seen


def reach_rows(samples=SAMPLES, paths=PATHS) -> list[tuple[str, str, str]]:
    """Every ``(sample, path, reached)`` row of ``paths``: each that claims a sample, run."""
    run = {"lazy": _reach_lazy, "lowered": lambda s: set(lowered(s)[1]), "lazy_hlo": _reach_lazy_hlo}
    rows = []
    for s in samples:
        for p in paths:
            claim = getattr(s, p)
            if claim is not None and not getattr(claim, "fails", ""):  # (a known failure reaches nothing)
                print(f"{s.name} ({p})", file=sys.stderr, flush=True)
                rows.append((s.name, p, ",".join(sorted(run[p](s)))))
    return rows


HEADER = (
    "# generated by `python -m tests.op_samples.runs --write [--paths lazy,lowered,lazy_hlo]`:"
    " sample, path, what it reached (lazy IR ops | lowering targets)\n"
)


def main(argv: list[str]) -> int:
    """``--write`` the pin (else print the rows); ``--paths a,b`` regenerates those paths' rows alone."""
    paths = PATHS
    if "--paths" in argv:
        paths = tuple(argv[argv.index("--paths") + 1].split(","))
        if not set(paths) <= set(PATHS):
            print(f"--paths: want some of {','.join(PATHS)}", file=sys.stderr)
            return 2
    rows = reach_rows(paths=paths)
    if "--write" not in argv:
        sys.stdout.write("".join("\t".join(r) + "\n" for r in rows))
        return 0
    kept = [(n, p, ",".join(sorted(r))) for (n, p), r in pinned_reach().items() if p not in paths]
    order = {s.name: i for i, s in enumerate(SAMPLES)}
    rows = sorted(kept + rows, key=lambda r: (order.get(r[0], len(order)), PATHS.index(r[1])))
    REACH.write_text(HEADER + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows -> {REACH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
