"""Real models (``tests/stablehlo/models.py``: transformers, torchvision,
torch_geometric from config classes) through export -> bounded lowering -> XLA:
one lowering and one XLA compile for every size of a short sweep, equal to
eager float32 at rtol = atol = 1e-4. Each model here exercises one path:
GCN the boolean masks of remove_self_loops (a data-dependent count served by
the padder), GPT-2 scaled_dot_product_attention kept whole (its decomposition
broke a later view), BERT two inputs sharing the sequence size (one live size),
the ResNet with a dynamic image side every convolution and pool sliding over a
dynamic dim (run static at the bound on a masked operand).
The full table over every model: ``python -m tests.stablehlo.models``."""

from __future__ import annotations

import dataclasses

import pytest

from cases import libs

from . import models

CHECKED = ("gcn", "gpt2", "bert", "resnet_hw")


@pytest.mark.parametrize("name", CHECKED)
def test_model_bounded_one_lowering_one_compile_oracle_equal(name):
    model = models.MODELS[name]
    if libs.missing(model.library):
        pytest.skip(f"{model.library} is not installed")
    model = dataclasses.replace(model, sizes=model.sizes[:3])  # a short sweep: compiles are the cost
    row = models.sweep(model, "bounded")
    assert row["error"] is None, row["error"]
    assert (row["lowerings"], row["compiles"]) == (1, 1), row
    assert row["equal"], row


def test_argument_dims_with_one_symbol_share_one_live_size():
    """BERT's input_ids and attention_mask: one ``S``, one live-size argument."""
    from engines.stablehlo import lower
    from engines.stablehlo.execution.padder_rewrite import bound_entry

    if libs.missing("transformers"):
        pytest.skip("transformers is not installed")
    ep, _ = models.export(models.MODELS["bert"])
    text = lower(ep, bounded=True)
    assert 'dynshape.dim_symbols = ["", "' in text
    entry = bound_entry(text, "bert")
    assert entry.n_arg_sizes == 1 and entry.size_groups == [[(0, 1), (1, 1)]], entry.size_groups
    assert entry.live_sizes([(2, 5), (2, 5)]) == [5]
    with pytest.raises(Exception, match="one size symbol"):
        entry.live_sizes([(2, 5), (2, 6)])


def test_a_boolean_mask_count_is_bounded_by_the_mask_or_stays_unbounded():
    """remove_self_loops' ``edge_index[:, mask]``: bounded, the count's dim has the
    mask's bound (E's, 3 * 32) and its live size is set on the device; unbounded,
    it is a plain `?`."""
    if libs.missing("torch_geometric"):
        pytest.skip("torch_geometric is not installed")
    from engines.stablehlo import lower

    ep, _ = models.export(models.MODELS["gcn"])
    bounded, unbounded = lower(ep, bounded=True), lower(ep, bounded=False)
    assert "stablehlo.set_dimension_size" in bounded and "tensor<2x?xi64, #stablehlo.bounds<?, 96>>" in bounded
    assert "stablehlo.set_dimension_size" in unbounded and "#stablehlo.bounds" not in unbounded


def test_a_data_dependent_size_is_refused_per_shape_before_any_compile():
    """The unbounded module's count has no static value at any argument shapes: XLA's
    per-shape program refuses it by name before refining or compiling (it had failed in
    refinement, a run-time error of a module we built, on 20 torch_geometric zoo jobs)."""
    if libs.missing("torch_geometric"):
        pytest.skip("torch_geometric is not installed")
    from engines.stablehlo import Module, lower, xla_program
    from engines.stablehlo.execution.xla import REFUSED, DataDependentSize, XlaStats

    ep, _ = models.export(models.MODELS["gcn"])
    stats = XlaStats()
    with pytest.raises(DataDependentSize, match=REFUSED + ".*set_dimension_size"):
        xla_program(Module(lower(ep, bounded=False), "gcn"), "unbounded", stats=stats)
    assert stats.compiles == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ("wav2vec2", "wavlm", "convnext_hw"))
def test_issue36_models_bounded_one_compile_oracle_equal(name):
    """The floor-division chains of a speech encoder's conv stack (Wav2Vec2: a bound
    count mismatch; WavLM: a split-and-combine reshape) and ConvNeXt's ``as_strided``."""
    test_model_bounded_one_lowering_one_compile_oracle_equal(name)
