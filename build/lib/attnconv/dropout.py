"""Dropout whose random numbers cost less than ``torch.nn.Dropout``'s, with the same distribution.

Dropout zeroes each element with probability p and scales the others by 1 / (1 - p). On a CPU,
``torch.nn.functional.dropout`` draws one Bernoulli variable per element through a float32 buffer, and the
drawing costs more than the rest of the operation (about a tenth of a training step of the attention models).

Here the mask comes from 16-bit integers, four to each 64-bit word of the global generator (so
``torch.manual_seed`` fixes it, as it fixes ``nn.Dropout``): an element is dropped when its integer ``u``,
uniform on [-2¹⁵, 2¹⁵), is below ``-2¹⁵ + round(p 2¹⁶)``. The drop probability is therefore ``round(p 2¹⁶) / 2¹⁶``,
within 7.7e-6 of p (0.1000061 for p = 0.1). The draws differ from ``nn.Dropout``'s; the distribution does not,
to that resolution.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._checks import probability

__all__ = ["LANE_LEVELS", "Dropout", "drop_probability", "dropout", "keep_mask"]

LANE_LEVELS = 2**16  # the resolution of p: every 16-bit lane is one uniform draw


def drop_probability(p: float) -> float:
    """The probability with which :func:`keep_mask` drops an element: p rounded to a multiple of 2⁻¹⁶."""
    return round(p * LANE_LEVELS) / LANE_LEVELS


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device: torch.device | str | None = None) -> Tensor:
    """A bool tensor of ``shape``, each element ``False`` (dropped) with probability :func:`drop_probability`
    ``(p)`` and ``True`` (kept) otherwise, independently, from the global generator of ``device``."""
    n = math.prod(shape)
    words = torch.randint(-2**63, 2**63 - 1, ((n + 3) // 4,), dtype=torch.int64, device=device)
    lanes = words.view(torch.int16)[:n]  # four independent uniform 16-bit integers per 64-bit word
    return (lanes >= -2**15 + round(p * LANE_LEVELS)).view(shape)


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``x`` with each element zeroed with probability p and the others scaled by 1 / (1 - p) (when ``training``
    and p > 0; else ``x`` itself). Like ``nn.Dropout``, the factor 1 / (1 - p) is held in ``x``'s dtype."""
    if not training or p == 0 or x.numel() == 0:
        return x
    scaled_keep = keep_mask(x.shape, p, x.device).to(x.dtype).mul_(1.0 / (1.0 - p))  # 0 or 1 / (1 - p)
    return x * scaled_keep  # the backward pass is one product too: grad * scaled_keep


class Dropout(nn.Module):
    """:func:`dropout` as a module, a drop-in for ``torch.nn.Dropout(p)`` (same distribution, no state).

    Args:
        p: the probability of zeroing an element, in [0, 1).
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = probability("p", p)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
