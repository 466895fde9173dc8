"""The zoo's diffusers architectures: the denoisers and autoencoders that build tiny from a config.

diffusers has no registry of small configurations, so :data:`CONFIGS` names
each model class with a tiny config of its own arguments (channels 32 or 64,
one or two blocks, one layer, 2 heads) and its kind, which fixes what its
forward takes (:data:`LAYOUT`): a denoiser takes a timestep per sample
(float, in [0, 1000)), a conditioned one also text states (B, S, 32), a
class-conditioned one a label per sample; an autoencoder reconstructs its
image. The batch B and the image or latent side P (the length L of a 1-D
UNet) are dynamic, and the text length S of a conditioned one.
"""

from __future__ import annotations

from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

#: the width of the text states a conditioned denoiser attends to
TEXT = 32
_UNET_BLOCKS = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
_VAE = dict(
    in_channels=3,
    out_channels=3,
    down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
    up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
    block_out_channels=(32, 64),
    layers_per_block=1,
    latent_channels=4,
    norm_num_groups=8,
)
#: class name -> (kind, config, what it is)
CONFIGS: dict[str, tuple[str, dict[str, Any], str]] = {
    "UNet2DModel": (
        "unet2d",
        dict(
            sample_size=32,
            in_channels=3,
            out_channels=3,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
            attention_head_dim=8,
            **_UNET_BLOCKS,
        ),
        "the DDPM pixel denoiser (resnet blocks, self-attention at the low resolution)",
    ),
    "UNet2DConditionModel": (
        "cond2d",
        dict(
            sample_size=16,
            in_channels=4,
            out_channels=4,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=TEXT,
            attention_head_dim=8,
            **_UNET_BLOCKS,
        ),
        "the Stable Diffusion latent denoiser (cross-attention to text states)",
    ),
    "UNet1DModel": (
        "unet1d",
        dict(
            sample_size=64,
            in_channels=2,
            out_channels=2,
            extra_in_channels=64,  # the Fourier time embedding's width (2 x 32), repeated along L
            block_out_channels=(32, 32, 64),
            down_block_types=("DownBlock1DNoSkip", "DownBlock1D", "AttnDownBlock1D"),
            up_block_types=("AttnUpBlock1D", "UpBlock1D", "UpBlock1DNoSkip"),
            mid_block_type="UNetMidBlock1D",
            use_timestep_embedding=False,
            flip_sin_to_cos=False,
            time_embedding_type="fourier",
        ),
        "the dance-diffusion 1-D audio denoiser",
    ),
    "AutoencoderKL": ("vae", dict(_VAE), "the Stable Diffusion VAE (encode, the posterior's mode, decode)"),
    "VQModel": (
        "vae",
        dict(_VAE, latent_channels=3, num_vq_embeddings=32, vq_embed_dim=3),
        "the VQ-GAN autoencoder (encode, quantise to the nearest code, decode)",
    ),
    "AutoencoderTiny": (
        "vae",
        dict(
            encoder_block_out_channels=(16, 16),
            decoder_block_out_channels=(16, 16),
            num_encoder_blocks=(1, 1),
            num_decoder_blocks=(1, 1),
            latent_channels=4,
        ),
        "TAESD, the tiny distilled autoencoder",
    ),
    "DiTTransformer2DModel": (
        "dit",
        dict(
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=4,
            out_channels=4,
            num_layers=2,
            sample_size=16,
            patch_size=2,
            num_embeds_ada_norm=10,
            norm_num_groups=4,
        ),
        "the class-conditioned diffusion transformer (patches, adaLN-zero blocks)",
    ),
    "PixArtTransformer2DModel": (
        "pixart",
        dict(
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=4,
            out_channels=4,
            num_layers=2,
            sample_size=16,
            patch_size=2,
            cross_attention_dim=32,
            caption_channels=TEXT,
            use_additional_conditions=False,
            norm_num_groups=4,
        ),
        "the PixArt-alpha text-conditioned diffusion transformer",
    ),
    "SD3Transformer2DModel": (
        "sd3",
        dict(
            sample_size=16,
            patch_size=2,
            in_channels=4,
            out_channels=4,
            num_layers=2,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=TEXT,
            caption_projection_dim=32,
            pooled_projection_dim=TEXT,
            pos_embed_max_size=32,
        ),
        "the Stable Diffusion 3 MMDiT (joint text-image attention)",
    ),
}

#: class name -> the architecture's name in the zoo (``zoo_diff_<name>``)
NAMES = {
    "UNet2DModel": "unet2d",
    "UNet2DConditionModel": "unet2d_condition",
    "UNet1DModel": "unet1d",
    "AutoencoderKL": "autoencoder_kl",
    "VQModel": "vq_model",
    "AutoencoderTiny": "autoencoder_tiny",
    "DiTTransformer2DModel": "dit",
    "PixArtTransformer2DModel": "pixart",
    "SD3Transformer2DModel": "sd3",
}


def candidates() -> list[dict[str, Any]]:
    """One spec per class of :data:`CONFIGS` (imports diffusers: a class it lacks is listed as skipped)."""
    diffusers = libs.load("diffusers")
    out = []
    for cls, (kind, _cfg, _what) in CONFIGS.items():
        spec: dict[str, Any] = {"name": "zoo_diff_" + NAMES[cls], "class": cls, "kind": kind}
        if not hasattr(diffusers, cls):
            spec["skipped"] = f"build: diffusers {diffusers.__version__} has no {cls}"
        out.append(spec)
    return out


