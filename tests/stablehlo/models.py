"""The catalogue's tiny real models (``cases.models_text``, ``models_vision``,
``models_graph``: their builders, seeded, eval, fp32, nothing downloaded), with
their dynamic dims, for the StableHLO model tests.

Each :class:`Model` builds the module, makes arguments at a size ``n`` (the
sweep's one knob: sequence length, batch, node count) and names its dynamic
dims as ``torch.export.Dim``s with bounds. The ResNet is the catalogue's
``resnet18`` builder with one block per stage (``layers=(1, 1, 1, 1)``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from cases import models_graph, models_text, models_vision

VOCAB = models_text.VOCAB
IMAGE = models_vision.VIT_CONFIG["image_size"]


@dataclass
class Model:
    name: str
    library: str
    build: Callable[[], torch.nn.Module]
    make: Callable[[int, np.random.Generator], list[np.ndarray]]  # arguments at size n
    dims: Callable[[int], tuple]  # dynamic_shapes for torch.export, bounded at ``bound``
    sizes: tuple  # the sweep
    bound: int
    export_n: int  # the size torch.export traces at
    output: Callable = lambda out: out  # the tensors to compare (e.g. logits)


def _tokens(vocab, batch=2):
    def make(n, g):
        return [g.integers(0, vocab, (batch, n)).astype(np.int64)]

    return make


def _tokens_mask(vocab, batch=2):
    def make(n, g):
        ids = g.integers(0, vocab, (batch, n)).astype(np.int64)
        mask = np.ones((batch, n), np.int64)
        mask[0, n - n // 3 :] = 0  # padding at the end of the first row
        return [ids, mask]

    return make


def _seq_dim(n_args):
    def dims(bound):
        s = torch.export.Dim("S", min=2, max=bound)
        return tuple({1: s} for _ in range(n_args))

    return dims


def _gpt2_eager_attn():
    cfg = models_text.gpt2_config()
    cfg._attn_implementation = "eager"
    return models_text.gpt2(cfg)


def _resnet():
    return models_vision.resnet18(layers=(1, 1, 1, 1))  # few blocks: small inlined constants


def _images(c, hw):
    def make(n, g):
        return [g.standard_normal((n, c, hw, hw)).astype(np.float32)]

    return make


def _batch_dim(bound):
    return ({0: torch.export.Dim("B", min=2, max=bound)},)


def _images_side(c):
    """Images of side n, the batch changing with it (2 to 4)."""

    def make(n, g):
        return [g.standard_normal((2 + n % 3, c, n, n)).astype(np.float32)]

    return make


def _batch_side_dims(bound):
    side = torch.export.Dim("P", min=32, max=bound)
    return ({0: torch.export.Dim("B", min=2, max=8), 2: side, 3: side},)


def _graph(n, g):
    """n nodes, 3n edges (some self loops, as real graphs have)."""
    e = 3 * n
    src = g.integers(0, n, e)
    dst = g.integers(0, n, e)
    dst[: n // 4] = src[: n // 4]  # self loops, which remove_self_loops drops
    return [g.standard_normal((n, models_graph.IN)).astype(np.float32), np.stack([src, dst]).astype(np.int64)]


def _graph_dims(bound):
    n = torch.export.Dim("N", min=2, max=bound)
    e = torch.export.Dim("E", min=2, max=3 * bound)
    return ({0: n}, {1: e})


def _audio(name):
    """A tiny transformers speech encoder (``Wav2Vec2Model``, ``WavLMModel``, ...): a
    three-layer conv feature stack (its output length a chain of floor divisions of the
    sample count), one transformer layer."""

    def build():
        from cases import libs

        tf = libs.load("transformers")
        torch.manual_seed(0)
        cfg = getattr(tf, name + "Config")(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37, vocab_size=20,
            conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 2),
            num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2,
        )  # fmt: skip
        return getattr(tf, name + "Model")(cfg).eval()

    return build


def _waves(n, g):
    return [g.standard_normal((2 + n % 3, n)).astype(np.float32)]


def _batch_time_dims(bound):
    return ({0: torch.export.Dim("B", min=2, max=4), 1: torch.export.Dim("T", min=64, max=bound)},)


def _convnext():
    """torchvision's ConvNeXt, two tiny stages (its LayerNorm2d exports an ``as_strided``)."""
    from cases import libs

    libs.load("torchvision")
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    torch.manual_seed(0)
    return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)], num_classes=10).eval()


def _logits(out):
    return out.logits if hasattr(out, "logits") else out.last_hidden_state if hasattr(out, "last_hidden_state") else out


