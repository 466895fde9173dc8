"""The test tiers stay true: every pattern of ``tests/conftest.py``'s SLOW and EXTENDED
names a test that exists (a renamed file would move its tests back silently), and CI
runs both ``make test`` and the extended tier it leaves out."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from tests.conftest import EXTENDED, EXTENDED_ROWS, SLOW

ROOT = Path(__file__).resolve().parents[1]


def _tests_in(path: Path) -> list[str]:
    return re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), flags=re.M)


@pytest.mark.parametrize("pattern", SLOW + EXTENDED)
def test_each_tier_pattern_names_existing_tests(pattern):
    where, _, name = pattern.partition("::")
    files = [p for p in ROOT.glob("tests/**/*.py") if fnmatch.fnmatchcase(p.relative_to(ROOT).as_posix(), where)]
    assert files, f"{pattern}: no test file matches {where!r}"
    if name and name != "*":
        found = [t for f in files for t in _tests_in(f) if fnmatch.fnmatchcase(t, name.split("[")[0])]
        assert found, f"{pattern}: no test named {name!r} in {where}"


def test_no_pattern_is_in_both_tiers():
    assert not set(SLOW) & set(EXTENDED)


def test_ci_runs_make_test_and_the_extended_tier():
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make test" in ci and "make test-extended" in ci
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r'^test:.*\n\t.*-m "not extended"', make, flags=re.M), "make test no longer leaves out the tier"
    assert re.search(r"^test-extended:.*\n\t.*pytest tests/ cases/ -m extended", make, flags=re.M)


def test_each_extended_row_is_a_backend_with_gate_jobs():
    """A renamed backend would move its row back into ``make test`` silently."""
    from cases.test_conformance import COMBOS

    gated = {c.backend.name for c in COMBOS}
    assert set(EXTENDED_ROWS) <= gated, f"no gate jobs for {sorted(set(EXTENDED_ROWS) - gated)}"
    assert gated - set(EXTENDED_ROWS) >= {"lazy", "stablehlo_xla", "torch_eager", "einx_symbolic"}


def test_extended_picks_gate_jobs_by_their_backend_marker_and_tests_by_pattern():
    from tests.conftest import GATE, extended

    class Item:
        def __init__(self, nodeid, backend=None):
            self.nodeid, self.backend = nodeid, backend

        def get_closest_marker(self, name):
            return name if name == self.backend else None

    row = EXTENDED_ROWS[0]
    assert extended(Item(f"{GATE}c[{row}-bounded]]", row))
    assert not extended(Item(f"{GATE}c[lazy-bounded]]", "lazy"))
    assert extended(Item("tests/test_wheel.py::test_x"))
    assert not extended(Item("tests/test_frames.py::test_x"))
