"""Tiny real models for the lazy path's model tests and table: built from their libraries'
config classes (random init, seed 0, eval, fp32, nothing downloaded), loaded only through
``cases.libs.load``. Each entry: ``build() -> (fn, make_inputs(size) -> tuple, dims)``,
``dims`` per input as :class:`engines.lazy.LazyFunction` takes them (the model's dynamic
dims, shared by name across inputs)."""

from __future__ import annotations

import torch

from cases import libs

#: the four sizes of each family's sweep: (batch, seq) for transformers, batch for vision,
#: (nodes, edges) for graphs; seq 1 is left out (``seq > 1`` is a guard that splits)
SIZES = {"text": [(2, 5), (3, 8), (1, 11), (4, 16)], "vision": [2, 3, 1, 4], "graph": [(5, 12), (9, 20), (13, 31), (20, 50)]}
BS = {0: "b", 1: "s"}


def _text(model, vocab, mask=False):
    def make(size):
        b, s = size
        ids = torch.randint(0, vocab, (b, s))
        if not mask:
            return (ids,)
        m = torch.ones(b, s, dtype=torch.long)
        m[:, s // 2 + 1 :] = 0  # padded tail: the mask is not all ones (transformers skips such a mask)
        return ids, m

    return make


def gpt2(mask=False):
    tr = libs.load("transformers")
    cfg = tr.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=64, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    m = tr.GPT2LMHeadModel(cfg).eval()
    if mask:
        return (lambda ids, am: m(input_ids=ids, attention_mask=am).logits), _text(m, 128, True), [BS, BS]
    return (lambda ids: m(input_ids=ids).logits), _text(m, 128), [BS]


def bert():
    tr = libs.load("transformers")
    cfg = tr.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=128,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    m = tr.BertModel(cfg).eval()
    return (lambda ids, am: m(input_ids=ids, attention_mask=am).last_hidden_state), _text(m, 128, True), [BS, BS]


def llama():
    tr = libs.load("transformers")
    cfg = tr.LlamaConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=128,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    m = tr.LlamaForCausalLM(cfg).eval()
    return (lambda ids: m(input_ids=ids).logits), _text(m, 128), [BS]


def vit():
    tr = libs.load("transformers")
    cfg = tr.ViTConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=16,
        patch_size=4,
        num_channels=3,
    )
    torch.manual_seed(0)
    m = tr.ViTModel(cfg).eval()
    return (lambda px: m(pixel_values=px).last_hidden_state), lambda b: (torch.randn(b, 3, 16, 16),), [{0: "b"}]


def resnet18():
    tv = libs.load("torchvision")
    torch.manual_seed(0)
    m = tv.models.resnet18(num_classes=10).eval()
    return m, lambda b: (torch.randn(b, 3, 32, 32),), [{0: "b"}]


def _gnn(kind):
    nn = libs.load("torch_geometric").nn
    conv = {"gcn": nn.GCNConv, "gat": nn.GATConv, "sage": nn.SAGEConv}[kind]
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = conv(8, 16), conv(16, 4)

        def forward(self, x, edge_index):
            return self.c2(self.c1(x, edge_index).relu(), edge_index)

    def make(size):
        n, e = size
        return torch.randn(n, 8), torch.randint(0, n, (2, e))  # self loops and repeats included

    return Net().eval(), make, [{0: "n"}, {1: "e"}]


#: name -> (library, family, builder)
MODELS = {
    "gpt2": ("transformers", "text", gpt2),
    "gpt2_mask": ("transformers", "text", lambda: gpt2(mask=True)),
    "bert": ("transformers", "text", bert),
    "llama": ("transformers", "text", llama),
    "vit": ("transformers", "vision", vit),
    "resnet18": ("torchvision", "vision", resnet18),
    "gcn": ("torch_geometric", "graph", lambda: _gnn("gcn")),
    "gat": ("torch_geometric", "graph", lambda: _gnn("gat")),
    "sage": ("torch_geometric", "graph", lambda: _gnn("sage")),
}


def sweep(name, rtol=1e-4, atol=1e-4):
    """Run model ``name`` on the lazy path (unbounded) over its family's sizes, each compared with
    torch eager: ``(compiles, guards)``, the guards as text, in first-seen order."""
    import engines.lazy as L

    _, family, build = MODELS[name]
    fn, make, dims = build()
    f = L.LazyFunction(fn, "unbounded", dims)
    with torch.no_grad():
        for size in SIZES[family]:
            torch.manual_seed(1)
            args = make(size)
            torch.testing.assert_close(f(*args), fn(*args), rtol=rtol, atol=atol)
    return f.ctx.compiles(), list(f.guard_log)


if __name__ == "__main__":  # the table: PYTHONPATH=$PWD .venv/bin/python tests/lazy/lazy_models.py [names]
    import sys

    print("| model | lazy unbounded: compiles over 4 sizes | guards |\n|---|---|---|")
    for n in sys.argv[1:] or MODELS:
        c, g = sweep(n)
        print(f"| {n} | {c} | {'; '.join(g) or '-'} |", flush=True)
