"""The zoo's timm architectures: one per family of ``timm.list_models()``.

A family is the timm module a model name is registered in and the name's
leading word (``resnet`` of ``resnet18d``, ``vit`` of ``vit_tiny_patch16_224``:
:func:`family`); :func:`candidates` takes the smallest-looking name of each
(:func:`smallness`: timm's ``test_*`` models, then size words, then the
first number in the name; of the first :data:`VARIANTS` of these, the one with
the fewest parameters, counted on the meta device). It is built with ``pretrained=False`` and the
shrinking arguments its model class accepts (:func:`resolve`, probed on the
meta device, no weights drawn): 10 classes; a ViT-like class (integer
``depth``, ``embed_dim``, ``num_heads``) depth 2, width 64, 2 heads; per-stage
``depths``/``layers`` tuples of ones; ``img_size`` 64 and ``dynamic_img_size``
where the class takes them (128 when 64 is too small). The first set of arguments (:data:`ATTEMPTS`, most
shrunk first) whose model runs at every side of the sweep on the meta device
gives a case whose batch B and image side P are dynamic; else the first that
runs at a fixed side gives one whose side is static (``side``, with the reason).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

CLASSES, SIDE = 10, 64
#: the shrunk models may have this many parameters (timm's smallest resnet, resnet10t, has 5M; resnet18 11.7M)
MAX_PARAMS = 12_000_000
#: the smallest-looking names of a family whose size :func:`resolve` compares (on the meta device)
VARIANTS = 6
SWEEP = ({"b": 2, "p": 64}, {"b": 3, "p": 96}, {"b": 2, "p": 80})
#: the ViT-like shrink: a class that takes all three as integers gets these
VIT = dict(depth=2, embed_dim=64, num_heads=2)
#: size words, smallest first: a name with an earlier one is taken as the smaller variant
SIZE_WORDS = (
    "test",
    "atto",
    "femto",
    "pico",
    "nano",
    "xxs",
    "xxsmall",
    "tiny",
    "t",
    "xs",
    "xsmall",
    "mini",
    "lite",
    "small",
    "s",
    "light",
    "medium",
    "m",
    "base",
    "b",
)
#: the argument sets tried, in order (names of :func:`_shrinks`' parts)
ATTEMPTS = (
    ("vit", "depths", "img", "dynamic"),
    ("vit", "depths", "img"),
    ("depths", "img", "dynamic"),
    ("vit", "img", "dynamic"),
    ("img", "dynamic"),
    ("depths",),
    ("img",),
    ("vit", "depths", "img128"),
    ("img128",),
    (),
)


def _timm():
    return libs.load("timm")


def family(name: str, module: str) -> str:
    """``module/word``: the timm module of ``name`` and its leading letters."""
    m = re.match(r"[a-z]+", name)
    return f"{module}/{m.group(0) if m else name}"


def smallness(name: str) -> tuple:
    """A sort key: the smaller-looking variant of a family first."""
    words = re.split(r"[_\d]+", name)
    rank = min((SIZE_WORDS.index(w) for w in words if w in SIZE_WORDS), default=len(SIZE_WORDS))
    numbers = [int(n) for n in re.findall(r"\d+", name)]
    return (rank, numbers[0] if numbers else 0, len(name), name)


def candidates() -> list[dict[str, Any]]:
    """One spec per family (:func:`family`) of ``timm.list_models()``, its smallest-looking model."""
    timm = _timm()
    from timm.models import _registry

    groups: dict[str, list[str]] = {}
    for name in timm.list_models():
        groups.setdefault(family(name, _registry._model_to_module.get(name, "?")), []).append(name)
    words = [fam.split("/")[1] for fam in groups]
    out = []
    for fam, names in sorted(groups.items()):
        module, word = fam.split("/")
        arch = word if words.count(word) == 1 else module if word == module else f"{module}_{word}"
        variants = sorted(names, key=smallness)[:VARIANTS]
        out.append({"name": "zoo_timm_" + re.sub(r"[^A-Za-z0-9_]", "_", arch), "family": fam, "variants": variants})
    return out


def _shrinks(cls) -> dict[str, dict[str, Any]]:
    """The shrinking argument groups ``cls.__init__`` accepts."""
    params = inspect.signature(cls.__init__).parameters
    default = {k: p.default for k, p in params.items()}
    out: dict[str, dict[str, Any]] = {"vit": {}, "depths": {}, "img": {}, "img128": {}, "dynamic": {}}
    if all(isinstance(default.get(k), int) and not isinstance(default.get(k), bool) for k in VIT):
        out["vit"] = dict(VIT)
    for k in ("depths", "layers", "num_blocks", "stage_depths"):
        d = default.get(k)
        if isinstance(d, (tuple, list)) and d and all(isinstance(x, int) for x in d):
            out["depths"][k] = [1] * len(d)
    if "img_size" in params:
        out["img"]["img_size"] = SIDE
        out["img128"]["img_size"] = 2 * SIDE  # windowed and halo attention that 64 leaves too small
    if "dynamic_img_size" in params:
        out["dynamic"]["dynamic_img_size"] = True
    return out


def _runs(model, side: int) -> str | None:
    """Why ``model`` (on the meta device) fails on a (2, 3, side, side) batch, or ``None``."""
    import torch

    try:
        with torch.no_grad():
            out = model(torch.empty(2, 3, side, side, device="meta"))
        if tuple(out.shape) != (2, CLASSES):
            return f"output shape {tuple(out.shape)}"
    except NotImplementedError:  # an op without a meta kernel: the real run decides
        return None
    except Exception as e:
        return f"{type(e).__name__}: {zoo._one_line(e)}"
    return None


def resolve(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with the arguments (``kwargs``) its case builds with, and ``side``
    (with ``side_why``) when its image side is static: the first of :data:`ATTEMPTS`
    that builds and runs on the meta device, dynamic sides preferred."""
    import torch

    timm = _timm()
    sizes = {}
    for name in spec["variants"]:
        try:
            with torch.device("meta"):
                sizes[name] = zoo.param_count(timm.create_model(name, pretrained=False, num_classes=CLASSES))
        except Exception:
            continue
    if not sizes:
        return resolve_one({**spec, "model": spec["variants"][0]})
    return resolve_one({**spec, "model": min(sizes, key=sizes.get)})


