"""The zoo's transformers architectures, enumerated from the auto-model mappings.

:func:`candidates` walks transformers' task mappings (``MODEL_FOR_*_MAPPING_NAMES``)
by kind -- encoder-decoder, encoder (masked LM), decoder (causal LM; a config
with a state size makes it ``ssm``), audio (CTC heads over raw samples), vision
(image classification) -- one model class per ``model_type``. :func:`config`
shrinks any config generically (:data:`GENERIC`, translated through the config
class's ``attribute_map`` and kept to the fields it has), plus :data:`OVERRIDES`
where the generic shrink fails, with the reason. Dims per kind (:data:`KINDS`):
batch B and sequence S (text; decoder length T too), audio length A, batch only
for vision (the image side is the torchvision cases').
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from typing import Any

from . import libs, zoo
from .model import Input, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

VOCAB, CLASSES, SIDE = 128, 10, 32
#: the audio front end every audio architecture gets: two convs, (kernel, stride) each
AUDIO_CONV = ((10, 5), (3, 2))
#: the generic tiny config: hidden 32, 2 layers, 2 heads (1 KV head), small vocabulary and MLP
GENERIC: dict[str, Any] = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    vocab_size=VOCAB,
    max_position_embeddings=64,
    head_dim=16,
    d_ff=64,
    num_decoder_layers=2,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    ffn_dim=64,
    embedding_size=32,
    num_experts=4,
    num_local_experts=4,
    n_routed_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=32,
    state_size=8,
    ssm_state_size=8,
    time_step_rank=4,
    image_size=SIDE,
    patch_size=8,
    num_channels=3,
    num_labels=CLASSES,
    use_cache=False,
)
#: special token fields, and the id each gets when its default is past the shrunk vocabulary of :data:`VOCAB`
TOKEN_IDS = dict(
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    mask_token_id=3,
    cls_token_id=1,
    sep_token_id=2,
    decoder_start_token_id=1,
    unk_token_id=4,
)
#: what the audio kind adds (the conv front end of :data:`AUDIO_CONV`)
AUDIO = dict(
    conv_dim=(32, 32),
    conv_kernel=tuple(k for k, _ in AUDIO_CONV),
    conv_stride=tuple(s for _, s in AUDIO_CONV),
    num_feat_extract_layers=len(AUDIO_CONV),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=2,
)
#: model_type -> (config fields, why the generic shrink needs them)
OVERRIDES: dict[str, tuple[dict[str, Any], str]] = {
    "swin": (
        dict(embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4, patch_size=4),
        "per-stage lists, window of the side",
    ),
    "swinv2": (
        dict(embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4, patch_size=4),
        "per-stage lists, window of the side",
    ),
    "donut-swin": (dict(embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4, patch_size=4), "per-stage lists"),
}


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of architecture: the mapping it is enumerated from, what its forward takes and returns."""

    mapping: str
    tags: tuple[str, ...]
    what: str


#: in enumeration order: a model_type is taken by the first kind that lists it
KINDS = {
    "encdec": Kind("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", ("encoder-decoder", "attention", "mask"), "logits (B, T, V)"),
    "encoder": Kind("MODEL_FOR_MASKED_LM_MAPPING_NAMES", ("encoder", "attention", "mask"), "logits (B, S, V)"),
    "decoder": Kind("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", ("decoder", "attention", "mask"), "logits (B, S, V)"),
    "audio": Kind("MODEL_FOR_CTC_MAPPING_NAMES", ("audio", "conv", "attention"), "CTC logits (B, L(A), V)"),
    "vision": Kind("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", ("vision",), "logits (B, 10)"),
}
#: probed first (the architectures earlier findings measured, one or more per kind)
FIRST = ("gpt2", "bert", "llama", "t5", "bart", "mamba", "wav2vec2", "hubert", "vit", "swin", "opt", "roberta", "deit", "mistral")
#: a config with one of these fields is a state-space model (its decoder kind is ``ssm``)
SSM_FIELDS = ("state_size", "ssm_state_size", "d_state", "mamba_d_state")

TEXT_SWEEP = ({"b": 2, "s": 5}, {"b": 3, "s": 12}, {"b": 2, "s": 17})
ENCDEC_SWEEP = ({"b": 2, "s": 5, "t": 4}, {"b": 3, "s": 12, "t": 7}, {"b": 2, "s": 17, "t": 9})
AUDIO_SWEEP = ({"b": 2, "a": 1000}, {"b": 3, "a": 1601}, {"b": 2, "a": 2333})
VISION_SWEEP = ({"b": 2}, {"b": 5}, {"b": 3})


def _tr():
    return libs.load("transformers")


def candidates() -> list[dict[str, Any]]:
    """One spec per model_type of the mappings in :data:`KINDS` (imports transformers)."""
    _tr()
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    seen: dict[str, dict[str, Any]] = {}
    for kind, k in KINDS.items():
        for model_type, cls in getattr(modeling_auto, k.mapping).items():
            if model_type in seen or model_type not in CONFIG_MAPPING_NAMES:
                continue
            cls = cls[0] if isinstance(cls, (tuple, list)) else cls
            spec = {"name": "zoo_hf_" + model_type.replace("-", "_"), "model_type": model_type, "class": cls, "kind": kind}
            if kind == "decoder":
                try:
                    fields = set(_fields(_config_class(model_type)))
                except Exception:  # the probe records why the config does not load
                    fields = set()
                if fields & set(SSM_FIELDS):
                    spec["kind"] = "ssm"
            seen[model_type] = spec
    # the architectures the project's findings name first, then the kinds interleaved,
    # so that a probe cut short by its budget still samples every kind
    first = [seen.pop(mt) for mt in FIRST if mt in seen]
    by_kind: dict[str, list] = {}
    for spec in seen.values():
        by_kind.setdefault(spec["kind"], []).append(spec)
    rounds = itertools.zip_longest(*by_kind.values())
    return first + [spec for batch in rounds for spec in batch if spec is not None]


