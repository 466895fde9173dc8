"""The zoo's probed table (cases/zoo.json, `python -m cases.zoo probe`): what the catalogue lists of it.

The table is generated; these tests hold what issue 36 asks of it: at least 65 cases, 40
transformers architectures, 10 torchvision ones (windowed attention and depthwise convs among
them), 15 torch_geometric conv classes; every enumerated architecture either a case or listed
with its reason; and the catalogue built from the table without importing a model library.
Issue 45 adds timm (80 architectures) and diffusers (5), and 400 cases in all; a family's
enumeration names each architecture once; a timm and a diffusers case run in eager against
their oracle on one size."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import cases
from cases import libs, zoo


def _zoo_cases():
    return [c for c in cases.catalogue() if c.name.startswith("zoo_")]


def test_the_catalogue_lists_the_probed_zoo():
    found = _zoo_cases()
    by = {lib: [c for c in found if lib in c.libraries] for lib in ("transformers", "torchvision", "torch_geometric")}
    assert len(found) >= 65
    assert len(by["transformers"]) >= 40 and len(by["torchvision"]) >= 10
    convs = {e["conv"] for e in zoo.entries("zoo_pyg").values() if "skipped" not in e}
    assert len(convs) >= 15
    names = {c.name for c in by["torchvision"]}
    assert {"zoo_tv_swin_t", "zoo_tv_mobilenet_v2"} <= names  # windowed attention, depthwise convs


def test_the_zoo_grows_to_timm_and_diffusers():
    """Issue 45: at least 400 zoo cases, 80 of them timm architectures and 5 diffusers ones."""
    found = _zoo_cases()
    by = {lib: [c for c in found if lib in c.libraries] for _fam, lib in zoo.LIBRARIES}
    assert len(found) >= 400, {lib: len(cs) for lib, cs in by.items()}
    assert len(by["timm"]) >= 80 and len(by["diffusers"]) >= 5
    assert all(c.name.startswith("zoo_timm_") for c in by["timm"])
    assert all(c.name.startswith("zoo_diff_") for c in by["diffusers"])


def test_every_family_is_in_the_catalogue_and_the_table():
    """Each family of zoo.LIBRARIES is a catalogue family, names a known library, and was probed."""
    for fam, lib in zoo.LIBRARIES:
        assert fam in cases.FAMILIES and lib in libs.LIBRARIES, fam
        assert zoo.entries(fam), f"{fam} was never probed: `python -m cases.zoo probe {fam}`"


def test_every_enumerated_architecture_is_a_case_or_says_why_not():
    listed = {c.name for c in _zoo_cases()}
    for fam, entries in zoo.table().items():
        for name, e in entries.items():
            assert name.startswith("zoo_"), (fam, name)
            if "skipped" in e:
                assert e["skipped"].strip() and name not in listed, name
            else:
                assert name in listed and "err" in e, name
    assert zoo.skipped()


def test_each_case_gets_a_tolerance_from_its_probed_error():
    for fam, entries in zoo.table().items():
        for e in entries.values():
            if "skipped" not in e:
                tol = zoo.tolerance_of(e)
                assert tol.atol >= max(1e-6, 10 * e["err"]) and tol.atol <= max(2e-6, 20 * e["err"]), (fam, e["name"])


def test_listing_the_zoo_imports_no_model_library():
    code = (
        "import sys, cases; cases.catalogue(); print(sorted(m for m in "
        "('transformers', 'torchvision', 'torch_geometric', 'timm', 'diffusers', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_probe_takes_no_budget_by_default():
    """Every enumerated architecture is probed (issue 45): none is left out for the probe's budget."""
    assert zoo.BUDGET_S >= 10_000
    assert not [n for n, why in zoo.skipped().items() if "budget" in why]


@pytest.mark.parametrize("fam", [f for f, _ in zoo.LIBRARIES])
def test_candidates_name_each_architecture_once(fam):
    """A family's enumeration (it imports the library) gives unique names, each with its family's prefix."""
    lib = dict(zoo.LIBRARIES)[fam]
    if libs.missing(lib):
        pytest.skip(f"{lib} is not installed")
    specs = importlib.import_module(f"cases.{fam}").candidates()
    names = [s["name"] for s in specs]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    prefix = {"zoo_diffusers": "zoo_diff_"}.get(fam, fam + "_")
    assert all(n.startswith(prefix) for n in names)
    assert set(names) == set(zoo.entries(fam)), "the table is stale: rerun `python -m cases.zoo probe " + fam + "`"


@pytest.mark.parametrize("name", ["zoo_timm_byobnet_test", "zoo_diff_dit"])
def test_a_new_family_case_runs_in_eager_against_its_oracle(name):
    """A timm and a diffusers case: built from their table entry, one sweep size in eager within the probed error."""
    fam = "zoo_timm" if name.startswith("zoo_timm_") else "zoo_diffusers"
    module = importlib.import_module(f"cases.{fam}")
    entry = zoo.entries(fam)[name]
    if libs.missing(*module.make(entry).libraries):
        pytest.skip("the model library is not installed")
    case = module.make(entry)
    err = zoo.eager_error(case, shapes=1)
    assert 0 < err <= case.tol().atol
