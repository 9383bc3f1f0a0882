"""A learnable Toeplitz multiplier for attention probabilities (Luo et al. 2022, universal relative positions).

With relative positions inside the softmax, every row of the attention matrix A sums to one (A is
right-stochastic), so a constant input is mapped to the same constant whatever the positions say. Luo et al.
multiply A entry by entry with a learnable Toeplitz matrix C, C_{ij} = c_{j-i}: the product A ∘ C no longer has
rows that sum to one, and with uniform attention (A_{ij} = 1/N) it is the convolution with kernel c / N.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import int_at_least

__all__ = ["ToeplitzMultiplier"]


class ToeplitzMultiplier(nn.Module):
    """Multiply attention probabilities ``(B, N_h, N, N)`` by a Toeplitz matrix C_{ij} = c^{(h)}_{j-i} per head.

    Args:
        max_len: the longest sequence N (offsets j - i from -(max_len-1) to max_len-1).
        num_heads: N_h, one kernel c^{(h)} per head.

    Attributes:
        weight: ``(N_h, 2 max_len - 1)``; column ``δ + max_len - 1`` holds c_δ (δ = j - i). Starts at ones, where
            the module changes nothing.
    """

    def __init__(self, max_len: int, num_heads: int = 1) -> None:
        super().__init__()
        self.max_len = int_at_least("max_len", max_len, 1)
        self.num_heads = int_at_least("num_heads", num_heads, 1)
        self.weight = nn.Parameter(torch.ones(num_heads, 2 * max_len - 1))

    def matrix(self, n: int) -> Tensor:
        """C ``(N_h, n, n)`` with C[h, i, j] = c^{(h)}_{j-i}.

        Raises:
            ValueError: ``n`` < 1 or ``n`` > ``max_len``.
        """
        n = int_at_least("n", n, 1)
        if n > self.max_len:
            raise ValueError(f"n={n} is longer than max_len={self.max_len}")
        positions = torch.arange(n, device=self.weight.device)
        index = positions[None, :] - positions[:, None] + self.max_len - 1  # (n, n): j - i + max_len - 1
        return self.weight[:, index]

    def forward(self, probs: Tensor) -> Tensor:
        """``probs`` ``(B, N_h, N, N)`` (query rows, key columns) times C, entry by entry.

        Raises:
            ValueError: ``probs`` is not ``(B, N_h, N, N)`` with this module's N_h and N ≤ ``max_len``.
        """
        if not isinstance(probs, Tensor) or probs.dim() != 4 or probs.shape[1] != self.num_heads \
                or probs.shape[2] != probs.shape[3]:
            raise ValueError(f"probs must be (B, N_h={self.num_heads}, N, N), got "
                             f"{tuple(probs.shape) if isinstance(probs, Tensor) else type(probs).__name__}")
        return probs * self.matrix(probs.shape[-1]).to(probs.dtype)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, num_heads={self.num_heads}"
