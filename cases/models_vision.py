"""Vision models: a transformers ViT and torchvision's ResNet-18; the batch B
(and, for the ResNet, the image side P) change per call.

Builders (:func:`vit`, :func:`resnet18`) return the library's model class with
seeded random weights (:data:`cases.models_base.SEED`), eval mode (batch norm
uses its running statistics), parameters frozen.
"""

from __future__ import annotations

from . import libs
from .model import Input, Tolerance, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

#: a ViT on 32x32 images in 8x8 patches: 16 patches and the class token
VIT_CONFIG = dict(
    image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
)
CLASSES = 10
MAX_B = 8


def vit_config(**overrides):
    """transformers' ``ViTConfig`` of the case (:data:`VIT_CONFIG`), with ``overrides``."""
    return libs.load("transformers").ViTConfig(**{**VIT_CONFIG, **overrides})


def vit(config=None):
    """A seeded ``ViTModel`` without its pooler (``config``: :func:`vit_config` by default)."""
    tr = libs.load("transformers")
    return seeded(lambda: tr.ViTModel(config or vit_config(), add_pooling_layer=False))


def resnet18(num_classes: int = CLASSES, layers: tuple = (2, 2, 2, 2)):
    """A seeded torchvision ``resnet18`` (no pretrained weights) with ``num_classes`` outputs;
    ``layers`` other than resnet18's own ``(2, 2, 2, 2)`` builds ``ResNet(BasicBlock, layers)``
    (the StableHLO model tests take ``(1, 1, 1, 1)``: fewer inlined constants)."""
    libs.load("torchvision")
    import torchvision.models
    from torchvision.models.resnet import BasicBlock, ResNet

    if tuple(layers) == (2, 2, 2, 2):
        return seeded(lambda: torchvision.models.resnet18(weights=None, num_classes=num_classes))
    return seeded(lambda: ResNet(BasicBlock, list(layers), num_classes=num_classes))


def _vit_forward(model, pixel_values):
    return model(pixel_values=pixel_values).last_hidden_state


def _call(model, x):
    return model(x)


VIT = Model("vit", vit, _vit_forward)
RESNET18 = Model("resnet18", resnet18, _call)

model_vit = ModelCase(
    name="model_vit",
    tags=("model", "transformers", "vision", "attention"),
    description="transformers ViTModel (32x32 images, 8x8 patches, 2 layers, hidden 32, no pooler): last hidden "
    "state (B, 17, 32) of pixel_values (B, 3, 32, 32); the batch is dynamic, the image size fixed" + ORACLE,
    dims=(bounded("b", max=MAX_B, min=2), static("c", 3), static("p", 32)),
    inputs=(Input("pixel_values", ("b", "c", "p", "p")),),
    sweep=({"b": 2}, {"b": 5}, {"b": 3}, {"b": 7}),
    oracle=VIT.oracle,
    out_shape=("b", 17, 32),
    torch_fn=VIT.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 2.3e-06;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 3e-05),
    libraries=("transformers",),
)

model_resnet18 = ModelCase(
    name="model_resnet18",
    tags=("model", "torchvision", "vision", "conv"),
    description="torchvision resnet18 (10 classes, random weights, eval): logits of images (B, 3, 32, 32); "
    "the batch is dynamic" + ORACLE,
    dims=(bounded("b", max=MAX_B, min=2), static("c", 3), static("p", 32)),
    inputs=(Input("images", ("b", "c", "p", "p")),),
    sweep=({"b": 2}, {"b": 5}, {"b": 3}, {"b": 7}),
    oracle=RESNET18.oracle,
    out_shape=("b", CLASSES),
    torch_fn=RESNET18.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 4.5e-07;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 5e-06),
    libraries=("torchvision",),
)

model_resnet18_hw = ModelCase(
    name="model_resnet18_hw",
    tags=("model", "torchvision", "vision", "conv", "image-size"),
    description="torchvision resnet18 (10 classes, random weights, eval): logits of images (B, 3, P, P); the "
    "batch and the image side change per call (adaptive average pooling takes any side)" + ORACLE,
    dims=(bounded("b", max=MAX_B, min=2), static("c", 3), bounded("p", max=64, min=32)),
    inputs=(Input("images", ("b", "c", "p", "p")),),
    sweep=({"b": 2, "p": 32}, {"b": 3, "p": 48}, {"b": 2, "p": 40}, {"b": 4, "p": 56}),
    oracle=RESNET18.oracle,
    out_shape=("b", CLASSES),
    torch_fn=RESNET18.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 5.1e-07;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 6e-06),
    # zero rows and columns past the image change what every conv and the average pool see
    bucket_unsupported="padding the image side adds zero pixels that the convolutions and the adaptive average pool take in",
    libraries=("torchvision",),
)

CASES = (model_vit, model_resnet18, model_resnet18_hw)
