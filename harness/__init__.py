"""dynshape: a benchmark-and-conformance harness for dynamic-shape tensor programs."""

__version__ = "0.1.0"