def resolve_one(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`resolve` for the model ``spec["model"]``."""
    import torch

    timm = _timm()
    with torch.device("meta"):
        cls = type(timm.create_model(spec["model"], pretrained=False, num_classes=CLASSES))
    parts = _shrinks(cls)
    tried, fixed, errors = set(), None, []
    for attempt in ATTEMPTS:
        kwargs = {"num_classes": CLASSES}
        for part in attempt:
            kwargs.update(parts[part])
        key = tuple(sorted(kwargs))
        if key in tried:
            continue
        tried.add(key)
        try:
            with torch.device("meta"):
                model = timm.create_model(spec["model"], pretrained=False, **kwargs).eval()
        except Exception as e:
            errors.append(f"{type(e).__name__}: {zoo._one_line(e)}")
            continue
        why = [w for w in (_runs(model, s["p"]) for s in SWEEP) if w]
        if not why:
            return {**spec, "class": cls.__name__, "kwargs": kwargs}
        if fixed is None:
            size = kwargs.get("img_size") or model.pretrained_cfg.get("input_size", (3, SIDE, SIDE))[-1]
            if _runs(model, size) is None:
                fixed = {**spec, "class": cls.__name__, "kwargs": kwargs, "side": size, "side_why": why[0]}
        errors.append(why[0])
    if fixed is not None:
        return fixed
    return {**spec, "class": cls.__name__, "skipped": f"build: no argument set runs on the meta device: {errors[0]}"}


def build(model_name: str, kwargs: dict[str, Any]):
    """The seeded timm model ``model_name`` built with ``kwargs`` (lists as tuples)."""
    timm = _timm()
    args = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    return seeded(lambda: timm.create_model(model_name, pretrained=False, **args))


def _call(model, images):
    return model(images)


MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, model_name, kwargs = entry["name"], entry["model"], entry["kwargs"]
    model = MODELS.setdefault(name, Model(model_name, lambda: build(model_name, kwargs), _call))
    fixed = "side" in entry
    side = static("p", entry["side"]) if fixed else bounded("p", max=128, min=32)
    shrink = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k != "num_classes") or "its own configuration"
    return ModelCase(
        name=name,
        tags=("model", "zoo", "timm", "vision"),
        description=f"timm {model_name} ({entry.get('class', '?')}, family {entry['family']}; {shrink}; 10 classes, "
        "random weights, eval): logits of images (B, 3, P, P); "
        + (
            f"the batch is dynamic, the side fixed at {entry['side']}: {entry['side_why']}"
            if fixed
            else "the batch and the side are dynamic"
        )
        + ORACLE,
        dims=(bounded("b", max=8, min=2), static("c", 3), side),
        inputs=(Input("images", ("b", "c", "p", "p")),),
        sweep=tuple({"b": s["b"]} for s in SWEEP) if fixed else SWEEP,
        oracle=model.oracle,
        out_shape=("b", CLASSES),
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        bucket_unsupported=None if fixed else "padding the side adds zero pixels every convolution and pool takes in",
        libraries=("timm",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_timm", make)
