"""The run file's lines (harness.run_file): records written compact, read back whole,
and files of the schema before (every field in every record) read as they were."""

import json
import re
import warnings

from harness import cli, history, results, run_file

MACHINE = {"host": "vm", "cpu": "AMD EPYC", "cores": 2, "load_avg": [1.0, 2.0, 3.0], "system": "Linux"}
VERSIONS = {"python": "3.11.7", "torch": "2.9.1"}


def _job(case: str, machine=MACHINE, **fields) -> list[dict]:
    """A small passing job's records, two shapes, as a run writes them (every field present)."""
    base = dict(run_id="r1", commit="c" * 40, case=case, backend="torch_eager", mode="static", env="main", process=0)
    base |= dict(machine=machine, versions=VERSIONS, profile="quick", **fields)
    out = []
    for i in range(2):
        for novel in (True, False):
            out.append(
                results.record(
                    **base,
                    shape_index=i,
                    sizes={"e": 10 + i},
                    novel=novel,
                    latency_s=0.001,
                    cached_latency_s=None if novel else 0.0005,
                    compiles=0,
                    compile_stages={},
                    compile_delta={},
                    status="pass",
                    ok=True,
                )
            )
    return out


def _old_format(path, recs) -> None:
    """Write ``recs`` as the harness before schema 3 did: every field, the machine block in each."""
    path.write_text("".join(json.dumps(dict(r, schema=2), default=str) + "\n" for r in recs), encoding="utf-8")


def test_a_record_is_written_without_its_none_fields_and_read_back_whole(tmp_path):
    recs = _job("a")
    with results.Writer(tmp_path / "r.jsonl") as w:
        for r in recs:
            w.write(r)
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert not [k for line in lines for k, v in line.items() if v is None]
    assert "cached_latency_s" not in lines[1] and "message" not in lines[1]
    back = results.read_records(tmp_path / "r.jsonl")
    assert back == [dict(r, schema=run_file.SCHEMA) for r in recs]
    assert all(list(r) == list(results.FIELDS) for r in back)


def test_shared_values_are_written_once_per_file_however_many_records_name_them(tmp_path):
    recs = [r for case in ("a", "b", "c") for r in _job(case)] + _job("d", machine=dict(MACHINE, host="other"))
    with results.Writer(tmp_path / "r.jsonl") as w:
        for r in recs:
            w.write(r)
    text = (tmp_path / "r.jsonl").read_text()
    assert text.count('"cpu": "AMD EPYC"') == 2  # the machine block, and the other machine's
    assert text.count('"torch": "2.9.1"') == 1
    lines = [json.loads(line) for line in text.splitlines()]
    defs = [line for line in lines if run_file.definitions(line) is not None]
    assert len(defs) == 2 and len(lines) == len(recs) + 2
    back = results.read_records(tmp_path / "r.jsonl")
    assert [r["machine"]["host"] for r in back] == ["vm"] * 12 + ["other"] * 4
    assert all(r["versions"] == VERSIONS for r in back)
    back[0]["machine"]["host"] = "changed"  # each record its own copy
    assert back[1]["machine"]["host"] == "vm"


def test_writers_appending_to_one_file_each_define_what_they_name(tmp_path):
    """A resumed run, the gate's xdist workers: every writer defines the values its records
    name, so a record never names a value only another writer's line defines."""
    path = tmp_path / "r.jsonl"
    for case in ("a", "b"):
        with results.SharedWriter(path) as w:
            for r in _job(case):
                w.write(r)
    back = results.read_records(path)
    assert len(back) == 8 and all(r["machine"] == MACHINE for r in back)


def test_a_record_naming_a_value_no_line_defines_loads_without_it_and_warns(tmp_path):
    path = tmp_path / "r.jsonl"
    with results.Writer(path) as w:
        for r in _job("a"):
            w.write(r)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if '"blocks"' not in line) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = results.read_records(path)
    (warned,) = [str(w.message) for w in caught]  # once, not once a record
    assert re.search(r"r.jsonl:1: no line of the file defines [0-9a-f]{12}, [0-9a-f]{12}$", warned), warned
    assert len(back) == 4 and back[0]["machine"] is None and back[0]["versions"] is None


def test_a_file_of_schema_2_reads_as_the_same_records(tmp_path):
    recs = [r for case in ("a", "b") for r in _job(case)]
    _old_format(tmp_path / "old.jsonl", recs)
    (tmp_path / "new.jsonl").write_text(run_file.text(recs))
    old, new = results.read_records(tmp_path / "old.jsonl"), results.read_records(tmp_path / "new.jsonl")
    assert [dict(r, schema=None) for r in old] == [dict(r, schema=None) for r in new]
    assert (tmp_path / "new.jsonl").stat().st_size < (tmp_path / "old.jsonl").stat().st_size / 2


def test_report_merge_and_history_read_a_file_of_schema_2(tmp_path, capsys):
    old = tmp_path / "runs" / "r1.jsonl"
    old.parent.mkdir()
    _old_format(old, [r for case in ("gnn_edge_divide", "gnn_rbf_subtract") for r in _job(case)])
    assert cli.main(["report", str(old)]) == 0
    assert "| gnn_edge_divide | torch_eager | static | pass |" in capsys.readouterr().out
    merged = tmp_path / "merged.jsonl"
    assert cli.main(["merge", str(old), "--out", str(merged), "--run-id", "m"]) == 0
    back = results.read_records(merged)
    assert len(back) == 8 and {r["run_id"] for r in back} == {"m"} and back[0]["machine"] == MACHINE
    assert '"machine": {' not in merged.read_text()  # written anew, compact
    # history picks runs by the commit of their first record, past the definitions
    assert history.run_paths(results_dir=tmp_path / "runs", commits=["c" * 40]) == [old]
    assert history.run_paths([merged], commits=["c" * 40]) == [merged]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(results.load([old, merged])) == 16
