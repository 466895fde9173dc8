"""The zoo's torchvision architectures: every classification, segmentation and
video builder of ``torchvision.models.list_models`` (``torchvision.models``,
``.segmentation``, ``.video``: the spec's ``kind``).

Each builder runs as ``builder(weights=None, num_classes=10)``; the builders
whose fixed configuration is too large (:data:`MAX_PARAMS`) or cannot be
shrunk through the builder's arguments are built from their model class
with a small configuration instead (:data:`SCALED`, with the reason). The
batch B and the image side P change per call, except for the architectures
whose positional embedding fixes the side (:data:`FIXED_SIDE`). A segmentation
net returns per-pixel logits (B, 10, P, P) (its ``out``, no auxiliary head); a
video net takes clips (B, 3, T, P, P), its frame count T dynamic too.
"""

from __future__ import annotations

from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

CLASSES = 10
#: the builders' generic configuration may have this many parameters (resnet18 has 11.2M, the
#: scaled video resnets 12-15M, a ResNet-18 DeepLabV3 16M)
MAX_PARAMS = 16_000_000
SWEEP = ({"b": 2, "p": 32}, {"b": 3, "p": 48}, {"b": 2, "p": 40})
#: a video net's frame counts, one per :data:`SWEEP` entry
VIDEO_FRAMES = (4, 8, 6)
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


def _video_resnet(conv: str, stem: str):
    from torchvision.models.video import resnet as vr

    return vr.VideoResNet(vr.BasicBlock, [getattr(vr, conv)] * 4, [1, 1, 1, 1], getattr(vr, stem), num_classes=CLASSES)


def _swin3d():
    from torchvision.models.video.swin_transformer import SwinTransformer3d

    return SwinTransformer3d(
        patch_size=[2, 4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[2, 4, 4], num_classes=CLASSES
    )


def _segmentation(head: str):
    from torchvision.models import resnet18
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation import deeplabv3, fcn

    backbone = IntermediateLayerGetter(resnet18(), {"layer4": "out"})
    if head == "fcn":
        return fcn.FCN(backbone, fcn.FCNHead(512, CLASSES))
    return deeplabv3.DeepLabV3(backbone, deeplabv3.DeepLabHead(512, CLASSES))


#: builder -> (the small model's factory, why the builder's own arguments cannot shrink it)
SCALED: dict[str, tuple[Any, str]] = {
    "swin_t": (lambda: _swin(False), "swin builders fix embed_dim/depths/heads (96, [2, 2, 6, 2]); 28M parameters"),
    "swin_v2_t": (lambda: _swin(True), "swin builders fix embed_dim/depths/heads; 28M parameters"),
    "vit_b_16": (_vit, "vit builders fix 12 layers of width 768; 86M parameters"),
    "convnext_tiny": (_convnext, "convnext builders fix their block settings; 28M parameters"),
    "maxvit_t": (_maxvit, "the maxvit builder fixes its stages; 31M parameters and a 224-pixel partition grid"),
    "r3d_18": (lambda: _video_resnet("Conv3DSimple", "BasicStem"), "video resnet builders fix 2 blocks a stage; 33M parameters"),
    "mc3_18": (lambda: _video_resnet("Conv3DNoTemporal", "BasicStem"), "video resnet builders fix 2 blocks a stage; 11.7M"),
    "r2plus1d_18": (lambda: _video_resnet("Conv2Plus1D", "R2Plus1dStem"), "video resnet builders fix 2 blocks a stage; 31M"),
    "swin3d_t": (_swin3d, "swin3d builders fix embed_dim/depths/heads (96, [2, 2, 6, 2]); 28M parameters"),
    "fcn_resnet50": (lambda: _segmentation("fcn"), "the fcn builders fix a ResNet-50/101 backbone; 35M parameters"),
    "deeplabv3_resnet50": (lambda: _segmentation("deeplabv3"), "the deeplabv3 resnet builders fix ResNet-50/101; 42M"),
}
#: the builder modules enumerated, and the kind of their nets
KINDS = {"": "classification", "segmentation": "segmentation", "video": "video"}


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
    for sub, kind in KINDS.items():
        module = getattr(torchvision.models, sub) if sub else torchvision.models
        for builder in torchvision.models.list_models(module=module):
            out.append({"name": f"zoo_tv_{builder}", "builder": builder, "kind": kind})
    for spec in out:
        builder = spec["builder"]
        if builder in SCALED:
            spec["scaled"] = SCALED[builder][1]
        if builder in FIXED_SIDE:
            spec["side"] = FIXED_SIDE[builder]
    rank = {b: i for i, b in enumerate(FIRST)}
    return sorted(out, key=lambda spec: rank.get(spec["builder"], len(FIRST)))


def build(builder: str):
    """The seeded model of ``builder``: :data:`SCALED`'s small one, else the builder's own (10 classes)."""
    libs.load("torchvision")
    import torchvision.models

    if builder in SCALED:
        return seeded(SCALED[builder][0])
    kwargs = dict(weights_backbone=None, aux_loss=False) if builder in SEGMENTATION else {}
    return seeded(lambda: torchvision.models.get_model(builder, weights=None, num_classes=CLASSES, **kwargs))


#: the segmentation builders (they take ``weights_backbone`` and ``aux_loss`` too)
SEGMENTATION = (
    "deeplabv3_mobilenet_v3_large",
    "deeplabv3_resnet101",
    "deeplabv3_resnet50",
    "fcn_resnet101",
    "fcn_resnet50",
    "lraspp_mobilenet_v3_large",
)


def _call(model, images):
    return model(images)


def _segment(model, images):
    return model(images)["out"]


MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, builder, kind = entry["name"], entry["builder"], entry.get("kind", "classification")
    model = MODELS.setdefault(name, Model(builder, lambda: build(builder), _segment if kind == "segmentation" else _call))
    fixed = "side" in entry
    side = static("p", 32) if fixed else bounded("p", max=64, min=32)
    dims = (bounded("b", max=8, min=2), static("c", 3), side)
    sweep = tuple({"b": s["b"]} for s in SWEEP) if fixed else SWEEP
    images, out_shape, what = ("b", "c", "p", "p"), ("b", CLASSES), "logits of images (B, 3, P, P)"
    if kind == "video":
        dims = (*dims, bounded("t", max=8, min=2))
        sweep = tuple(dict(s, t=t) for s, t in zip(sweep, VIDEO_FRAMES, strict=True))
        images, what = ("b", "c", "t", "p", "p"), "logits of clips (B, 3, T, P, P), T dynamic too"
    elif kind == "segmentation":
        out_shape, what = ("b", CLASSES, "p", "p"), "per-pixel logits (B, 10, P, P) of images (B, 3, P, P)"
    return ModelCase(
        name=name,
        tags=("model", "zoo", "torchvision", "vision", "conv", kind),
        description=f"torchvision {builder} ({'scaled down: ' + entry['scaled'] if 'scaled' in entry else 'its builder'}, "
        f"10 classes, random weights, eval): {what}; "
        + ("the batch is dynamic, the side fixed: " + entry["side"] if fixed else "the batch and the side are dynamic")
        + ORACLE,
        dims=dims,
        inputs=(Input("images", images),),
        sweep=sweep,
        oracle=model.oracle,
        out_shape=out_shape,
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        bucket_unsupported=None if fixed else "padding the side adds zero pixels every convolution and pool takes in",
        libraries=("torchvision",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_tv", make)
