"""Fixtures shared by the lazy tests."""

import pytest

import engines.lazy as L


@pytest.fixture
def torch_function_calls(monkeypatch) -> list:
    """The names of the torch functions that reach ``LazyTensor.__torch_function__`` (appended as they do)."""
    seen: list = []
    tf = L.LazyTensor.__torch_function__.__func__

    def counting(cls, func, types, args=(), kwargs=None):
        seen.append(getattr(func, "__name__", func))
        return tf(cls, func, types, args, kwargs)

    monkeypatch.setattr(L.LazyTensor, "__torch_function__", classmethod(counting))
    return seen
