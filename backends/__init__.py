"""Backends: one module per system under test, registered through the
``dynshape.backends`` entry-point group. See ``backends.base``."""
