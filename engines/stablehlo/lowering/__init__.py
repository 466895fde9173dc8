"""torch.export programs to StableHLO text with `?` and bounded dims: the
builder, the op registry and its lowerings (``ops/``), element types, symbolic
sizes as scalar ops, and the MLIR verifier. Imports nothing of ``execution``."""
