"""Coverage of both reference paths' registries: every lazy op (the IR ops of
``engines.lazy.ops``'s ``LOWER``, which every registry implementation records) and every
lowering target (``engines.stablehlo.lowering.registry``) is reached by a sample of the
op-sample table (``reach.tsv``, which each sample's test keeps honest) or by an OpInfo entry
pinned as passing (``tests/opinfo/pinned.tsv``'s lazy route; ``pinned_targets.tsv`` for
the lowering, which ``tests/opinfo/test_opinfo_pinned.py`` keeps honest). What nothing
reaches today is listed below with its reason; a listed op that gets reached, or leaves its
registry, fails the list (``unreached.py``)."""

from __future__ import annotations

import pytest

from conformance.op_samples import lazy_ops
from conformance.opinfo import pin
from engines.lazy.ops import F_OPS, LOWER, OPS, datadep, layers, order
from engines.stablehlo import covered_ops

from .runs import pinned_reach
from .unreached import UNREACHED_LAZY, UNREACHED_LOWERING


def _pinned_passes(path: str) -> set[str]:
    return {e for (e, p), (v, _) in pin.read().items() if p == path and v == "pass"}


def lazy_reached() -> dict[str, str]:
    """``{IR op: a sample or OpInfo entry that reaches it}``."""
    out = {}
    for (e, p), (v, route) in pin.read().items():
        if p == "lazy" and v == "pass":
            out.update({op: f"opinfo:{e}" for op in route.split(",") if op})
    for (name, p), ops in pinned_reach().items():
        if p == "lazy":
            out.update(dict.fromkeys(ops, name))
    return out


def lowering_reached() -> dict[str, str]:
    """``{lowering target: a sample or OpInfo entry that reaches it}`` (an OpInfo entry's
    targets count while the pin holds it as passing on the StableHLO path)."""
    out = {}
    passing = _pinned_passes("stablehlo")
    for e, targets in (pin.read_targets() if pin.TARGETS.exists() else {}).items():
        if e in passing:
            out.update({t: f"opinfo:{e}" for t in targets.split(",") if t})
    for (name, p), targets in pinned_reach().items():
        if p in ("lowered", "lazy_hlo"):
            out.update(dict.fromkeys(targets, name))
    return out


def unreached(registry, reached, listed: dict[str, str]) -> tuple[list[str], list[str]]:
    """``(reached by nothing and not listed, listed but reached or not in the registry)``."""
    registry = set(registry)
    missing = sorted(registry - set(reached) - set(listed))
    stale = sorted(op for op in listed if op in reached or op not in registry)
    return missing, stale


#: the lazy registry as imported: the generic meta rule adds a ``torch_fn:`` key per torch
#: function it meets at run time, which depends on what ran before in the process
REGISTERED_LAZY = frozenset(op for op in LOWER if not op.startswith("torch_fn:"))


def test_every_lazy_op_is_reached_by_a_sample_or_a_pinned_opinfo_pass():
    missing, stale = unreached(REGISTERED_LAZY, lazy_reached(), UNREACHED_LAZY)
    assert not missing, f"lazy ops no sample or pinned OpInfo pass reaches (add a sample to conformance/op_samples): {missing}"
    assert not stale, f"listed as unreached, but reached or gone (drop them from UNREACHED_LAZY): {stale}"


def test_every_lowering_target_is_reached_by_a_sample_or_a_pinned_opinfo_pass():
    missing, stale = unreached(covered_ops(), lowering_reached(), UNREACHED_LOWERING)
    assert not missing, (
        f"lowering targets no sample or pinned OpInfo pass reaches (add a sample to conformance/op_samples): {missing}"
    )
    assert not stale, f"listed as unreached, but reached or gone (drop them from UNREACHED_LOWERING): {stale}"


def test_a_lost_sample_or_a_new_registry_entry_is_caught():
    """The check above on a table missing the one sample that reaches an op, and on a
    registry with an entry nothing reaches (both planted)."""
    reached = lazy_reached()
    only = {op: who for op, who in reached.items() if not who.startswith("opinfo:") and op in REGISTERED_LAZY}
    op, who = next(iter(sorted(only.items())))
    without = {o: w for o, w in reached.items() if w != who or o != op}
    assert op in unreached(REGISTERED_LAZY, without, UNREACHED_LAZY)[0]
    assert "aten.fake.default" in unreached([*covered_ops(), "aten.fake.default"], lowering_reached(), UNREACHED_LOWERING)[0]
    assert "aten.fake.default" in unreached(covered_ops(), lowering_reached(), {"aten.fake.default": "planted"})[1]


def _registered() -> set:
    out = set()
    for table in (OPS, F_OPS):
        for name, fn in table.items():
            mod = getattr(fn, "__module__", "")
            if mod in (order.__name__, datadep.__name__, layers.__name__):
                out.add(name)
    return out


def test_every_op_of_the_model_families_has_a_sample_by_name():
    """Every name ``ops.order``, ``ops.datadep`` and ``ops.layers`` register has a lazy sample
    named after it (``conformance/op_samples/lazy_ops.py``)."""
    assert _registered() == {name.split(" ")[0] for name in lazy_ops._OPS}


@pytest.mark.parametrize("table", ["lazy", "lowering"])
def test_the_reach_pin_names_only_samples_of_the_table(table):
    from conformance.op_samples import BY_NAME

    rows = pinned_reach()
    assert rows, "reach.tsv not generated: python -m tests.op_samples.runs --write"
    paths = {"lazy": ("lazy",), "lowering": ("lowered", "lazy_hlo")}[table]
    for name, p in rows:
        if p in paths:
            s = BY_NAME.get(name)
            assert s is not None, f"{name}: in reach.tsv, not in the table"
            assert getattr(s, p) is not None, f"{name}: pinned on {p}, which does not claim it"
