"""The torch_aoti peer: opt-in planning (no compile) and, with DYNSHAPE_AOTI=1,
one AOT compile serving gnn_edge_divide's bounded range through the harness.

The compile is a C++ build of ~25 s on an idle 2-core machine (over 2 min on a
loaded one), so ``make test`` skips it; the conformance gate skips torch_aoti
too (opt-in)."""

from __future__ import annotations

import os

import pytest

import cases
from backends.torch_aoti import TorchAoti
from harness import expectations, registry, runner


def test_opt_in_backend_is_planned_but_skipped_unless_named():
    case = cases.get("gnn_edge_divide")
    status, why = runner.Combo(case, TorchAoti(), "bounded", named=False).skip_reason()
    assert status == "skipped" and "opt-in" in why and "--backends" in why
    assert runner.Combo(case, TorchAoti(), "bounded", named=True).skip_reason() in (None, ("skipped", TorchAoti().available()[1]))
    assert TorchAoti.modes == ("static", "bounded", "unbounded") and TorchAoti.forms == ("torch",)
    if "torch_aoti" not in registry.backends():
        pytest.skip("torch_aoti is not registered in this environment (make setup registers it)")
    default = [c for c in runner.plan("gnn_edge_divide", None, "bounded") if c.backend.name == "torch_aoti"]
    named = runner.plan("gnn_edge_divide", "torch_aoti", "bounded")
    assert [c.named for c in default] == [False] and [c.named for c in named] == [True]
    assert [c.named for c in runner.plan("gnn_edge_divide", "torch_*", "bounded") if c.backend.name == "torch_aoti"] == [False]


@pytest.mark.skipif(
    os.environ.get("DYNSHAPE_AOTI") != "1", reason="one AOTInductor compile (~25 s idle, minutes loaded): set DYNSHAPE_AOTI=1"
)
def test_one_aot_compile_serves_the_bounded_range(tmp_path):
    if "torch_aoti" not in registry.backends():
        pytest.skip("torch_aoti is not registered in this environment (make setup registers it)")
    combo = runner.plan("gnn_edge_divide", "torch_aoti", "bounded")[0]
    records: list[dict] = []
    runner.Runner(tmp_path, profile="quick", repeats=2, warmup=1, progress=False).run_one(combo, records.append)
    rule = expectations.lookup(expectations.load(), "gnn_edge_divide", "torch_aoti", "bounded")
    v = expectations.verdict(records, rule)
    assert v.outcome == "pass", v.problems
    novel = [r for r in records if r.get("novel")]
    assert novel[-1]["compile_stages"] == {"export": 1, "aoti": 1}
    # a size above the bound: refused naming the dim, before the package sees it
    from backends.base import BoundError

    b, case = TorchAoti(), cases.get("gnn_edge_divide")
    b.startup()
    program = b.prepare(case, "bounded")
    with pytest.raises(BoundError, match=r"dim 'e' \(axis 0\) is 2049, above its bound 2048"):
        program.convert(case.make_inputs({"e": 2049}, seed=0))