def _config_class(model_type: str):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def _fields(cls) -> list[str]:
    return list(inspect.signature(cls.__init__).parameters)


def config(model_type: str, kind: str):
    """The tiny config of ``model_type``: :data:`GENERIC` (and :data:`AUDIO` for audio),
    each key translated by the class's ``attribute_map`` and kept if the class has that
    field, special token ids past the vocabulary brought into it (:data:`TOKEN_IDS`), then :data:`OVERRIDES`."""
    _tr()
    cls = _config_class(model_type)
    fields, amap = set(_fields(cls)), getattr(cls, "attribute_map", {}) or {}
    wanted = {**GENERIC, **(AUDIO if kind == "audio" else {})}
    kwargs = {}
    for k, v in wanted.items():
        real = amap.get(k, k)
        if real in fields or k == "num_labels":
            kwargs[real] = v
    params = inspect.signature(cls.__init__).parameters
    for k, small in TOKEN_IDS.items():  # a special token past the shrunk vocabulary: an embedding's padding_idx fails
        default = params[k].default if k in params else None
        if isinstance(default, int) and not isinstance(default, bool) and default >= VOCAB:
            kwargs[k] = small
    kwargs.update(OVERRIDES.get(model_type, ({}, ""))[0])
    return cls(**kwargs)


def build(model_type: str, kind: str, cls_name: str):
    """The seeded model class ``cls_name`` of the tiny :func:`config`."""
    tr = _tr()
    cfg = config(model_type, kind)
    return seeded(lambda: getattr(tr, cls_name)(cfg))


def _out(out):
    return out.logits if getattr(out, "logits", None) is not None else out[0]


def _text(model, input_ids, attention_mask):
    return _out(model(input_ids=input_ids, attention_mask=attention_mask))


def _ssm(model, input_ids):
    return _out(model(input_ids=input_ids))


def _encdec(model, input_ids, attention_mask, decoder_input_ids):
    return _out(model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids))


def _audio(model, input_values):
    return _out(model(input_values=input_values))


def _vision(model, pixel_values):
    return _out(model(pixel_values=pixel_values))


def audio_length(a: str = "a") -> str:
    """The CTC output length of :data:`AUDIO_CONV` over ``a`` samples, as a size expression."""
    expr = a
    for k, s in AUDIO_CONV:
        expr = f"({expr} - {k}) // {s} + 1"
    return expr


_B = bounded("b", max=4, min=2)
_S = bounded("s", max=32, min=2)
_IDS = Input("input_ids", ("b", "s"), dtype="int64", gen="index", high="v")
# a padded position is masked out (mask pad 0): the valid tokens' outputs are unchanged
_MASK = Input("attention_mask", ("b", "s"), dtype="int64", gen="lengths_mask", low=1)
#: kind -> (dims, inputs, sweep, out_shape, forward)
LAYOUT: dict[str, tuple] = {
    "decoder": ((_B, _S, static("v", VOCAB)), (_IDS, _MASK), TEXT_SWEEP, ("b", "s", "v"), _text),
    "encoder": ((_B, _S, static("v", VOCAB)), (_IDS, _MASK), TEXT_SWEEP, ("b", "s", "v"), _text),
    "ssm": ((_B, _S, static("v", VOCAB)), (_IDS,), TEXT_SWEEP, ("b", "s", "v"), _ssm),
    "encdec": (
        (_B, _S, bounded("t", max=16, min=2), static("v", VOCAB)),
        (_IDS, _MASK, Input("decoder_input_ids", ("b", "t"), dtype="int64", gen="decoder_ids", high="v")),
        ENCDEC_SWEEP,
        ("b", "t", "v"),
        _encdec,
    ),
    "audio": (
        (_B, bounded("a", max=4000, min=400), static("v", VOCAB)),
        (Input("input_values", ("b", "a")),),
        AUDIO_SWEEP,
        ("b", audio_length(), "v"),
        _audio,
    ),
    "vision": (
        (bounded("b", max=8, min=2), static("c", 3), static("p", SIDE)),
        (Input("pixel_values", ("b", "c", "p", "p")),),
        VISION_SWEEP,
        ("b", CLASSES),
        _vision,
    ),
}

MODELS: dict[str, Model] = {}


def make(entry: dict[str, Any]) -> ModelCase:
    """The case of one probed entry (no import)."""
    name, kind, mt, cls = entry["name"], entry["kind"], entry["model_type"], entry["class"]
    dims, inputs, sweep, out_shape, forward = LAYOUT[kind]
    model = MODELS.setdefault(name, Model(mt, lambda: build(mt, kind, cls), forward))
    return ModelCase(
        name=name,
        tags=("model", "zoo", "transformers", kind, *KINDS["decoder" if kind == "ssm" else kind].tags),
        description=f"transformers {cls} ({kind}; config {mt!r} shrunk generically: hidden 32, 2 layers, 2 heads): "
        f"{KINDS['decoder' if kind == 'ssm' else kind].what}" + ORACLE,
        dims=dims,
        inputs=inputs,
        sweep=sweep,
        oracle=model.oracle,
        out_shape=out_shape,
        torch_fn=model.torch_fn,
        tolerance=zoo.tolerance_of(entry),
        # padded samples change what the convolutions and the (unmasked) attention see
        bucket_unsupported="padding the samples changes every conv window and attention row" if kind == "audio" else None,
        libraries=("transformers",),
    )


def model_of(case: ModelCase) -> Model:
    return MODELS[case.name]


CASES = zoo.cases_of("zoo_hf", make)