MODELS: dict[str, Model] = {
    m.name: m
    for m in [
        Model("gpt2", "transformers", models_text.gpt2, _tokens(VOCAB), _seq_dim(1), (5, 9, 17, 32), 32, 8, _logits),
        Model("gpt2_eager_attn", "transformers", _gpt2_eager_attn, _tokens(VOCAB), _seq_dim(1), (5, 9, 17, 32), 32, 8, _logits),
        Model("bert", "transformers", models_text.bert, _tokens_mask(VOCAB), _seq_dim(2), (5, 9, 17, 32), 32, 8, _logits),
        Model("llama", "transformers", models_text.llama, _tokens(VOCAB), _seq_dim(1), (5, 9, 17, 32), 32, 8, _logits),
        Model("vit", "transformers", models_vision.vit, _images(3, IMAGE), _batch_dim, (2, 3, 5, 8), 8, 3, _logits),
        Model("resnet", "torchvision", _resnet, _images(3, 32), _batch_dim, (2, 3, 5, 8), 8, 3),
        # a dynamic image side too (odd ones included): every convolution and pool slides over it
        Model("resnet_hw", "torchvision", _resnet, _images_side(3), _batch_side_dims, (32, 37, 48, 61), 64, 40),
        Model("gcn", "torch_geometric", models_graph.gcn, _graph, _graph_dims, (5, 9, 17, 32), 32, 8),
        Model("gat", "torch_geometric", models_graph.gat, _graph, _graph_dims, (5, 9, 17, 32), 32, 8),
        Model("sage", "torch_geometric", models_graph.sage, _graph, _graph_dims, (5, 9, 17, 32), 32, 8),
        # issue 36's models beyond the catalogue: speech encoders (a dynamic batch and sample count) and ConvNeXt
        Model("wav2vec2", "transformers", _audio("Wav2Vec2"), _waves, _batch_time_dims, (200, 333, 401, 512), 512, 256, _logits),
        Model("wavlm", "transformers", _audio("WavLM"), _waves, _batch_time_dims, (200, 333, 401, 512), 512, 256, _logits),
        Model("convnext_hw", "torchvision", _convnext, _images_side(3), _batch_side_dims, (32, 37, 48, 61), 64, 40),
    ]
}


def export(model: Model):
    """``torch.export`` of the model at ``export_n`` with its bounded dims
    (size-oblivious retry as the backends do)."""
    from engines.torch_export_tools import export_oblivious_retry

    mod = model.build()
    args = tuple(torch.from_numpy(a) for a in model.make(model.export_n, np.random.default_rng(0)))

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = mod

        def forward(self, *xs):
            return model.output(self.m(*xs))

    with torch.no_grad():
        return export_oblivious_retry(
            lambda **o: torch.export.export(Wrapped(), args, dynamic_shapes=(model.dims(model.bound),), strict=False, **o)
        ), mod


def eager(model: Model, mod, args, dtype=torch.float32):
    """The model's outputs in eager torch at ``dtype`` (float64: the oracle)."""
    m = mod.to(dtype)
    xs = [torch.from_numpy(a).to(dtype) if a.dtype.kind == "f" else torch.from_numpy(a) for a in args]
    with torch.no_grad():
        out = model.output(m(*xs))
    m.to(torch.float32)
    return [o.detach().numpy() for o in ([out] if isinstance(out, torch.Tensor) else out)]


def sweep(model: Model, mode: str = "bounded", rtol: float = 1e-4, atol: float = 1e-4) -> dict:
    """Export + lower once, then run every size of the sweep on the XLA executor
    of ``mode`` ("bounded": one compile for all; "unbounded": per shape):
    ``{lowerings, compiles, equal, worst, seconds, compile_s, error}``; equal is vs eager
    float32 at ``rtol``/``atol`` (``worst``: the largest |diff| vs float64 eager)."""
    import time

    from engines.stablehlo import XlaExecutor, lower

    row = {
        "model": model.name,
        "mode": mode,
        "lowerings": 0,
        "compiles": 0,
        "equal": None,
        "worst": None,
        "seconds": None,
        "compile_s": None,
        "error": None,
    }
    t0 = time.perf_counter()
    try:
        ep, mod = export(model)
        text = lower(ep, bounded=mode == "bounded")
        row["lowerings"] = 1
        ex = XlaExecutor()
        equal, worst = True, 0.0
        for n in model.sizes:
            args = model.make(n, np.random.default_rng(n))
            got = ex.run(text, args)
            want32, want64 = eager(model, mod, args), eager(model, mod, args, torch.float64)
            for g, w, w64 in zip(got, want32, want64, strict=False):
                equal &= g.shape == w.shape and bool(np.allclose(g, w, rtol=rtol, atol=atol))
                if g.shape == w64.shape:
                    worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w64), initial=0.0)))
        row.update(compiles=ex.compile_count(), equal=equal, worst=worst, compile_s=round(sum(ex.stats.compile_seconds), 1))
    except Exception as e:  # the table names the failure
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


if __name__ == "__main__":  # PYTHONPATH=$PWD .venv/bin/python -m tests.stablehlo.models [names] [--unbounded]
    import sys

    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(MODELS)
    mode = "unbounded" if "--unbounded" in sys.argv else "bounded"
    print(
        "| model | mode | lowerings | XLA compiles / sizes | oracle-equal (fp32, 1e-4) | max abs diff vs fp64 | "
        "XLA compile s | total s | error |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        m = MODELS[name]
        r = sweep(m, mode)
        worst = "" if r["worst"] is None else f"{r['worst']:.1e}"
        print(
            f"| {name} | {mode} | {r['lowerings']} | {r['compiles']} / {len(m.sizes)} | {r['equal']} | "
            f"{worst} | {r['compile_s']} | {r['seconds']} | {r['error'] or ''} |",
            flush=True,
        )
