"""Running StableHLO text: the module wrapper, XLA programs (refined per shape,
bounded through XLA's dynamic padder, or bucketed), the reference interpreter in
a worker process, and jax.export's modules on the same executor."""
