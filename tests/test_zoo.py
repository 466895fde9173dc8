"""The zoo's probed table (cases/zoo.json, `python -m cases.zoo probe`): what the catalogue lists of it.

The table is generated; these tests hold what issue 36 asks of it: at least 65 cases, 40
transformers architectures, 10 torchvision ones (windowed attention and depthwise convs among
them), 15 torch_geometric conv classes; every enumerated architecture either a case or listed
with its reason; and the catalogue built from the table without importing a model library."""

from __future__ import annotations

import subprocess
import sys

import cases
from cases import zoo


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
    code = "import sys, cases; cases.catalogue(); print(sorted(m for m in ('transformers', 'torchvision', 'torch_geometric', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
