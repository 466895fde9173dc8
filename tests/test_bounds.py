"""A size above its bound: every backend offering ``bounded`` raises a clear
error naming the dim (or the input's axis), the size and the bound, never a
silent result; and the harness itself refuses such a shape before any system
sees it."""

import dataclasses
import re

import pytest

import cases
from backends.base import BoundError, check_bounds
from harness import measure, registry

CASE = "gnn_edge_divide"  # e ≤ 2048
BOUNDED = [n for n, b in registry.backends().items() if "bounded" in b.modes and "torch" in b.forms]


@pytest.mark.parametrize("name", BOUNDED)
def test_each_bounded_backend_refuses_a_size_above_its_bound(name):
    b = registry.backends()[name]
    if getattr(b, "opt_in", ""):  # torch_aoti: its package takes minutes to build
        pytest.skip(
            f"{name} is opt-in; its bound is checked with its one AOT compile in tests/test_torch_aoti.py (DYNSHAPE_AOTI=1)"
        )
    if name == "torch_compile":
        b = type(b)(compiler="eager")  # the bound is checked before any compile: skip inductor's imports
    ok, why = b.available()
    if not ok:
        pytest.skip(why)
    case = cases.get(CASE)
    inputs = case.make_inputs({"e": 2049}, seed=0)
    program = b.prepare(case, "bounded")
    with pytest.raises(Exception) as e:
        program.sync(program(*program.convert(inputs)))
    msg = str(e.value)
    assert "2049" in msg and "2048" in msg, msg
    assert re.search(r"dim 'e'|dim e\b|e <= 2048", msg), msg


def test_the_jax_backends_too():
    for name in ("jax_jit", "jax_export"):
        b = registry.backends()[name]
        case = cases.get(CASE)
        program = b.prepare(case, "bounded")
        with pytest.raises(BoundError if name == "jax_export" else ValueError) as e:
            program(*program.convert(case.make_inputs({"e": 2049}, seed=0)))
        assert "dim 'e'" in str(e.value) and "2049" in str(e.value) and "2048" in str(e.value)


def test_check_bounds_names_case_input_dim_size_and_bound():
    case = cases.get(CASE)
    with pytest.raises(BoundError) as e:
        check_bounds(case, "bounded", case.make_inputs({"e": 2049}, seed=0))
    assert str(e.value) == "gnn_edge_divide: input 'd' dim 'e' (axis 0) is 2049, above its bound 2048 (bounded mode)"
    check_bounds(case, "unbounded", case.make_inputs({"e": 2049}, seed=0))  # no bound there


def test_the_harness_records_a_shape_above_its_bound_as_an_error(fake_backends, monkeypatch):
    twin = dataclasses.replace(cases.get(CASE))
    object.__setattr__(twin, "sizes_for", lambda profile: [{"e": 2049}])  # a sweep past the bound
    monkeypatch.setattr(cases, "get", lambda name, **kw: twin)
    got = []
    measure.run(
        {"case": CASE, "mode": "bounded", "profile": "quick", "repeats": 1, "warmup": 1}, fake_backends("Sleepy"), got.append
    )
    assert [(r["status"], r["message"]) for r in got] == [
        ("error", "BoundError: gnn_edge_divide: input 'd' dim 'e' (axis 0) is 2049, above its bound 2048 (bounded mode)")
    ]


def test_one_bound_error_class_in_the_tree():
    """The harness's check, the padding backends and the lazy engine raise one ``BoundError``
    (a caller catches it once, whoever raised it)."""
    import pathlib

    import torch

    import engines.lazy

    root = pathlib.Path(__file__).resolve().parents[1]
    defined = [
        p.relative_to(root).as_posix()
        for d in ("backends", "engines", "harness", "cases")
        for p in (root / d).rglob("*.py")
        if re.search(r"^class BoundError\b", p.read_text(), re.M)
    ]
    assert defined == ["engines/sizes/modes.py"]
    assert engines.lazy.BoundError is BoundError
    with pytest.raises(BoundError, match="past the bound 4"):
        engines.lazy.jit(lambda x: x + 1, mode="bounded", dims=[{0: "n"}], bounds=[{0: 4}])(torch.zeros(5))
