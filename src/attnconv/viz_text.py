"""What the relative terms of a trained BERT learned, read as convolution kernels, and figures of them.

- :func:`fixed_kernels`: each head's relative bias b^(h)_δ, softmax-normalised over offsets δ = -k..k: the
  lightweight convolution kernel β^(h) = softmax(b^(h)) the head applies when content is ignored.
- :func:`dynamic_kernels`: the query-dependent kernels of a real sentence, softmax over the offsets of
  (X_i W_qry)·a_δ / sqrt(D_h) (+ b_δ), taps outside the sentence excluded.
- :func:`kernel_record`: both, as JSON-able data that a training run saves in ``kernels.json``.
- :func:`plot_fixed_kernels`, :func:`plot_dynamic_kernels`, :func:`plot_pretraining_curves`: the chapter's figures.
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from .lightconv import masked_softmax, tap_mask
from .models.bert import composite_layers

__all__ = ["dynamic_kernels", "fixed_kernels", "kernel_record", "plot_dynamic_kernels", "plot_fixed_kernels",
           "plot_pretraining_curves"]


@torch.no_grad()
def fixed_kernels(model: nn.Module) -> np.ndarray | None:
    """``(L, N_h, 2k+1)``: softmax over offsets of every layer's relative bias (``None`` without one)."""
    layers = [layer.fixed_term for layer in composite_layers(model) if layer.fixed_term is not None]
    if not layers:
        return None
    return torch.stack([torch.softmax(t.kernel_logits().float(), -1) for t in layers]).cpu().numpy()


@torch.no_grad()
def dynamic_kernels(model: nn.Module, input_ids: Tensor, token_type_ids: Tensor | None = None) -> np.ndarray | None:
    """``(L, N_h, N, 2k+1)``: the kernel each token of one sentence applies, in every layer with a query term.

    Args:
        model: a BERT (:class:`~attnconv.models.bert.BertForMaskedLM` or a classifier) with ``encoder``.
        input_ids: ``(1, N)`` token ids.

    Row i is softmax_δ[(X_i W_qry)·a_δ / sqrt(D_h) + b_δ] over the offsets δ whose token i + δ exists.
    """
    layers = [layer for layer in composite_layers(model) if layer.query_term is not None]
    if not layers:
        return None
    if input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ValueError(f"input_ids must be one sentence (1, N), got shape {tuple(input_ids.shape)}")
    inputs: dict[int, Tensor] = {}
    hooks = [layer.register_forward_pre_hook(lambda m, args, i=i: inputs.__setitem__(i, args[0]))
             for i, layer in enumerate(layers)]
    was_training = model.training
    model.eval()
    try:
        model.encoder(input_ids, token_type_ids)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    n = input_ids.shape[1]
    out = []
    for i, layer in enumerate(layers):
        q = layer.split_heads(layer.q_proj(inputs[i]))  # (1, N_h, N, D_h)
        band = layer.query_term.band(n, q)  # (1, N_h, N, 2k+1)
        if layer.fixed_term is not None:
            band = band + layer.fixed_term.band(n)
        dead = tap_mask(n, band.shape[-1], device=band.device)  # taps reading outside the sentence
        out.append(masked_softmax(band.masked_fill(dead, float("-inf")))[0])
    return torch.stack(out).float().cpu().numpy()


def kernel_record(model: nn.Module, tokenizer, sentence: str | None = None) -> dict[str, Any]:
    """The learned kernels as JSON-able data: ``offsets``, ``fixed`` ``(L, N_h, 2k+1)`` or ``None``, and for
    ``sentence`` (default: a built-in one) its ``tokens`` and ``dynamic`` ``(L, N_h, N, 2k+1)`` or ``None``."""
    from .data.text import BUILTIN_SENTENCE
    sentence = sentence or BUILTIN_SENTENCE
    enc = tokenizer.encode(sentence)
    device = next(model.parameters()).device
    ids = torch.tensor([enc.ids[:model.config.max_length]], device=device)
    fixed = fixed_kernels(model)
    dynamic = dynamic_kernels(model, ids)
    k = model.config.max_distance
    return {"variant": model.config.variant, "offsets": list(range(-k, k + 1)), "sentence": sentence,
            "tokens": enc.tokens[:ids.shape[1]], "fixed": None if fixed is None else np.round(fixed, 5).tolist(),
            "dynamic": None if dynamic is None else np.round(dynamic, 5).tolist()}


def plot_fixed_kernels(kernels: np.ndarray, offsets: Sequence[int], title: str = "") -> Figure:
    """One panel per layer: each head's softmax-normalised relative bias as a kernel over offsets (heads as rows).

    Args:
        kernels: ``(L, N_h, 2k+1)``.
    """
    kernels = np.asarray(kernels)
    layers = kernels.shape[0]
    fig, axes = plt.subplots(1, layers, figsize=(3.2 * layers, 2.2), squeeze=False, sharey=True)
    for layer, ax in enumerate(axes[0]):
        im = ax.imshow(kernels[layer], aspect="auto", cmap="viridis", vmin=0,
                       extent=(offsets[0] - 0.5, offsets[-1] + 0.5, kernels.shape[1] - 0.5, -0.5))
        ax.set_title(f"layer {layer + 1}", fontsize=9)
        ax.set_xlabel("offset δ = key − query")
        ax.set_yticks(range(kernels.shape[1]))
    axes[0, 0].set_ylabel("head")
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.02, label="kernel weight")
    if title:
        fig.suptitle(title, fontsize=10, y=1.04)
    return fig


def plot_dynamic_kernels(kernels: np.ndarray, tokens: Sequence[str], offsets: Sequence[int], layer: int,
                         head: int, title: str = "") -> Figure:
    """The kernel each token applies in one layer and head: tokens as rows, offsets as columns.

    Args:
        kernels: ``(L, N_h, N, 2k+1)`` from :func:`dynamic_kernels`.
    """
    kernels = np.asarray(kernels)
    rows = kernels[layer, head]
    fig, ax = plt.subplots(figsize=(6, 0.25 * len(tokens) + 1))
    ax.imshow(rows, aspect="auto", cmap="viridis", vmin=0,
              extent=(offsets[0] - 0.5, offsets[-1] + 0.5, len(tokens) - 0.5, -0.5))
    ax.set_yticks(range(len(tokens)))
    ax.set_yticklabels(tokens, fontsize=7)
    ax.set_xlabel("offset δ = key − query")
    ax.set_title(title or f"query-dependent kernels, layer {layer + 1}, head {head + 1}", fontsize=9)
    return fig


def plot_pretraining_curves(histories: dict[str, list[dict[str, Any]]], metric: str = "val_loss") -> Figure:
    """``metric`` against step, one line per run (``histories``: label -> ``metrics.jsonl`` records)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for label, records in histories.items():
        ax.plot([r["step"] for r in records], [r[metric] for r in records], marker="o", ms=3, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel(metric.replace("_", " "))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
