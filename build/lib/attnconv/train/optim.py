"""The BERT trainers' optimiser and update step, shared by pretraining and fine-tuning."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from .runs import check_finite_loss

__all__ = ["adamw", "clipped_step"]


def adamw(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW as in BERT (β = (0.9, 0.98), ε = 1e-6); biases, LayerNorm gains and other 1-D parameters get no
    weight decay."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    plain = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": plain, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98), eps=1e-6)


def clipped_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, where: str,
                 checkpoint: Path) -> float:
    """One BERT update: stop on a non-finite loss (before touching the weights), else backpropagate, clip the
    gradient norm to 1 and step. Returns the loss as a float."""
    loss_value = float(loss.detach())
    check_finite_loss(loss_value, where, checkpoint)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss_value
