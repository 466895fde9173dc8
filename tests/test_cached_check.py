"""The cached phase checks every k-th call's output against the oracle (each
sample's last call; k is ``cached_check_every``), not only the last call's."""

from __future__ import annotations

import time

from backends.base import Backend, Program
from harness import measure


class WrongOnce(Backend):
    """Right on every call but the ``bad``-th, which is slow enough (2 ms) that
    each cached sample is one call: the middle sample of shape 0's cached phase."""

    name = "wrong_once"
    forms = ("torch",)
    modes = ("unbounded",)
    requires = ()

    def __init__(self, bad: int):
        self.bad = bad

    def prepare(self, case, mode):
        calls = [0]

        def call(*arrays):
            calls[0] += 1
            time.sleep(0.002)
            out = case.expected(arrays).astype(case.out_dtype)
            return out + 1 if calls[0] == self.bad else out

        return Program(self, case, mode, call)


def _cached(bad: int) -> list[dict]:
    got = []
    job = {"case": "gnn_edge_divide", "mode": "unbounded", "profile": "quick", "repeats": 3, "warmup": 1}
    measure.run(job, WrongOnce(bad), got.append)
    return [r for r in got if r["novel"] is False]


def test_a_wrong_output_in_the_middle_of_the_cached_phase_is_a_mismatch():
    # calls 1-3: the novel shapes; 4: shape 0's warm-up; 5, 6, 7: its three samples
    cached = _cached(bad=6)
    assert [r["status"] for r in cached] == ["mismatch", "pass", "pass"]
    assert cached[0]["message"].startswith("cached call: ")
    assert all(r["cached_check_every"] == 1 and r["cached_repeats"] == 3 for r in cached)
    assert [r["status"] for r in _cached(bad=0)] == ["pass"] * 3
