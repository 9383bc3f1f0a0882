"""Padding in the backward pass: a NaN or inf in a padded token reaches no valid output and no parameter gradient.

The loss reads only valid outputs, so every parameter gradient is a sum over valid tokens; a padded token that
enters a matmul unzeroed still adds 0 * NaN = NaN to a weight's gradient. Every module with a mask is tried with
the bad token at the start, in the middle and at the end.
"""

import pytest
import torch

from attnconv.models.bert import BertBlock, BertConfig, BertForMaskedLM

from .test_robustness import _call, _seq_modules

D = torch.float64
POSITIONS = {"start": 0, "middle": 4, "end": 8}
BAD = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _modules() -> dict[str, torch.nn.Module]:
    modules = _seq_modules()
    for variant in ("absolute", "composite", "conv-value-gelu", "convolution"):
        for pre_norm in (False, True):
            torch.manual_seed(0)
            config = BertConfig(vocab_size=50, hidden_dim=8, depth=1, num_heads=2, mlp_dim=16, max_length=12,
                                variant=variant, max_distance=2, dropout=0.0, pre_norm=pre_norm)
            modules[f"bert-block-{variant}{'-pre' if pre_norm else ''}"] = BertBlock(config).to(D)
    return modules


MODULES = _modules()


def _forward(name: str, module: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return module(x, mask) if name.startswith("bert-block") else _call(module, x, mask)


def _valid_loss_and_grads(name, module, x, mask):
    module.zero_grad()
    out = _forward(name, module, x, mask)
    loss = (out[~mask] ** 2).sum()
    loss.backward()
    return out, {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", list(MODULES))
def test_a_bad_padded_token_reaches_neither_outputs_nor_gradients(name):
    module = MODULES[name].train(False)
    torch.manual_seed(3)
    x = torch.randn(2, 9, 8, dtype=D)
    for where, position in POSITIONS.items():
        mask = torch.zeros(2, 9, dtype=torch.bool)
        mask[0, position] = True
        mask[1, 6:] = True  # the second sequence is right-padded, with finite padding
        clean_out, clean_grads = _valid_loss_and_grads(name, module, x, mask)
        assert clean_grads, "the loss must reach some parameter"
        for bad, value in BAD.items():
            poisoned = x.clone()
            poisoned[0, position] = value
            dirty_out, dirty_grads = _valid_loss_and_grads(name, module, poisoned, mask)
            case = f"{bad} at the {where}"
            torch.testing.assert_close(dirty_out[~mask], clean_out[~mask], rtol=0, atol=1e-12, msg=case)
            for param, grad in dirty_grads.items():
                assert torch.isfinite(grad).all(), f"{param}: NaN or inf in its gradient, {case}"
                torch.testing.assert_close(grad, clean_grads[param], rtol=0, atol=1e-12, msg=f"{param}, {case}")


def test_multiplying_by_the_mask_is_the_wrong_variant():
    """Zeroing a padded token by a product leaves 0 * NaN = NaN, and the weight's gradient turns NaN with it."""
    linear = torch.nn.Linear(4, 4).to(D)
    x = torch.randn(1, 3, 4, dtype=D)
    x[0, 2] = float("nan")
    keep = torch.tensor([[True, True, False]])
    (linear(x * keep[..., None])[keep] ** 2).sum().backward()
    assert torch.isnan(linear.weight.grad).all()
    linear.zero_grad()
    (linear(x.masked_fill(~keep[..., None], 0.0))[keep] ** 2).sum().backward()
    assert torch.isfinite(linear.weight.grad).all()


def test_bert_mlm_gradients_ignore_padding():
    """The whole model, end to end: changing what the padded ids are changes no gradient."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=40, hidden_dim=8, depth=2, num_heads=2, mlp_dim=16, max_length=10,
                        variant="composite", max_distance=2, dropout=0.0)
    model = BertForMaskedLM(config).to(D)
    ids = torch.randint(1, 40, (2, 10))
    mask = torch.zeros(2, 10, dtype=torch.bool)
    mask[0, 7:] = True
    labels = torch.full((2, 10), -100)
    labels[:, 1] = ids[:, 1]
    grads = []
    for fill in (0, 17):
        model.zero_grad()
        model.loss(ids.masked_fill(mask, fill), None, mask, labels)[0].backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    for name, grad in grads[0].items():
        if name == "encoder.token_embedding.weight":  # the padded ids' rows get their own (zero) gradient
            continue
        torch.testing.assert_close(grads[1][name], grad, rtol=0, atol=1e-12, msg=name)
