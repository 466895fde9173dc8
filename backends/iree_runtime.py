"""What every IREE backend's descriptor shares: the worker's one ``local-task``
runtime config, made at startup (its device holds every job's arrays)."""

from __future__ import annotations

from typing import Any


class IreeRuntime:
    """Backend mixin (before the backend class): ``self.config``, the worker's ``iree.runtime.Config``."""

    def __init__(self):
        super().__init__()
        #: the worker's one ``local-task`` runtime config (its device holds every job's arrays)
        self.config: Any = None

    def startup(self):
        super().startup()
        self.runtime_config()

    def runtime_config(self):
        """The worker's ``iree.runtime.Config`` (made on first use)."""
        import iree.runtime as rt

        if self.config is None:
            self.config = rt.Config("local-task")
        return self.config
