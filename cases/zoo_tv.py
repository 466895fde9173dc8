"""The zoo's torchvision architectures: every classification builder of
``torchvision.models.list_models(module=torchvision.models)``.

Each builder runs as ``builder(weights=None, num_classes=10)``; the builders
whose fixed configuration is too large (:data:`MAX_PARAMS`) or cannot be
shrunk through the builder's arguments are built from their model class
with a small configuration instead (:data:`SCALED`, with the reason). The
batch B and the image side P change per call, except for the architectures
whose positional embedding fixes the side (:data:`FIXED_SIDE`).
"""

from __future__ import annotations

from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

CLASSES = 10
#: the builders' generic configuration may have this many parameters (resnet18 has 11.2M)
MAX_PARAMS = 12_000_000
SWEEP = ({"b": 2, "p": 32}, {"b": 3, "p": 48}, {"b": 2, "p": 40})
#: builder -> why its image side is static (32)
FIXED_SIDE = {
    "vit_b_16": "torchvision's VisionTransformer asserts the image size it was built for",
    "vit_b_32": "torchvision's VisionTransformer asserts the image size it was built for",
    "vit_l_16": "torchvision's VisionTransformer asserts the image size it was built for",
    "vit_l_32": "torchvision's VisionTransformer asserts the image size it was built for",
    "vit_h_14": "torchvision's VisionTransformer asserts the image size it was built for",
    "maxvit_t": "MaxViT's partitions need the side a multiple of its grid at every stage",
}


def _swin(v2: bool):
    from torchvision.models import swin_transformer as st

    extra = dict(block=st.SwinTransformerBlockV2, downsample_layer=st.PatchMergingV2) if v2 else {}
    return st.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[4, 4], num_classes=CLASSES, **extra
    )


def _vit():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=CLASSES
    )


def _convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=CLASSES)


def _maxvit():
    from torchvision.models.maxvit import MaxVit

    return MaxVit(
        input_size=(32, 32),
        stem_channels=16,
        partition_size=2,
        block_channels=[16, 32],
        block_layers=[1, 1],
        head_dim=8,
        stochastic_depth_prob=0.0,
        num_classes=CLASSES,
    )


#: builder -> (the small model's factory, why the builder's own arguments cannot shrink it)
SCALED: dict[str, tuple[Any, str]] = {
    "swin_t": (lambda: _swin(False), "swin builders fix embed_dim/depths/heads (96, [2, 2, 6, 2]); 28M parameters"),
    "swin_v2_t": (lambda: _swin(True), "swin builders fix embed_dim/depths/heads; 28M parameters"),
    "vit_b_16": (_vit, "vit builders fix 12 layers of width 768; 86M parameters"),
    "convnext_tiny": (_convnext, "convnext builders fix their block settings; 28M parameters"),
    "maxvit_t": (_maxvit, "the maxvit builder fixes its stages; 31M parameters and a 224-pixel partition grid"),
}


#: probed first: small or cheap nets of every construct (depthwise convs, channel shuffle, squeeze-
#: excitation, inception branches, dense blocks, windowed and global attention), so that a probe cut
#: short by its budget still samples them (alphabetical order reaches the costly families first)
FIRST = (
    "resnet18",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "shufflenet_v2_x0_5",
    "squeezenet1_1",
    "mnasnet0_5",
    "regnet_x_400mf",
    "regnet_y_400mf",
    "googlenet",
    "swin_t",
    "swin_v2_t",
    "vit_b_16",
    "convnext_tiny",
    "maxvit_t",
    "efficientnet_b0",
    "densenet121",
)


def candidates() -> list[dict[str, Any]]:
    """One spec per classification builder, :data:`FIRST` first (imports torchvision)."""
    libs.load("torchvision")
    import torchvision.models

    out = []
    for builder in torchvision.models.list_models(module=torchvision.models):
        spec: dict[str, Any] = {"name": f"zoo_tv_{builder}", "builder": builder}
        if builder in SCALED:
            spec["scaled"] = SCALED[builder][1]
        if builder in FIXED_SIDE:
            spec["side"] = FIXED_SIDE[builder]
        out.append(spec)
    rank = {b: i for i, b in enumerate(FIRST)}
    return sorted(out, key=lambda spec: rank.get(spec["builder"], len(FIRST)))


def build(builder: str):
    """The seeded model of ``builder``: :data:`SCALED`'s small one, else the builder's own (10 classes)."""
    libs.load("torchvision")
    import torchvision.models

    if builder in SCALED:
        return seeded(SCALED[builder][0])
    return seeded(lambda: torchvision.models.get_model(builder, weights=None, num_classes=CLASSES))


def _call(model, images):
    return model(images)


MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, builder = entry["name"], entry["builder"]
    model = MODELS.setdefault(name, Model(builder, lambda: build(builder), _call))
    fixed = "side" in entry
    side = static("p", 32) if fixed else bounded("p", max=64, min=32)
    return ModelCase(
        name=name,
        tags=("model", "zoo", "torchvision", "vision", "conv"),
        description=f"torchvision {builder} ({'scaled down: ' + entry['scaled'] if 'scaled' in entry else 'its builder'}, "
        f"10 classes, random weights, eval): logits of images (B, 3, P, P); "
        + ("the batch is dynamic, the side fixed: " + entry["side"] if fixed else "the batch and the side are dynamic")
        + ORACLE,
        dims=(bounded("b", max=8, min=2), static("c", 3), side),
        inputs=(Input("images", ("b", "c", "p", "p")),),
        sweep=tuple({"b": s["b"]} for s in SWEEP) if fixed else SWEEP,
        oracle=model.oracle,
        out_shape=("b", CLASSES),
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        bucket_unsupported=None if fixed else "padding the side adds zero pixels every convolution and pool takes in",
        libraries=("torchvision",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_tv", make)
