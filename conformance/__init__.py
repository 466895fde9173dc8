"""Conformance suites that test our reference paths (``engines/``) op by op,
from tables we did not write: :mod:`.opinfo` runs PyTorch's OpInfo database."""
