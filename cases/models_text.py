"""Transformer text models of Hugging Face transformers: batch B and sequence length S change per call.

Each builder (:func:`gpt2`, :func:`bert`, :func:`llama`) returns the library's
model class built from a tiny config (2 layers, hidden 32, vocabulary 128) with
weights seeded by :data:`cases.models_base.SEED`, in eval mode, parameters
frozen; the attention implementation is the library's default (sdpa). Other
tests may build the same model with ``cases.models_text.gpt2()`` (or pass a
config of their own: ``gpt2(gpt2_config(n_layer=1))``).
"""

from __future__ import annotations

from . import libs
from .model import Input, Tolerance, bounded, static
from .models_base import ORACLE, Model, ModelCase, seeded

VOCAB = 128
#: B and S: up to 4 sequences of up to 32 tokens (positions: 64)
MAX_B, MAX_S = 4, 32
#: four novel (B, S) shapes; the quick profile runs the first three
SWEEP = ({"b": 2, "s": 5}, {"b": 3, "s": 12}, {"b": 2, "s": 17}, {"b": 4, "s": 9})

GPT2_CONFIG = dict(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
BERT_CONFIG = dict(
    vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64
)
LLAMA_CONFIG = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=64,
    bos_token_id=0,
    eos_token_id=0,
)


def gpt2_config(**overrides):
    """transformers' ``GPT2Config`` of the case (:data:`GPT2_CONFIG`), with ``overrides``."""
    return libs.load("transformers").GPT2Config(**{**GPT2_CONFIG, **overrides})


def gpt2(config=None):
    """A seeded ``GPT2LMHeadModel`` (``config``: :func:`gpt2_config` by default)."""
    tr = libs.load("transformers")
    return seeded(lambda: tr.GPT2LMHeadModel(config or gpt2_config()))


def bert_config(**overrides):
    """transformers' ``BertConfig`` of the case (:data:`BERT_CONFIG`), with ``overrides``."""
    return libs.load("transformers").BertConfig(**{**BERT_CONFIG, **overrides})


def bert(config=None):
    """A seeded ``BertModel`` without its pooler (``config``: :func:`bert_config` by default)."""
    tr = libs.load("transformers")
    return seeded(lambda: tr.BertModel(config or bert_config(), add_pooling_layer=False))


def llama_config(**overrides):
    """transformers' ``LlamaConfig`` of the case (:data:`LLAMA_CONFIG`), with ``overrides``."""
    return libs.load("transformers").LlamaConfig(**{**LLAMA_CONFIG, **overrides})


def llama(config=None):
    """A seeded ``LlamaForCausalLM`` (``config``: :func:`llama_config` by default)."""
    tr = libs.load("transformers")
    return seeded(lambda: tr.LlamaForCausalLM(config or llama_config()))


def _logits(model, input_ids):
    return model(input_ids=input_ids).logits


def _hidden(model, input_ids, attention_mask):
    return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


GPT2 = Model("gpt2", gpt2, _logits)
BERT = Model("bert", bert, _hidden)
LLAMA = Model("llama", llama, _logits)

_DIMS = (bounded("b", max=MAX_B, min=2), bounded("s", max=MAX_S, min=2))
_IDS = Input("input_ids", ("b", "s"), dtype="int64", gen="index", high="v")

model_gpt2 = ModelCase(
    name="model_gpt2",
    tags=("model", "transformers", "decoder", "attention"),
    description="transformers GPT2LMHeadModel (2 layers, hidden 32, vocab 128, default sdpa attention): "
    "logits of input_ids (B, S)" + ORACLE,
    dims=_DIMS + (static("v", VOCAB),),
    # padding S at the end is neutral (causal attention: a real token never sees a later one)
    inputs=(_IDS,),
    sweep=SWEEP,
    oracle=GPT2.oracle,
    out_shape=("b", "s", "v"),
    torch_fn=GPT2.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 1.5e-07;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 2e-06),
    libraries=("transformers",),
)

model_bert = ModelCase(
    name="model_bert",
    tags=("model", "transformers", "encoder", "attention", "mask"),
    description="transformers BertModel (2 layers, hidden 32, vocab 128, no pooler, default sdpa attention): "
    "last hidden state of input_ids (B, S) with a 0/1 attention_mask (B, S)" + ORACLE,
    dims=_DIMS + (static("v", VOCAB),),
    # a padded token is masked out (pad 0): the real tokens' attention is unchanged
    inputs=(_IDS, Input("attention_mask", ("b", "s"), dtype="int64", gen="index", high=2)),
    sweep=SWEEP,
    oracle=BERT.oracle,
    out_shape=("b", "s", 32),
    torch_fn=BERT.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 6.9e-07;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 7e-06),
    libraries=("transformers",),
)

model_llama = ModelCase(
    name="model_llama",
    tags=("model", "transformers", "decoder", "attention", "rotary"),
    description="transformers LlamaForCausalLM (2 layers, hidden 32, 2 heads sharing 1 KV head, rotary "
    "embeddings, vocab 128, default sdpa attention): logits of input_ids (B, S)" + ORACLE,
    dims=_DIMS + (static("v", VOCAB),),
    inputs=(_IDS,),
    sweep=SWEEP,
    oracle=LLAMA.oracle,
    out_shape=("b", "s", "v"),
    torch_fn=LLAMA.torch_fn,
    # float32 vs the float64 model, eager, over the 4-shape sweep (seeds 0-3): max abs err 9.9e-08;
    # 10x that, rounded up (outputs are O(1): an absolute bound)
    tolerance=Tolerance(0.0, 1e-06),
    libraries=("transformers",),
)

CASES = (model_gpt2, model_bert, model_llama)
