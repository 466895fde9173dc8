"""``opinfo pin --update``: a sweep over some entries re-pins those rows alone."""

from __future__ import annotations

import json

from conformance.opinfo import pin


def _rows(out, path, verdicts):
    out.mkdir(exist_ok=True)
    with (out / f"{path}.jsonl").open("w") as f:
        for entry, verdict in verdicts.items():
            f.write(json.dumps({"entry": entry, "verdict": verdict, "route": "add" if verdict == "pass" else ""}) + "\n")


def test_update_replaces_the_swept_entries_and_keeps_the_rest(tmp_path):
    dest = tmp_path / "pinned.tsv"
    _rows(tmp_path / "all", "lazy", {"abs": "pass", "cos": "refused"})
    _rows(tmp_path / "all", "stablehlo", {"abs": "refused", "cos": "refused"})
    pin.write(tmp_path / "all", dest)
    whole = dest.read_text()
    _rows(tmp_path / "some", "stablehlo", {"cos": "pass"})
    pin.write(tmp_path / "some", dest, update=True)
    assert pin.read(dest) == {
        ("abs", "lazy"): ("pass", "add"),
        ("cos", "lazy"): ("refused", ""),
        ("abs", "stablehlo"): ("refused", ""),
        ("cos", "stablehlo"): ("pass", "add"),
    }
    # without --update the pin is the run's alone; the order is the whole pin's (path, entry)
    pin.write(tmp_path / "some", dest)
    assert pin.read(dest) == {("cos", "stablehlo"): ("pass", "add")}
    assert whole.splitlines()[1].startswith("abs\tlazy")


def test_the_tables_of_the_pin_count_its_verdicts(tmp_path, monkeypatch, capsys):
    from conformance.opinfo import __main__ as cli
    from conformance.opinfo import samples

    dest = tmp_path / "pinned.tsv"
    _rows(tmp_path / "run", "lazy", {"abs": "pass", "cos": "recompiled"})
    _rows(tmp_path / "run", "stablehlo", {"abs": "export-refused", "cos": "pass"})
    pin.write(tmp_path / "run", dest)
    monkeypatch.setattr(pin, "PIN", dest)
    monkeypatch.setattr(samples, "op_db", list)  # (no op_db import: every entry's family is "other")
    assert cli.main(["table", "--pin", "--out", str(tmp_path / "nothing")]) == 0
    out = capsys.readouterr().out
    assert "lazy: 1/2 entries pass (50.0%)" in out and "stablehlo: 1/1 entries pass (100.0%)" in out
