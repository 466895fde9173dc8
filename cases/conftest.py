"""Shared fixtures of the conformance gate."""

import pytest

from harness import expectations


@pytest.fixture(scope="session")
def rules():
    return expectations.load()
