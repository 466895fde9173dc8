"""Beyond one machine: --shard i/n, merge, and jobs on a Dask LocalCluster."""

import pytest
from synthetic import job

from harness import cli, results, runner, shards


def _jobs(df):
    return set(map(tuple, df[["case", "backend", "mode"]].drop_duplicates().to_numpy()))


def test_shards_partition_the_plan_deterministically():
    combos = runner.plan()
    parts = [shards.select(combos, i, 3) for i in (1, 2, 3)]
    ids = [c.id for p in parts for c in p]
    assert sorted(ids) == sorted(c.id for c in combos) and len(ids) == len(set(ids))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [c.id for c in shards.select(list(reversed(combos)), 2, 3)] == [c.id for c in parts[1]]
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(shards.ShardError, match=r"give i/n with 1 <= i <= n"):
            shards.parse(bad)


def test_run_shard_1_2_and_2_2_merged_equal_a_full_run(tmp_path, capsys):
    # jobs that need no worker (neither offers an unbounded mode): fast, and a real plan
    sel = ["--backends", "einx,jax_jit", "--modes", "unbounded", "--no-progress"]
    assert cli.main(["run", *sel, "--out", str(tmp_path / "full")]) == 0
    assert cli.main(["run", *sel, "--shard", "1/2", "--out", str(tmp_path / "m1")]) == 0
    assert cli.main(["run", *sel, "--shard", "2/2", "--out", str(tmp_path / "m2")]) == 0
    out = tmp_path / "merged.jsonl"
    assert cli.main(["merge", str(tmp_path / "m1"), str(tmp_path / "m2"), "--out", str(out)]) == 0
    full, merged = results.load([tmp_path / "full"]), results.load([out])
    assert _jobs(merged) == _jobs(full) and len(merged) == len(full)
    assert merged["run_id"].nunique() == 1
    shard1 = results.load([tmp_path / "m1"])
    assert 0 < len(shard1) < len(full)
    # a shard merged twice is refused
    assert cli.main(["merge", str(tmp_path / "m1"), str(tmp_path / "m1"), "--out", str(tmp_path / "twice.jsonl")]) == 2
    assert "is in both" in capsys.readouterr().err


def test_merge_keeps_machines_apart_and_refuses_other_commits(tmp_path):
    for name, host, commit in (("a", "m1", "c1"), ("b", "m2", "c1"), ("c", "m3", "c2")):
        with results.Writer(tmp_path / f"{name}.jsonl") as w:
            for r in job("c", "torch_eager", "static", [1e-3], [1e-5], [0], run_id=name):
                w.write(dict(r, machine={"host": host}, commit=commit))
    out, n = shards.merge([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "ab.jsonl", run_id="ab")
    df = results.load([out], flatten=True)
    assert n == 4 and set(df["machine"]) == {"m1", "m2"} and set(df["run_id"]) == {"ab"}
    from harness import report

    assert len(report.summary(df)) == 2  # one job per machine
    with pytest.raises(results.ResultsError, match=r"differ in commit \(c1, c2\)"):
        shards.merge([tmp_path / "a.jsonl", tmp_path / "c.jsonl"], tmp_path / "ac.jsonl")
    assert shards.merge([tmp_path / "a.jsonl", tmp_path / "c.jsonl"], tmp_path / "ac.jsonl", force=True)[1] == 4


def test_two_jobs_through_a_dask_local_cluster(tmp_path):
    pytest.importorskip("distributed", reason="the 'distributed' extra is not installed (make setup installs it)")
    assert (
        cli.main(
            [
                "run",
                "--cases",
                "gnn_edge_divide",
                "--backends",
                "torch_eager",
                "--modes",
                "static,unbounded",
                "--repeats",
                "2",
                "--no-progress",
                "--out",
                str(tmp_path),
                "--scheduler",
                "--jobs",
                "2",
            ]
        )
        == 0
    )
    df = results.load([tmp_path])
    assert _jobs(df) == {("gnn_edge_divide", "torch_eager", "static"), ("gnn_edge_divide", "torch_eager", "unbounded")}
    assert len(df) == 12 and set(df["status"]) == {"pass"}
    # the nodes fork from a zygote that preloads what the run's backends name (eager: no warm-up steps)
    starts = [m["worker_start"] for m in df["machine"]]
    assert {s["how"] for s in starts} == {"fork"} and all(s["zygote_steps"] == [] for s in starts)
    # every record names the node (host and Dask worker) that ran it
    assert df["node"].str.contains(r"\(tcp://").all() and df["node"].nunique() in (1, 2)
