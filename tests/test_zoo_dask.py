"""Zoo jobs run on a two-worker Dask LocalCluster get the verdicts a local run gives:
per job its status, the stage it stopped at, whether it compiled once, its largest
stage count and the shapes that compiled (``harness.zoo_table.jobs``), for the goal
rows of both reference paths."""

from benchmarks import bench_zoo
from harness import cluster, results, runner, zoo_table

#: two small architectures; torch.export refuses to keep ShuffleNet's side dynamic (its
#: guard on the channel split), so not every verdict is a pass
CASES = "zoo_pyg_gcnconv_node,zoo_tv_shufflenet_v2_x0_5"
VERDICT = ("status", "stage", "once", "max_stage", "compiled_shapes", "shapes")


def _verdicts(path):
    return {(j["case"], j["backend"], j["mode"]): tuple(j[k] for k in VERDICT) for j in zoo_table.jobs(results.load([path]))}


def test_a_two_worker_cluster_gives_the_verdicts_of_a_local_run(tmp_path):
    combos = [c for b, m in bench_zoo.goal_rows() for c in runner.plan(CASES, b, m, profile="zoo")]
    settings = dict(profile="zoo", repeats=1, warmup=0, progress=False)
    local = runner.Runner(tmp_path / "local", **settings).run(combos, jobs=2)
    on_cluster = cluster.run(runner.Runner(tmp_path / "dask", **settings), combos, None, jobs=2)

    got, want = _verdicts(on_cluster), _verdicts(local)
    assert len(want) == len(combos) == 8
    assert got == want
    assert {r["node"] for r in results.read_records(on_cluster)} - {None}, "the cluster's records name their worker"
    assert {v[0] for v in want.values()} != {"pass"}, "every job passed: the comparison sees no failure"
