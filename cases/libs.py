"""The model libraries behind the ``models`` cases (transformers, torchvision,
torch_geometric; timm and diffusers for the zoo), imported only through :func:`load`.

torchvision's PyPI wheel for torch 2.13.0 is a CUDA build: next to the CPU
torch its C extension cannot load (``libc10_cuda.so`` is missing), and
torchvision 0.28's ``_meta_registrations`` then registers fake kernels for
``torchvision::nms`` and ``qnms`` without checking that the ops exist, so
``import torchvision`` (and transformers, which imports it when installed)
fails with "operator torchvision::nms does not exist". The model zoo itself is
pure Python: when the extension cannot load, :func:`load` first defines those
two schemas (no kernels; calling them raises), after which ``torchvision.models``
imports and runs. When the extension loads, nothing is defined: so in
``.venv-xla`` (requirements-xla.txt: torchvision 0.24.1, the release for its
torch 2.9.1, whose CUDA extension loads next to that CUDA torch).
"""

from __future__ import annotations

import importlib
import importlib.util
import os

#: import name -> the ``models`` extra's requirement (pyproject.toml)
LIBRARIES = {
    "transformers": "transformers==5.24.0",
    "torchvision": "torchvision==0.28.0",
    "torch_geometric": "torch_geometric==2.8.1",
    "timm": "timm==1.0.31",
    "diffusers": "diffusers==0.42.1",
}

_patched = False


def missing(*names: str) -> list[str]:
    """The requirements of ``names`` that are not installed (no import)."""
    return [LIBRARIES[n] for n in names if importlib.util.find_spec(n) is None]


def _define_torchvision_schemas() -> None:
    """Define ``torchvision::nms``/``qnms`` when torchvision's C extension cannot load."""
    global _patched
    if _patched:
        return
    _patched = True
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    import torch

    lib = os.path.join(next(iter(spec.submodule_search_locations)), "_C.so")
    try:
        torch.ops.load_library(lib)
        return
    except (OSError, RuntimeError):
        pass
    for op in ("nms", "qnms"):
        try:
            torch.library.define(f"torchvision::{op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:  # already defined in this process
            pass


#: what the model libraries run with (configs only: nothing is downloaded). Every
#: job's worker gets these too (harness.job_env), so that a process that loaded a
#: library starts its jobs with the environment of one that did not
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}


def load(name: str):
    """Import the model library ``name`` (a key of :data:`LIBRARIES`), after the
    torchvision fix above; ImportError names the requirement when it is missing."""
    if name not in LIBRARIES:
        raise KeyError(f"unknown model library {name!r} (known: {', '.join(LIBRARIES)})")
    if importlib.util.find_spec(name) is None:
        raise ImportError(f"{name} is not installed: `make setup` installs the models extra ({LIBRARIES[name]})")
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    _define_torchvision_schemas()
    return importlib.import_module(name)


#: the fork server's warm-up step of each library (``module:function``): a zygote for a run whose
#: cases need it imports it once (``harness.forkserver.preload_of``), not every job (transformers took
#: 20-48 s of each zoo job's prepare on the loaded 2-core machine before)
PRELOAD_STEPS = {name: f"cases.libs:preload_{name}" for name in LIBRARIES}


def preload_transformers() -> None:
    load("transformers")


def preload_torchvision() -> None:
    load("torchvision")


def preload_torch_geometric() -> None:
    load("torch_geometric")


def preload_timm() -> None:
    load("timm")


def preload_diffusers() -> None:
    load("diffusers")
