"""Turning images into grids of tokens."""

from __future__ import annotations

from torch import Tensor

from ._checks import positive_int

__all__ = ["space_to_depth"]


def space_to_depth(x: Tensor, block: int = 2) -> Tensor:
    """Fold each ``block x block`` patch of pixels into one token (Cordonnier et al. use ``block=2``).

    Args:
        x: ``(B, H, W, C)`` with H and W divisible by ``block``.

    Returns:
        ``(B, H / block, W / block, block * block * C)``; a token's channels are its patch's pixels in
        row-major order, each with its C channels.
    """
    block = positive_int("block", block)
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}: use torch.as_tensor(x)")
    if x.dim() != 4:
        raise ValueError(f"x must be (B, H, W, C), got shape {tuple(x.shape)}")
    b, h, w, c = x.shape
    if h % block or w % block:
        raise ValueError(f"x's height and width ({h}, {w}) must be divisible by block={block}")
    x = x.reshape(b, h // block, block, w // block, block, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h // block, w // block, block * block * c)
