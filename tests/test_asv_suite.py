"""The asv suite is discovered by asv and measures what the harness measures."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "harness"))
from benchmarks import suite  # noqa: E402


def test_asv_discovers_the_suite_without_problems():
    asv = Path(sys.executable).parent / "asv"
    out = subprocess.run([str(asv), "check", "--python=same"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout


def test_grid_is_the_catalogue_times_backends_times_modes():
    cases_, backends, modes = suite.Catalogue.params
    assert "gnn_edge_divide" in cases_ and "einx" in backends and modes == ["static", "bounded", "unbounded"]


def test_track_compiles_counts_exactly():
    c = suite.Compiles()
    c.setup("gnn_edge_divide", "einx", "static")
    assert c.track_compiles("gnn_edge_divide", "einx", "static") == 3  # the quick sweep's 3 novel shapes
    c.setup("gnn_edge_divide", "torch_eager", "unbounded")
    assert c.track_compiles("gnn_edge_divide", "torch_eager", "unbounded") == 0


def test_impossible_combinations_are_skipped_by_setup():
    with pytest.raises(NotImplementedError, match="einx offers no unbounded mode"):
        suite.Catalogue().setup("gnn_edge_divide", "einx", "unbounded")
    with pytest.raises(NotImplementedError, match="no einx form"):
        suite.CachedCall().setup("gnn_message_passing", "einx", "static")
