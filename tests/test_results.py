"""The record schema, the JSONL writer and the loader."""

import json

import pytest

from harness import results


def test_record_has_every_field_and_the_schema_version():
    rec = results.record(case="c", backend="b", mode="static", status="pass")
    assert list(rec) == list(results.FIELDS)
    assert rec["schema"] == results.SCHEMA and rec["latency_s"] is None


def test_record_rejects_unknown_fields_and_statuses():
    with pytest.raises(results.ResultsError, match="unknown record fields"):
        results.record(case="c", latnecy_s=1.0)
    with pytest.raises(results.ResultsError, match="unknown status 'ok'"):
        results.record(status="ok")


def test_required_fields_of_the_issue_are_present():
    required = {
        "run_id",
        "commit",
        "dirty",
        "machine",
        "timestamp",
        "versions",
        "case",
        "backend",
        "mode",
        "shape_index",
        "sizes",
        "novel",
        "compiles",
        "latency_s",
        "cached_latency_s",
        "cached_iqr_s",
        "max_abs_err",
        "max_rel_err",
        "ok",
        "status",
        "message",
    }
    assert required <= set(results.FIELDS)


def _rec(**fields):
    """A record with the fields :func:`results.check_record` requires."""
    return results.record(**{"run_id": "r", "case": "a", "backend": "b", "mode": "static", "status": "pass", **fields})


def test_writer_flushes_each_record_and_load_reads_them(tmp_path):
    path = tmp_path / "run.jsonl"
    w = results.Writer(path)
    w.write(_rec(case="a", status="pass", compiles=1))
    # readable before close: an interrupted run keeps what it wrote
    assert len(path.read_text().splitlines()) == 1
    w.write(_rec(case="b", status="error", message="boom"))
    w.close()
    df = results.load([path])
    assert list(df["case"]) == ["a", "b"] and list(df.columns) == list(results.FIELDS)


def test_load_takes_directories_and_defaults_to_the_latest_run(tmp_path):
    for name in ("r1", "r2"):
        with results.Writer(tmp_path / f"{name}.jsonl") as w:
            w.write(_rec(run_id=name, status="pass"))
    assert len(results.load([tmp_path])) == 2
    assert list(results.load(None, default_dir=tmp_path)["run_id"]) == ["r2"]


def test_load_refuses_other_schema_versions_by_name(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"schema": 0, "case": "x"}) + "\n")
    with pytest.raises(results.ResultsError, match=r"old.jsonl:1: schema 0 is not supported"):
        results.load([path])


def test_torn_and_corrupt_lines_are_skipped_with_a_warning_naming_file_and_line(tmp_path):
    path = tmp_path / "torn.jsonl"
    good = json.dumps(_rec(case="a", status="pass"))
    path.write_text(good + "\n[1, 2]\n" + good + '\n{"case": "x"}\n{"schema": 1, "ca')
    with pytest.warns(results.ResultsWarning) as caught:
        df = results.load([path])
    assert list(df["case"]) == ["a", "a"]
    assert [str(w.message) for w in caught] == [
        f"{path}:2: skipped a line that is not a record (a JSON list, not an object)",
        f"{path}:4: skipped an object with no schema version (schema: None): not a record",
        f"{path}:5: skipped a line that is not JSON (Unterminated string starting at column 15; "
        "a run killed mid-write leaves a torn last line)",
    ]


def test_a_newer_schema_is_refused_naming_the_version(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"schema": results.SCHEMA + 1, "case": "x"}) + "\n")
    with pytest.raises(results.ResultsError) as e:
        results.load([path])
    assert str(e.value) == (
        f"{path}:1: schema {results.SCHEMA + 1} is newer than this harness reads "
        f"(up to {results.SCHEMA}): update dynshape to read this file"
    )


