"""The run's progress bar (tqdm, where it is installed and enabled), or one that shows nothing."""

from __future__ import annotations


class _NoBar:
    def update(self, n=1):
        pass

    def set_postfix_str(self, *a, **k):
        pass

    def close(self):
        pass


def bar(total: int, enabled: bool):
    """A bar of ``total`` records (``update``, ``set_postfix_str``, ``close``)."""
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="rec", dynamic_ncols=True, disable=None, leave=False)
