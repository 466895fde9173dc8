"""``benchmarks/scripts/lazy.py``'s pooled samples and Markdown table (no timing: canned samples), and its
steps that split a cached step."""

from benchmarks.scripts import lazy as bench


def test_processes_pool_their_samples_and_failures(monkeypatch):
    runs = iter([({"c": {"eager": [1.0], "lazy": [3.0]}}, {}), ({"c": {"eager": [2.0], "lazy": [5.0]}}, {("c", "x"): "why"})])
    monkeypatch.setattr(bench, "measure", lambda *a: next(runs))
    pooled, failures = bench.samples(["c"], ["eager", "lazy"], 1, "cpu", processes=2)
    assert pooled == {"c": {"eager": [1.0, 2.0], "lazy": [3.0, 5.0]}} and failures == {("c", "x"): "why"}


def test_the_markdown_table_has_median_iqr_and_ratio_to_eager():
    pooled = {"c": {"eager": [1e-6, 2e-6, 3e-6], "lazy": [3e-6, 4e-6, 9e-6], "torch_lazy_ts": []}}
    assert bench.markdown(["c"], pooled).splitlines()[2:] == [
        "| c | eager | 2.0 | 2.0 | 1.00 | 3 |",
        "| c | lazy | 4.0 | 6.0 | 2.00 | 3 |",
        "| c | torch_lazy_ts | - | - | - | 0 |",
    ]


def test_geometric_means_over_the_zoo_and_the_rest_count_cases_every_path_ran():
    pooled = {
        "zoo_a": {"eager": [1.0], "lazy": [2.0], "lazy_before": [4.0]},
        "zoo_b": {"eager": [1.0], "lazy": [8.0], "lazy_before": [4.0]},
        "zoo_c": {"eager": [1.0], "lazy": [], "lazy_before": [3.0]},  # (lazy failed: left out)
        "seed": {"eager": [2.0], "lazy": [3.0], "lazy_before": [5.0]},
    }
    assert bench.geomeans(list(pooled), pooled) == [
        "# zoo: lazy x eager, geometric mean over 2 cases: 4.00",
        "# zoo: lazy_before x eager, geometric mean over 2 cases: 4.00",
        "# catalogue: lazy x eager, geometric mean over 1 cases: 1.50",
        "# catalogue: lazy_before x eager, geometric mean over 1 cases: 2.50",
    ]


def test_record_and_kernel_split_a_step():
    """``record`` (the recording alone) runs step after step without compiling again, and
    ``kernel`` is the step's compiled kernel: eager's values."""
    import torch

    kernel, args = bench.make_step("gnn_edge_divide", "kernel")
    eager, _ = bench.make_step("gnn_edge_divide", "eager")
    (out,) = kernel(*args)
    torch.testing.assert_close(out, eager(*args))
    record, args = bench.make_step("gnn_edge_divide", "record")
    ctx = record.__closure__[0].cell_contents  # (the step's lazy context)
    for _ in range(3):
        assert record(*args) is None
    assert ctx.compiles() == 1 and ctx.stats["trace"] == 1 and ctx.tape.keyed is not None  # (no sync since)
