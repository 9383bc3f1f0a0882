"""Batched CIFAR-10 augmentation on the training device: random crop with padding, horizontal flip, normalisation.

The standard CIFAR recipe, also used by Cordonnier et al. 2020: pad each 32x32 image by 4 black pixels, cut a
random 32x32 window out of the 40x40 result, mirror it left-right with probability 1/2, and normalise each
channel with the data set's mean and std. Here the whole batch is done with one gather on whatever device the
images live on, so a GPU never waits for a CPU data loader.

The random draws are separate from their application (:meth:`CropFlip.sample`, :meth:`CropFlip.apply`), so that
several processes can draw one global batch's parameters from the same seed and each apply its own slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from .._checks import int_at_least, positive_int

__all__ = ["CIFAR10_MEAN", "CIFAR10_STD", "CropFlip", "CropFlipParams", "normalize"]

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)


def _check_images(images: Tensor) -> None:
    if images.dim() != 4 or images.shape[-1] not in (1, 3):
        raise ValueError(f"images must be (B, H, W, C) with C = 1 or 3, got shape {tuple(images.shape)}")


def normalize(images: Tensor, mean: Sequence[float] = CIFAR10_MEAN, std: Sequence[float] = CIFAR10_STD) -> Tensor:
    """uint8 pixels ``(B, H, W, C)`` -> float32 ``(x / 255 - mean) / std`` per channel, same shape and device."""
    _check_images(images)
    if len(mean) != images.shape[-1] or len(std) != images.shape[-1]:
        raise ValueError(f"mean and std need {images.shape[-1]} values (one per channel), got {len(mean)} and {len(std)}")
    m = torch.tensor(mean, dtype=torch.float32, device=images.device)
    s = torch.tensor(std, dtype=torch.float32, device=images.device)
    return (images.to(torch.float32) / 255.0 - m) / s


@dataclass(frozen=True)
class CropFlipParams:
    """The random choices for a batch of B images.

    Attributes:
        top: ``(B,)`` long, the crop window's first row in the padded image, in ``[0, 2 * padding]``.
        left: ``(B,)`` long, its first column.
        flip: ``(B,)`` bool, mirror the crop left-right.
    """

    top: Tensor
    left: Tensor
    flip: Tensor

    def __getitem__(self, index: slice | Tensor) -> "CropFlipParams":
        """The parameters of a sub-batch (for one rank's shard of a global batch)."""
        return CropFlipParams(self.top[index], self.left[index], self.flip[index])


class CropFlip:
    """Random crop with zero padding and random horizontal flip, then normalisation, for a whole batch at once.

    Args:
        padding: pixels of black border added on every side before cropping (4 for CIFAR).
        flip: mirror half the images left-right.
        mean, std: per-channel normalisation (default: the CIFAR-10 statistics used by Cordonnier et al.).

    Deterministic given a ``torch.Generator``: the same generator state gives the same batch, on any device
    whose generator produces the same stream.
    """

    def __init__(self, padding: int = 4, flip: bool = True, mean: Sequence[float] = CIFAR10_MEAN,
                 std: Sequence[float] = CIFAR10_STD) -> None:
        self.padding = int_at_least("padding", padding, 0)
        self.flip = flip
        self.mean = tuple(mean)
        self.std = tuple(std)

    def sample(self, batch_size: int, generator: torch.Generator) -> CropFlipParams:
        """Draw the crop offsets and flips of ``batch_size`` images on ``generator``'s device."""
        positive_int("batch_size", batch_size)
        device = generator.device
        span = 2 * self.padding + 1
        top = torch.randint(span, (batch_size,), generator=generator, device=device)
        left = torch.randint(span, (batch_size,), generator=generator, device=device)
        flip = torch.rand(batch_size, generator=generator, device=device) < 0.5
        return CropFlipParams(top, left, flip & self.flip)

    def apply(self, images: Tensor, params: CropFlipParams) -> Tensor:
        """Crop, flip and normalise: uint8 ``(B, H, W, C)`` -> float32 ``(B, H, W, C)``, with one gather."""
        _check_images(images)
        b, h, w, c = images.shape
        if params.top.shape != (b,):
            raise ValueError(f"params are for {params.top.shape[0]} images but the batch has {b}")
        p = self.padding
        padded = images.new_zeros(b, h + 2 * p, w + 2 * p, c)
        padded[:, p:p + h, p:p + w] = images
        rows = params.top[:, None].to(images.device) + torch.arange(h, device=images.device)  # (B, H)
        steps = torch.arange(w, device=images.device)
        steps = torch.where(params.flip[:, None].to(images.device), w - 1 - steps, steps)  # mirrored read order
        cols = params.left[:, None].to(images.device) + steps  # (B, W)
        batch = torch.arange(b, device=images.device)[:, None, None]
        cropped = padded[batch, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
        return normalize(cropped, self.mean, self.std)

    def __call__(self, images: Tensor, generator: torch.Generator) -> Tensor:
        """:meth:`sample` then :meth:`apply` (the generator must live on the images' device)."""
        return self.apply(images, self.sample(images.shape[0], generator))

    def __repr__(self) -> str:
        return f"CropFlip(padding={self.padding}, flip={self.flip}, mean={self.mean}, std={self.std})"
