"""One set of weights per model case, shared by every environment.

The same seed gives different weights under different library versions
(torchvision 0.24 in ``.venv-xla``, 0.28 in the main environment), so a model
built in each environment would not be one model. The harness (the main
environment) therefore saves a case's float32 weights once,
``results/.cache/weights/<case>.pt`` keyed by the case and the library
versions that made them (:func:`ensure`, rewritten when those versions
change), and every process that builds the model loads them when the file is
there (:func:`shared`). A user's module (``dynshape.case``) is saved as built, on
every run (``cases.models_base.publish_weights``): each worker rebuilds it with weights of its own
draw. ``DYNSHAPE_WEIGHTS_DIR`` moves the directory.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from . import libs

ENV = "DYNSHAPE_WEIGHTS_DIR"


def directory() -> Path:
    """Where weights live: ``$DYNSHAPE_WEIGHTS_DIR``, else ``results/.cache/weights`` of the checkout."""
    return Path(os.environ.get(ENV) or Path(__file__).resolve().parent.parent / "results" / ".cache" / "weights")


def path(case: str) -> Path:
    return directory() / f"{case}.pt"


def key(case: str) -> dict:
    """The case and the versions of torch and the model libraries installed here."""
    versions = {}
    for dist in ("torch", *libs.LIBRARIES):
        try:
            versions[dist] = metadata.version(dist.replace("_", "-"))
        except metadata.PackageNotFoundError:
            pass
    return {"case": case, "versions": versions}


def save(case: str, model: Any) -> Path:
    """Write ``model``'s state_dict (and :func:`key`) atomically; return the path."""
    import torch

    target = path(case)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    torch.save({"key": key(case), "state_dict": model.state_dict()}, tmp)
    os.replace(tmp, target)
    return target


def ensure(case: str, build) -> Path:
    """Save the weights of ``build()`` unless the file holds this environment's key already
    (called by the main environment before another environment runs the case)."""
    stored = _read(case)
    if stored is None or stored.get("key") != key(case):
        return save(case, build())
    return path(case)


def shared(case: str, model: Any) -> Any:
    """``model`` with the saved weights of ``case`` loaded, when a file for it
    exists with the same parameter names and shapes; else ``model`` as built."""
    stored = _read(case)
    if stored is None or stored.get("key", {}).get("case") != case:
        return model
    state = stored["state_dict"]
    mine = model.state_dict()
    if {k: tuple(v.shape) for k, v in state.items()} != {k: tuple(v.shape) for k, v in mine.items()}:
        return model
    model.load_state_dict(state)
    return model


def digest(model: Any) -> str:
    """A hash of ``model``'s state_dict (names, dtypes, values): equal across environments iff the weights are."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(str(t.dtype).encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def _read(case: str) -> dict | None:
    p = path(case)
    if not p.is_file():
        return None
    import torch

    try:
        return torch.load(p, map_location="cpu", weights_only=True)
    except Exception:  # a torn or foreign file is rewritten by the next ensure
        return None