def build(cls: str):
    """The seeded ``cls`` of its tiny config (:data:`CONFIGS`)."""
    diffusers = libs.load("diffusers")
    return seeded(lambda: getattr(diffusers, cls)(**CONFIGS[cls][1]))


def _sample(out):
    return out.sample if hasattr(out, "sample") else out[0]


def _unet(model, sample, timestep):
    return _sample(model(sample, timestep))


def _cond(model, sample, timestep, text):
    return _sample(model(sample, timestep, encoder_hidden_states=text))


def _vae(model, sample):
    return _sample(model(sample))


def _dit(model, latents, timestep, labels):
    return _sample(model(latents, timestep=timestep, class_labels=labels))


def _pixart(model, latents, timestep, text):
    cond = {"resolution": None, "aspect_ratio": None}
    return _sample(model(latents, encoder_hidden_states=text, timestep=timestep, added_cond_kwargs=cond))


def _sd3(model, latents, timestep, text, pooled):
    return _sample(model(latents, encoder_hidden_states=text, pooled_projections=pooled, timestep=timestep))


_B = bounded("b", max=4, min=1)
_T = Input("timestep", ("b",), gen="uniform", low=0.0, high=1000.0)
_S = bounded("s", max=16, min=1)
_TEXT = Input("text", ("b", "s", "d"))
SWEEP = ({"b": 2, "p": 16}, {"b": 3, "p": 32}, {"b": 2, "p": 24})
TEXT_SWEEP = ({"b": 2, "p": 16, "s": 5}, {"b": 3, "p": 32, "s": 9}, {"b": 2, "p": 24, "s": 7})


def _image(c: int, max_p: int = 64, min_p: int = 8):
    return (_B, static("c", c), bounded("p", max=max_p, min=min_p))


#: kind -> (dims, inputs, sweep, out_shape, forward, what)
LAYOUT: dict[str, tuple] = {
    "unet2d": (
        _image(3),
        (Input("sample", ("b", "c", "p", "p")), _T),
        SWEEP,
        ("b", "c", "p", "p"),
        _unet,
        "noise of (B, 3, P, P) at timesteps (B,)",
    ),
    "cond2d": (
        (*_image(4), _S, static("d", TEXT)),
        (Input("sample", ("b", "c", "p", "p")), _T, _TEXT),
        TEXT_SWEEP,
        ("b", "c", "p", "p"),
        _cond,
        "noise of latents (B, 4, P, P) at timesteps (B,) given text states (B, S, 32)",
    ),
    "unet1d": (
        (_B, static("c", 2), bounded("l", max=256, min=16)),
        (Input("sample", ("b", "c", "l")), _T),
        ({"b": 2, "l": 64}, {"b": 3, "l": 128}, {"b": 2, "l": 96}),
        ("b", "c", "l"),
        _unet,
        "noise of signals (B, 2, L) at timesteps (B,)",
    ),
    "vae": (
        _image(3),
        (Input("sample", ("b", "c", "p", "p")),),
        SWEEP,
        ("b", "c", "p", "p"),
        _vae,
        "the reconstruction of images (B, 3, P, P)",
    ),
    "dit": (
        (*_image(4), static("k", 10)),
        (Input("latents", ("b", "c", "p", "p")), _T, Input("labels", ("b",), dtype="int64", gen="index", high="k")),
        SWEEP,
        ("b", "c", "p", "p"),
        _dit,
        "noise of latents (B, 4, P, P) at timesteps (B,) given class labels (B,)",
    ),
    "pixart": (
        (*_image(4), _S, static("d", TEXT)),
        (Input("latents", ("b", "c", "p", "p")), _T, _TEXT),
        TEXT_SWEEP,
        ("b", "c", "p", "p"),
        _pixart,
        "noise of latents (B, 4, P, P) at timesteps (B,) given text states (B, S, 32)",
    ),
    "sd3": (
        (*_image(4), _S, static("d", TEXT)),
        (Input("latents", ("b", "c", "p", "p")), _T, _TEXT, Input("pooled", ("b", "d"))),
        TEXT_SWEEP,
        ("b", "c", "p", "p"),
        _sd3,
        "noise of latents (B, 4, P, P) at timesteps (B,) given text states (B, S, 32) and pooled (B, 32)",
    ),
}

MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, cls, kind = entry["name"], entry["class"], entry["kind"]
    dims, inputs, sweep, out_shape, forward, what = LAYOUT[kind]
    model = MODELS.setdefault(name, Model(cls, lambda: build(cls), forward))
    return ModelCase(
        name=name,
        tags=("model", "zoo", "diffusers", kind, "conv" if kind in ("unet2d", "cond2d", "unet1d", "vae") else "attention"),
        description=f"diffusers {cls} ({CONFIGS[cls][2]}; a tiny config, random weights, eval): {what}; "
        "the batch and the side are dynamic" + ORACLE,
        dims=dims,
        inputs=inputs,
        sweep=sweep,
        oracle=model.oracle,
        out_shape=out_shape,
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        bucket_unsupported="padding the side adds zero pixels every convolution, norm and attention takes in",
        libraries=("diffusers",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_diffusers", make)
