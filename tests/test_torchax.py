"""torchax's StableHLO (backends/torchax_stablehlo.py) on our XLA executor, in the
xla environment (torch 2.9.1: torchax 0.0.13 cannot be imported beside torch 2.13).

Driven as a run drives a job (a worker in that environment): the seed case is
lowered once and compiled by XLA once per concrete shape, every output oracle-equal;
a program with two independent dims is refused with torchax's own reason (each
torch.export symbol in a jax symbolic scope of its own), pinned as a finding.
Skips where the xla environment lacks torchax (``make xla-env``)."""

from __future__ import annotations

import pytest

import cases
from backends import envs
from harness import registry, runner


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    ok, why = envs.modules_available("xla", ("torch", "jax", "torchax"))
    if not ok:
        pytest.skip(f"torchax_stablehlo: {why} (make xla-env)")
    backend = registry.backends()["torchax_stablehlo"]
    run = runner.Runner(tmp_path_factory.mktemp("torchax"), profile="quick", repeats=1, warmup=1, progress=False)
    got: dict[str, list[dict]] = {}
    for name in ("gnn_edge_divide", "gnn_message_passing"):
        got[name] = []
        run.run_one(runner.Combo(cases.get(name), backend, "unbounded"), got[name].append)
    return got


def test_one_lowering_and_an_xla_compile_per_shape_all_oracle_equal(records):
    novel = [r for r in records["gnn_edge_divide"] if r.get("novel")]
    assert len(novel) == 3 and {r["status"] for r in novel} == {"pass"}, [r.get("message") for r in novel]
    assert [r["compile_delta"] for r in novel] == [
        {"lowering": 1, "xla": 1},
        {"lowering": 0, "xla": 1},
        {"lowering": 0, "xla": 1},
    ]
    cached = [r for r in records["gnn_edge_divide"] if r.get("novel") is False]
    assert cached and {r["status"] for r in cached} == {"pass"}


def test_two_independent_dims_mix_torchax_symbolic_scopes(records):
    """torchax 0.0.13's export.py builds each symbol of ``ep.range_constraints`` with its own
    ``jax.export.symbolic_shape(...)`` scope, so N and E together cannot be exported."""
    novel = [r for r in records["gnn_message_passing"] if r.get("novel")]
    assert novel and {r["status"] for r in novel} == {"unsupported"}
    assert "Invalid mixing of symbolic scopes" in novel[0]["message"]
