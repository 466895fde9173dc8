"""The catalogue's real models (``cases/models_*.py``) on the lazy path, for its model tests and
table: each model, its inputs, dynamic dims and 4-size sweep are the catalogue case's own
(``Case.torch_fn``, ``make_inputs``, ``dynamic_axes``, ``sweep``), so the table says what the
gate's ``lazy`` rows run, on every size of the full sweep. One program the catalogue lacks,
GPT-2 with a padded attention mask (``gpt2_mask``), reuses the catalogue's GPT-2 builder.

Each entry: ``build() -> (fn, make_inputs(i, sizes) -> tuple, dims, sweep)``, ``dims`` per input
as :class:`engines.lazy.LazyFunction` takes them (dims shared by name across inputs)."""

from __future__ import annotations

import torch

import cases


def _lazy_dims(case) -> list:
    """The case's unbounded dims as ``LazyFunction`` takes them (what ``backends.lazy`` passes)."""
    return [{ax: d.name for ax, d in axes.items()} for axes in case.dynamic_axes("unbounded")]


def _catalogue(case_name: str):
    """The build of catalogue case ``case_name``: its float32 model and seeded inputs."""

    def build():
        case = cases.get(case_name)

        def make(i, sizes):
            return tuple(torch.from_numpy(a) for a in case.make_inputs(sizes, seed=i))

        return case.torch_fn(), make, _lazy_dims(case), [dict(s) for s in case.sweep]

    return build


def _gpt2_mask():
    """The catalogue's GPT-2 and its inputs, with an attention mask whose tail is padding (not all
    ones: transformers skips an all-ones mask), dims (b, s) on both inputs."""
    from cases import models_text

    case, model = cases.get("model_gpt2"), models_text.GPT2.float32()

    def make(i, sizes):
        (ids,) = case.make_inputs(sizes, seed=i)
        b, s = ids.shape
        mask = torch.ones(b, s, dtype=torch.long)
        mask[:, s // 2 + 1 :] = 0
        return torch.from_numpy(ids), mask

    dims = _lazy_dims(case) * 2
    return (lambda ids, am: model(input_ids=ids, attention_mask=am).logits), make, dims, [dict(s) for s in case.sweep]


#: name -> (library, build)
MODELS = {
    "gpt2": ("transformers", _catalogue("model_gpt2")),
    "gpt2_mask": ("transformers", _gpt2_mask),
    "bert": ("transformers", _catalogue("model_bert")),
    "llama": ("transformers", _catalogue("model_llama")),
    "vit": ("transformers", _catalogue("model_vit")),
    "resnet18": ("torchvision", _catalogue("model_resnet18")),
    "resnet18_hw": ("torchvision", _catalogue("model_resnet18_hw")),
    "gcn": ("torch_geometric", _catalogue("model_gcn")),
    "gat": ("torch_geometric", _catalogue("model_gat")),
    "sage": ("torch_geometric", _catalogue("model_sage")),
}


def sweep(name, rtol=1e-4, atol=1e-4):
    """Run model ``name`` on the lazy path (unbounded) over its case's sweep, each size compared
    with torch eager: ``(compiles, guards)``, the guards as text, in first-seen order."""
    import engines.lazy as L

    fn, make, dims, sizes = MODELS[name][1]()
    f = L.LazyFunction(fn, "unbounded", dims)
    with torch.no_grad():
        for i, s in enumerate(sizes):
            args = make(i, s)
            torch.testing.assert_close(f(*args), fn(*args), rtol=rtol, atol=atol)
    return f.ctx.compiles(), list(f.guard_log)


if __name__ == "__main__":  # the table: PYTHONPATH=$PWD .venv/bin/python tests/lazy/lazy_models.py [names]
    import sys

    print("| model | lazy unbounded: compiles over 4 sizes | guards |\n|---|---|---|")
    for n in sys.argv[1:] or MODELS:
        c, g = sweep(n)
        print(f"| {n} | {c} | {'; '.join(g) or '-'} |", flush=True)
