"""asv benchmarks (``benchmark_dir`` in asv.conf.json)."""
