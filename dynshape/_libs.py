"""Make the model libraries importable as a user imports them.

torchvision's wheel next to the CPU torch of the main environment fails on
``import torchvision`` ("operator torchvision::nms does not exist",
:mod:`cases.libs`), and transformers imports it. ``import dynshape`` puts a
finder first on ``sys.meta_path`` that applies :mod:`cases.libs`' fix the moment
torchvision is first imported, then steps aside: no torch import before that.
"""

from __future__ import annotations

import sys


class _TorchvisionFix:
    def find_spec(self, name, path=None, target=None):
        if name == "torchvision":
            with_fix()
        return None  # the ordinary finders find it


def with_fix() -> None:
    """Remove the finder and apply :func:`cases.libs._define_torchvision_schemas`."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchvisionFix)]
    from cases import libs

    libs._define_torchvision_schemas()


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once), unless torchvision is imported already."""
    if "torchvision" not in sys.modules and not any(isinstance(f, _TorchvisionFix) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchvisionFix())
