"""The small BERT: every attention variant, padding, tied embeddings, and the learned-kernel readers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attnconv.analysis import dynamic_kernels, fixed_kernels
from attnconv.composite import CompositeAttention
from attnconv.figures.bert_runs import plot_fixed_kernels, plot_sentence_kernels
from attnconv.lightconv import DepthwiseSeparableConv1d
from attnconv.models.bert import (BERT_SIZES, VARIANTS, BertClassifier, BertConfig, BertForMaskedLM,
                                  composite_layers)

TINY = BERT_SIZES["tiny"]


def _model(variant: str, **kw) -> BertForMaskedLM:
    torch.manual_seed(0)
    return BertForMaskedLM(replace(TINY, variant=variant, **kw)).eval()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_padding_does_not_change_real_tokens(variant):
    model = _model(variant)
    x = torch.randint(5, TINY.vocab_size, (2, 17))
    types = torch.zeros_like(x)
    types[:, 9:] = 1
    pad = torch.zeros_like(x, dtype=torch.bool)
    pad[1, 11:] = True
    with torch.no_grad():
        batch = model(x, types, pad)
        alone = model(x[1:, :11], types[1:, :11])
    assert batch.shape == (2, 17, TINY.vocab_size)
    torch.testing.assert_close(batch[1, :11], alone[0], atol=1e-5, rtol=1e-5)


def test_variants_are_built_from_the_shared_modules():
    assert composite_layers(_model("absolute")) == []
    for name in ("fixed", "dynamic", "composite", "composite-noabs"):
        model = _model(name)
        layers = composite_layers(model)
        v = VARIANTS[name]
        assert len(layers) == TINY.depth and all(isinstance(m, CompositeAttention) for m in layers)
        assert all((m.fixed_term is not None) == v.fixed and (m.query_term is not None) == v.query_dynamic
                   for m in layers)
        assert (model.encoder.position_embedding is None) == name.endswith("-noabs")
    for proj in ("query", "key", "value"):
        layer = composite_layers(_model(f"conv-{proj}"))[0]
        assert isinstance(getattr(layer, proj[0] + "_proj"), DepthwiseSeparableConv1d)
        assert layer.positional is None


def test_every_length_up_to_the_maximum_works_without_a_position_table():
    model = _model("composite-noabs", dropout=0.0)
    assert model.encoder.position_embedding is None
    assert not any(name.startswith("encoder.position") for name, _ in model.named_parameters())
    for n in (1, 5, TINY.max_length):
        assert model.encoder(torch.randint(5, 100, (2, n))).shape == (2, n, TINY.hidden_dim)


def test_mlm_head_is_tied_and_predicts_only_masked_positions():
    model = _model("composite")
    assert not any(p.shape == (TINY.vocab_size, TINY.hidden_dim) for n, p in model.named_parameters()
                   if not n.startswith("encoder.token_embedding"))  # no separate output matrix
    x = torch.randint(5, TINY.vocab_size, (2, 10))
    labels = torch.full_like(x, -100)
    labels[0, 3], labels[1, 7] = 11, 12
    full = model(x)
    picked = model(x, labels=labels)
    torch.testing.assert_close(picked, full[labels != -100])
    loss, correct = model.loss(x, None, None, labels)
    loss.backward()
    assert model.encoder.token_embedding.weight.grad is not None  # reaches the embeddings through the output layer
    assert 0 <= int(correct) <= 2 and loss.item() > 0


def test_pre_norm_and_classifier_from_pretrained():
    mlm = _model("fixed", pre_norm=True)
    clf = BertClassifier.from_pretrained(mlm, num_labels=3, dropout=0.0).eval()
    for a, b in zip(mlm.encoder.state_dict().values(), clf.encoder.state_dict().values()):
        assert torch.equal(a, b)
    x = torch.randint(5, 100, (4, 9))
    assert clf(x).shape == (4, 3)


def test_kernel_readers_are_distributions():
    model = _model("composite")
    fixed = fixed_kernels(model)
    assert fixed.shape == (TINY.depth, TINY.num_heads, 2 * TINY.max_distance + 1)
    torch.testing.assert_close(torch.tensor(fixed.sum(-1)), torch.ones(TINY.depth, TINY.num_heads))
    dyn = dynamic_kernels(model, torch.randint(5, 100, (1, 6)))
    assert dyn.shape == (TINY.depth, TINY.num_heads, 6, 2 * TINY.max_distance + 1)
    torch.testing.assert_close(torch.tensor(dyn.sum(-1)), torch.ones(dyn.shape[:-1]))
    k = TINY.max_distance
    assert (dyn[:, :, 0, :k] == 0).all() and (dyn[:, :, -1, k + 1:] == 0).all()  # no taps outside the sentence
    assert fixed_kernels(_model("absolute")) is None and dynamic_kernels(_model("fixed"), torch.ones(1, 3).long()) is None
    plot_fixed_kernels(fixed, list(range(-k, k + 1)))
    plot_sentence_kernels(dyn, [f"t{i}" for i in range(6)], list(range(-k, k + 1)), layer=0, head=1)
    with pytest.raises(ValueError, match="one sentence"):
        dynamic_kernels(model, torch.ones(2, 3).long())


def test_errors():
    with pytest.raises(ValueError, match="variant must be one of"):
        BertConfig(variant="rope")
    with pytest.raises(ValueError, match="divisible"):
        BertConfig(hidden_dim=30, num_heads=4)
    with pytest.raises(ValueError, match="max_distance"):
        BertConfig(max_distance=0)
    with pytest.raises(ValueError, match="dropout"):
        BertConfig(dropout=1.0)
    with pytest.raises(ValueError, match="depth"):
        BertConfig(depth=0)
    model = _model("absolute")
    with pytest.raises(ValueError, match="max_length"):
        model(torch.ones(1, TINY.max_length + 1).long())
    with pytest.raises(ValueError, match=r"\(B, N\)"):
        model(torch.ones(3).long())
    with pytest.raises(ValueError, match="padding_mask must have the shape"):
        model(torch.ones(1, 4).long(), None, torch.zeros(1, 5, dtype=torch.bool))


def test_relative_terms_start_nearly_uniform():
    """BERT's N(0, 0.02) init covers the relative bias and tables, so a trained model's kernels are learned."""
    from attnconv.analysis import fixed_kernels
    torch.manual_seed(0)
    model = BertForMaskedLM(replace(BERT_SIZES["cpu-quick"], variant="composite"))
    kernels = fixed_kernels(model)  # (L, N_h, 2k+1)
    assert kernels.shape == (4, 4, 33)
    assert np.abs(kernels - 1 / 33).max() < 0.1 / 33  # within 10% of uniform
    for layer in composite_layers(model):
        assert 0.01 < layer.fixed_term.weight.std() < 0.03 and 0.01 < layer.query_term.embedding.std() < 0.03
