"""The asv benchmark of the zoo's pass rates: its sample, its rows, and its incremental run."""

from benchmarks import bench_zoo
from harness import results
from harness.zoo_table import LIBRARY_ORDER, library_of


def test_the_default_sample_spreads_over_every_library_and_is_stable():
    import cases

    names = [c.name for c in cases.catalogue()]
    got = bench_zoo.sample(names)
    assert got == bench_zoo.sample(list(reversed(names)))  # the catalogue's order does not matter
    assert [library_of(n) for n in got] == [lib for lib in LIBRARY_ORDER for _ in range(bench_zoo.PER_LIBRARY)]
    # spread, not the first names of each library
    tv = sorted(n for n in names if library_of(n) == "torchvision")
    assert [n for n in got if n.startswith("zoo_tv_")] == [tv[0], tv[len(tv) // 3], tv[2 * len(tv) // 3]]


def test_globs_replace_the_sample(monkeypatch):
    monkeypatch.setenv("DYNSHAPE_ASV_ZOO", "zoo_pyg_gcnconv_*, zoo_diff_unet1d")
    assert sorted(bench_zoo.selected()) == ["zoo_diff_unet1d", "zoo_pyg_gcnconv_graph", "zoo_pyg_gcnconv_node"]


def test_the_rows_are_each_goal_path_beside_its_denominator():
    assert bench_zoo.goal_rows() == [
        ("stablehlo_xla", "bounded"),
        ("torch_export", "bounded"),
        ("lazy", "unbounded"),
        ("torch_eager", "unbounded"),
    ]


def test_the_goals_are_read_off_a_real_run_and_a_second_commit_reuses_it(tmp_path, monkeypatch):
    """Both paths hold GCNConv (node model): 100% of 1 carried, nothing wrong. The run
    again with nothing changed reruns no job and reads the same goal lines; the
    benchmark class reports them."""
    out = str(tmp_path / "zoo")
    first = bench_zoo.run_goals(["zoo_pyg_gcnconv_node"], out, jobs=2)
    assert set(first) == set(bench_zoo.PATHS)
    for path in bench_zoo.PATHS:
        assert (first[path]["carried"], first[path]["held"], first[path]["wrong_or_run_error"]) == (1, 1, [])
    assert first["lazy"]["ran"] == first["lazy"]["planned"] == 4

    again = bench_zoo.run_goals(["zoo_pyg_gcnconv_node"], out, jobs=2)
    assert again["lazy"]["ran"] == 0 and again["lazy"]["run"] != first["lazy"]["run"]
    recs = results.read_records(again["lazy"]["run"])
    assert recs and all(r.get("reused_from") for r in recs)
    for path in bench_zoo.PATHS:
        assert {k: again[path][k] for k in ("carried", "held", "share")} == {
            k: first[path][k] for k in ("carried", "held", "share")
        }

    monkeypatch.setenv("DYNSHAPE_ASV_ZOO", "zoo_pyg_gcnconv_node")
    monkeypatch.setenv("DYNSHAPE_ASV_ZOO_OUT", out)
    bench = bench_zoo.ZooGoals()
    goals = bench.setup_cache()
    bench.setup(goals, "lazy")
    assert (bench.track_held(goals, "lazy"), bench.track_carried(goals, "lazy"), bench.track_wrong(goals, "lazy")) == (
        100.0,
        1,
        0,
    )
