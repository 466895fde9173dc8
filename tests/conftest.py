"""Helpers for the harness's own tests."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fake_backends(monkeypatch):
    """Make tests/fixtures importable in this process and in workers."""
    import os
    import sys

    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    import dynshape_fake_backends

    def make(cls_name):
        cls = getattr(dynshape_fake_backends, cls_name)
        inst = cls()
        inst.spec = f"dynshape_fake_backends:{cls_name}"
        return inst

    yield make
    sys.modules.pop("dynshape_fake_backends", None)
