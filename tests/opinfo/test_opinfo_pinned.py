"""PyTorch's OpInfo through our two reference paths, against the pinned table
(``pinned.tsv``, see :mod:`conformance.opinfo.pin`): each entry's first sample with
symbolic dims, at two sizes. An entry pinned as passing that stops passing fails here,
as does one whose lazy graph is served by other implementations (an op's
registry entry lost); an entry that passes where the pin says otherwise asks for the
pin to be regenerated. The whole sweep (three samples, the interpreter too):
``make opinfo``."""

from __future__ import annotations

import pytest

from conformance.opinfo import pin
from conformance.opinfo.table import entries
from conformance.opinfo.worker import verdicts

PINNED = pin.read() if pin.PIN.exists() else {}
PINNED_RUN = pin.OPTIONS
#: the lowering targets each StableHLO pass reached (what tests/op_samples/test_complete.py counts)
TARGETS = pin.read_targets() if pin.TARGETS.exists() else {}


@pytest.fixture(scope="module")
def db():
    from conformance.opinfo.samples import entry_name, op_db

    return {entry_name(o): o for o in op_db()}


def _now(db, entry: str, path: str) -> tuple[str, str, set[str]]:
    rows = [v.row() for v in verdicts(db[entry], path, PINNED_RUN)]
    targets = {t for r in rows for t in r.get("targets", "").split(",") if t}
    return entries(rows)[entry]["verdict"], pin.route(rows, entry), targets


@pytest.mark.parametrize(("entry", "path"), sorted(PINNED), ids=[f"{p}:{e}" for e, p in sorted(PINNED)])
def test_pinned_verdict(db, entry, path):
    (want, want_route), (got, got_route, got_targets) = PINNED[entry, path], _now(db, entry, path)
    if want == "pass":
        assert got == "pass", f"{entry} on {path}: pinned pass, now {got}"
        assert got_route == want_route, f"{entry} on {path}: served by {got_route}, pinned {want_route}"
        if path == "stablehlo" and entry in TARGETS:  # the coverage test counts these as reached
            lost = set(TARGETS[entry].split(",")) - got_targets - {""}
            assert not lost, f"{entry}: its lowering no longer reaches {sorted(lost)} (regenerate {pin.TARGETS.name})"
    else:
        assert got == want, f"{entry} on {path}: pinned {want}, now {got} (regenerate {pin.PIN.name})"


#: the crashes and mismatches the pin still holds, each with its cause (issue 48 asks for
#: none): a new one fails here, and so does one fixed without its line removed
KNOWN: set[str] = set()  # (the last two, sort and argsort, were the doubled sample's ties: samples.TIE_FREE)


def test_the_pin_has_no_crash_or_mismatch_but_the_known_ones():
    bad = {f"{p}:{e} {v}" for (e, p), (v, _) in PINNED.items() if v in ("crash", "mismatch")}
    assert bad == KNOWN
