"""Learning-rate schedules: linear warm-up, then cosine decay (Cordonnier et al.) or linear decay (BERT)."""

from __future__ import annotations

import math

__all__ = ["set_lr", "warmup_cosine", "warmup_linear"]


def _warmup(step: int, total_steps: int, warmup_steps: int) -> float | None:
    """Check a schedule's arguments; the warm-up multiplier when ``step`` is in the warm-up, else ``None``."""
    if total_steps <= 0 or not 0 <= warmup_steps <= total_steps:
        raise ValueError(f"need 0 <= warmup_steps <= total_steps and total_steps > 0, got {warmup_steps}, {total_steps}")
    if not 0 <= step < total_steps:
        raise ValueError(f"step must be in [0, {total_steps}), got {step}")
    return (step + 1) / warmup_steps if step < warmup_steps else None


def warmup_linear(step: int, total_steps: int, warmup_steps: int) -> float:
    """Learning-rate multiplier at optimiser step ``step`` (0-based): linear rise over ``warmup_steps``
    (the first step gets ``1 / warmup_steps``), then linear decay to 0 at ``total_steps``."""
    warm = _warmup(step, total_steps, warmup_steps)
    return warm if warm is not None else (total_steps - step) / max(1, total_steps - warmup_steps)


def warmup_cosine(step: int, total_steps: int, warmup_steps: int) -> float:
    """The multiplier of the base learning rate at optimiser step ``step`` (0-based), in (0, 1].

    Steps ``0 .. warmup_steps - 1`` rise linearly to 1 (the first is ``1 / warmup_steps``, never 0); the rest
    follow half a cosine from 1 down towards 0 at ``total_steps``.
    """
    warm = _warmup(step, total_steps, warmup_steps)
    if warm is not None:
        return warm
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def set_lr(optimizer, lr: float) -> None:
    """Set the learning rate of every parameter group of ``optimizer`` (a ``torch.optim.Optimizer``)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