def test_missing_paths_and_empty_dirs_are_clear_errors(tmp_path):
    with pytest.raises(results.ResultsError, match="no such results file"):
        results.load([tmp_path / "nope.jsonl"])
    with pytest.raises(results.ResultsError, match="no runs in"):
        results.load(None, default_dir=tmp_path)
    with pytest.raises(results.ResultsError) as e:
        results.load([tmp_path])
    assert str(e.value) == f"no results files (*.jsonl) in directory {tmp_path}"
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(results.ResultsError) as e:
        results.load([tmp_path])
    assert str(e.value) == (
        f"no records in {tmp_path / 'empty.jsonl'} (an empty run: was it interrupted before its first job finished?)"
    )


@pytest.mark.parametrize(
    "line,message",
    [
        ({"schema": 2}, "bad.jsonl:1: field 'run_id' missing: not a record of a run"),
        (dict(_rec(), case=3), "bad.jsonl:1: field 'case' 3 is an int, not a string: not a record of a run"),
        (dict(_rec(), status="fine"), "bad.jsonl:1: field 'status' 'fine' is not one of crashed, "),
        (dict(_rec(), latency_s="fast"), "bad.jsonl:1: field 'latency_s' is 'fast' (a str), expected number"),
        (dict(_rec(), shape_index=1.5), "bad.jsonl:1: field 'shape_index' is 1.5 (a float), expected int"),
        (dict(_rec(), novel="yes"), "bad.jsonl:1: field 'novel' is 'yes' (a str), expected bool"),
        (dict(_rec(), compiles=True), "bad.jsonl:1: field 'compiles' is True (a bool), expected int"),
    ],
)
def test_a_record_missing_a_field_or_of_a_wrong_type_is_refused_naming_it(line, message, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(results.ResultsError) as e:
        results.load([path])
    assert str(e.value).startswith(f"{tmp_path}/{message}")


def test_jobs_not_run_are_kept_grouped_and_read_back_one_by_one(tmp_path):
    """A run file keeps one record per (backend, mode, env, status, reason) of the
    jobs that did not run, listing their cases; reading it gives one per job."""
    from harness import results as res

    def idle(case, backend="b", why="no such mode"):
        return res.record(run_id="r", case=case, backend=backend, mode="static", env="main", status="unsupported", message=why)

    recs = [idle("c1"), idle("c2"), idle("c3", why="other"), idle("c4", backend="b2"), idle("c5")]
    recs += [idle(c, why=f"b pads on the host, and {c} cannot pad") for c in ("c6", "c7")]
    groups = res.idle_groups(recs)
    assert [g["cases"] for g in groups] == [["c1", "c2", "c5"], ["c3"], ["c4"], ["c6", "c7"]]
    with res.Writer(tmp_path / "r.jsonl") as w:
        for g in groups:
            w.write(g)
    back = res.read_records(tmp_path / "r.jsonl")
    key = lambda r: (r["case"], r["backend"], r["message"])  # noqa: E731
    assert sorted(map(key, back)) == sorted(map(key, recs)) and all(r["cases"] is None for r in back)
    # a group of jobs that ran is not a record of a run
    with res.Writer(tmp_path / "bad.jsonl") as w:
        w.write(dict(groups[0], status="pass"))
    with pytest.raises(res.ResultsError, match="field 'cases'"):
        res.read_records(tmp_path / "bad.jsonl")


def test_the_quick_profiles_jobs_not_run_fit_in_a_small_file(tmp_path):
    """The quick profile plans every zoo job and runs few: their records stay small (one
    record each came to 45 MB; grouped, 1.3 MB; their case lists and machine written once,
    0.17 MB: harness.run_file), and read back as one per job."""
    from harness import results as res
    from harness import runner

    combos = runner.plan(profile="quick")
    r = runner.Runner(tmp_path, profile="quick", progress=False)
    written: list[dict] = []
    rest = r.write_idle(combos, written.append)
    idle = len(combos) - len(rest)
    assert idle > 10_000 and len(written) < idle / 10
    with res.Writer(tmp_path / "q.jsonl") as w:
        for rec in written:
            w.write(rec)
    size = (tmp_path / "q.jsonl").stat().st_size
    assert size < 300_000, size
    assert len(res.read_records(tmp_path / "q.jsonl")) == idle
